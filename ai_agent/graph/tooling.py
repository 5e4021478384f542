"""AgentTools: the Agent's tools, one collaborator with one job.

It holds the registry composed of the Agent's toolsets (the built-in tools, the user's tools
and toolsets, each MCP server, the generated tools), the names of the tools new runs start
with, the MCP servers (``agent.mcp``) and the toolsmaker (``agent.toolsmaker``), and it opens
the toolsets for every span that may call a tool: ``async with tools.session() as issues``
around a run, a resume, a replay, a plan served by a worker and a direct call. Inside an
``async with Agent`` block the toolsets stay open across spans (`AgentTools.hold`); outside
one, each span opens and closes them. The issues a session yields (a required MCP server that
could not start) go to the run explicitly, as an argument of the Agent's ``_context``: the
first draft raises them at the gate before the model is asked anything.

Examples:
    >>> import asyncio
    >>> from ai_agent import AgentSettings
    >>> from ai_agent.context import RunPolicy
    >>> from ai_agent.graph.secrets import settings_secrets
    >>> settings = AgentSettings(_env_file=None)
    >>> tools = AgentTools(["calculator"], settings=settings, policy=RunPolicy(),
    ...                    secrets=settings_secrets(settings))
    >>> tools.initial
    ['calculator']
    >>> async def span():
    ...     async with tools.session() as issues:
    ...         return issues
    >>> asyncio.run(span())
    []
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable, Collection, Sequence
from typing import Any

from ai_agent.config import AgentSettings, McpServerConfig
from ai_agent.context import Event, RunPolicy
from ai_agent.observability.redaction import SecretValues
from ai_agent.resilience import RetryPolicy
from ai_agent.state import Issue, UserPlan
from ai_agent.tools.building import build_tool_set
from ai_agent.tools.builtin.protected import ProtectedPaths
from ai_agent.tools.mcp.manager import McpManager

__all__ = ["AgentTools"]


class AgentTools:
    """The Agent's tools (see the module docstring).

    Args:
        tools: ``Agent(tools=...)``: catalog names, tools in any form, toolsets.
        settings: The Agent's settings (``tool_config``, ``retry``).
        policy: The Agent's run policy (approvals, unattended mode, working directory).
        secrets: The Agent's secret values; the tools' secrets are added to them.
        workdir: The working directory of the tools.
        protected: The engine's own state, out of reach of every tool.
        servers: The MCP servers.
        on_event: The Agent's ``on_event`` callback.
    """

    def __init__(
        self,
        tools: Any,
        *,
        settings: AgentSettings,
        policy: RunPolicy,
        secrets: SecretValues,
        workdir: str | os.PathLike[str] = ".",
        protected: ProtectedPaths | None = None,
        servers: Sequence[McpServerConfig] = (),
        on_event: Callable[[Event], None] | None = None,
    ) -> None:
        self.settings = settings
        self.policy = policy
        self.secrets = secrets
        self._on_event = on_event
        self.registry, self.initial = build_tool_set(
            tools, config=settings.tool_config, workdir=workdir, protected=protected
        )
        """The catalog; `initial`: the names of the tools new runs start with."""
        self.registry.retry = RetryPolicy.for_tools(settings.retry)
        # Read at each use: a key exported after a pause, or a tool registered later, counts.
        secrets.add_source(lambda: self.registry.snapshot().secret_env_values())
        self.mcp = McpManager(
            servers, registry=self.registry, on_activate=self.start_with, on_event=self._mcp_event
        )
        # What a server's ${VAR} references resolved to is known once it connects.
        secrets.add_source(self.mcp.secret_values)

    def start_with(self, names: Collection[str]) -> None:
        """Make tools active in the runs started from now on."""
        self.initial.extend(n for n in names if n not in self.initial)

    def _mcp_event(self, text: str) -> None:
        if self._on_event is not None:
            self._on_event({"type": "mcp", "detail": text})

    # Lifecycle -------------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[list[Issue]]:
        """A span that may call tools: every toolset open for it; yields their issues.

        Only the issues of required MCP servers that could not start are yielded.
        """
        async with self.registry.session() as issues:
            yield issues

    def hold(self) -> None:
        """Keep the toolsets open between spans until `aclose` (an ``async with Agent``)."""
        self.registry.hold()

    async def aclose(self) -> None:
        """Close the toolsets, and stop MCP servers started outside any span."""
        try:
            await self.registry.aclose()
        finally:
            await self.mcp.aclose()

    # Plans -----------------------------------------------------------------------------------
    def with_new_tools(self, plan: UserPlan, active: Collection[str]) -> UserPlan:
        """A plan that continues a run also activates the tools of active MCP servers it lacks.

        A server that failed when the run started and connects now, or one added since.
        """
        if not plan.allow_continue or not self.mcp:
            return plan
        wanted = [
            name
            for server in self.mcp.servers
            if server.active
            for name in self.mcp.tool_names(server.name)
            if name not in active and name not in plan.activate_tools
        ]
        if not wanted:
            return plan
        return plan.model_copy(update={"activate_tools": [*plan.activate_tools, *wanted]})
