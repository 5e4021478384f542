"""ToolMethods: the Agent's tool management, direct calls and toolsmaker methods.

Each ``Agent`` method of these names is this class's (``agent.register_tool`` is
`ToolMethods.register_tool`); they work on the Agent's tools (`ai_agent.graph.tooling.AgentTools`:
the registry, the tools new runs start with, the toolsmaker) and read clipped tool outputs from
the run store.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ai_agent.checkpoints.store import check_thread_id
from ai_agent.errors import UnknownOutputError
from ai_agent.graph.database import RunDatabase
from ai_agent.graph.tooling import AgentTools, ToolListing
from ai_agent.state import ToolResult
from ai_agent.tools.spec import ToolSpec

if TYPE_CHECKING:
    from ai_agent.tools.maker import (
        BuildRecord,
        BuildResult,
        ToolBuildRequest,
        ToolsmakerRegistry,
    )

__all__ = ["ToolMethods"]


class ToolMethods:
    """The Agent's methods over its tools (see the module docstring).

    Args:
        tools: The Agent's tools.
        database: The run store that keeps clipped tool outputs.
    """

    def __init__(self, tools: AgentTools, database: RunDatabase) -> None:
        self._tools = tools
        self._db = database

    def register_tool(
        self, tool: Any, *, activate: bool = True, replace: bool = False, **options: Any
    ) -> ToolSpec:
        """Add a tool to the catalog (any supported form); active in new runs by default.

        Args:
            tool: A ToolSpec, ``@tool`` function, BaseTool, pydantic model with ``__call__``,
                LangChain tool, or typed function with a docstring.
            activate: Make it active in runs started from now on. Runs already going see it in
                their catalog from their next cycle; a plan can activate it there.
            replace: Replace a tool of the same name.
            **options: ``name``, ``namespace``, ``category``, ``group``, ``description``,
                ``requires_env``, ``timeout``.

        Raises:
            ToolRegistrationError: the tool is invalid or its name is taken.

        Examples:
            >>> from ai_agent import Agent, tool
            >>> @tool(category="read_only")
            ... def shout(text: str) -> str:
            ...     '''Upper-case a text.'''
            ...     return text.upper()
            >>> agent = Agent(checkpoint_path=":memory:", memory_path=None)
            >>> agent.register_tool(shout, namespace="fun").name
            'fun.shout'
        """
        return self._tools.register(tool, activate=activate, replace=replace, **options)

    def unregister_tool(self, name: str) -> ToolSpec:
        """Remove a tool from the catalog (and from the tools new runs start with)."""
        return self._tools.unregister(name)

    def disable_tools(self, *selectors: str) -> list[str]:
        """Hide tools (names, groups, namespaces, globs) from runs without removing them."""
        return self._tools.registry.disable(list(selectors))

    def enable_tools(self, *selectors: str) -> list[str]:
        """Show disabled tools to runs again."""
        return self._tools.registry.enable(list(selectors))

    def tool_groups(self) -> dict[str, list[str]]:
        """Group name -> tool names."""
        return self._tools.registry.groups()

    def list_tools(self, *, include_disabled: bool = True) -> list[ToolListing]:
        """The catalog with each tool's category, effective policy and state, sorted by name."""
        return self._tools.listing(include_disabled=include_disabled)

    async def call_tool(
        self, name: str, args: dict[str, Any] | None = None, *, approved: bool = False
    ) -> ToolResult:
        """Run one tool directly, under the same policy a run applies.

        The tools are opened for the call (an MCP tool starts its server first). Where a run
        would wait for a person, the call raises instead; see `ai_agent.graph.tooling`.

        Args:
            name: The tool's name (or its wire name).
            args: Its arguments.
            approved: A person approved this call (needed where a run would wait for one).

        Returns:
            The full ToolResult (never clipped), with ``execution_time_ms`` and ``summary``.

        Raises:
            UnknownToolError: no enabled tool has this name; nothing runs.
            ToolPolicyViolation: the category's policy is ``deny``.
            ApprovalRequiredError: the policy (or the tool, for this call) needs a person and
                ``approved`` is False outside unattended mode. The message shows the preview.

        Examples:
            >>> import asyncio
            >>> from ai_agent import Agent
            >>> agent = Agent(checkpoint_path=":memory:", memory_path=None)
            >>> result = asyncio.run(agent.call_tool("calculator", {"expression": "19.5% of 349"}))
            >>> result["content"], result["summary"]
            ('68.055', 'calculator: 68.055')
        """
        return await self._tools.call(name, args, approved=approved)

    async def tool_output(self, thread_id: str, ref: str) -> str:
        """The full text of a tool output that was clipped in a run (``out-<iter>-<call id>``).

        Raises:
            UnknownOutputError: the run kept no output under that reference.
        """
        record = await self._db.store.get_output(check_thread_id(thread_id), ref)
        if record is None:
            kept = await self._db.store.list_outputs(thread_id)
            listed = ", ".join(kept) if kept else "none"
            raise UnknownOutputError(
                f"run {thread_id} kept no output {ref!r}; kept outputs: {listed}"
            )
        return record["content"]

    # The toolsmaker (method names from its spec; see docs/toolsmaker.md) ----------------------
    @property
    def toolsmaker(self) -> ToolsmakerRegistry:
        """The `ai_agent.tools.maker.ToolsmakerRegistry` over this Agent's registry.

        Its options, ``toolsmaker_dir`` and ``toolsmaker_audit_path``, are arguments of the
        constructor. Nothing of it is imported before it is needed.
        """
        return self._tools.toolsmaker

    def set_tools(self, tools: Iterable[Any] | str) -> list[str]:
        """Replace the tools new runs start with.

        Args:
            tools: Catalog names, groups, namespaces or globs (a list, or one comma-separated
                string), and/or tools in any supported form (registered first, replacing a
                tool of the same name).

        Returns:
            The names new runs start with, in order.

        Raises:
            ConfigError: an unknown name, or an object that is not a tool.
        """
        return self._tools.set_initial(tools)

    def add_tool(self, tool: Any, **options: Any) -> ToolSpec:
        """Register a tool and make it active in new runs (``register_tool`` with activate).

        Args:
            tool: A tool in any supported form.
            **options: ``register_tool``'s options (``name``, ``namespace``, ``replace``...).

        Returns:
            Its ToolSpec.

        Raises:
            ToolRegistrationError: an invalid tool, or a name taken (without ``replace``).
        """
        return self.register_tool(tool, activate=True, **options)

    def remove_tool(self, name: str) -> ToolSpec:
        """Remove a tool from the catalog (``unregister_tool``).

        For a generated tool this only affects this Agent: its version stays active on disk
        (``rollback`` or a newer version changes that) and is loaded again by the next Agent.

        Args:
            name: The tool's name.

        Returns:
            The ToolSpec that was removed.

        Raises:
            UnknownToolError: no tool has this name.
        """
        return self.unregister_tool(name)

    def create_tool_build_request_from_intent(self, intent: Mapping[str, Any]) -> ToolBuildRequest:
        """A build request from a structured intent.

        Args:
            intent: ``name``, ``purpose``, ``inputs``, ``outputs``, ``capabilities``,
                ``allowed_paths``, ``allowed_domains``, ``secrets``, ``risk`` and optionally
                ``code``.

        Returns:
            The `ai_agent.tools.maker.ToolBuildRequest`.

        Raises:
            ToolBuildError: not a mapping, unknown fields, or no name or purpose.
        """
        return self.toolsmaker.request_from_intent(intent)

    def build_dynamic_tool(self, request: ToolBuildRequest) -> BuildResult:
        """Build, validate and prepare a tool version for review.

        Args:
            request: What to build.

        Returns:
            The result: ``approval_required`` with the review artifact when it passed
            validation (an identical earlier build is reused), ``draft`` when it did not.

        Raises:
            ToolBuildError: a name that cannot name files.
        """
        return self.toolsmaker.build(request)

    def build_dynamic_tool_from_intent(self, intent: Mapping[str, Any]) -> BuildResult:
        """`create_tool_build_request_from_intent` then `build_dynamic_tool`.

        Args:
            intent: The structured intent.

        Returns:
            The build's result.

        Raises:
            ToolBuildError: not an intent.

        Examples:
            >>> import tempfile, os
            >>> from ai_agent import Agent
            >>> d = tempfile.mkdtemp()
            >>> agent = Agent(checkpoint_path=":memory:", memory_path=None, workdir=d,
            ...               toolsmaker_dir=os.path.join(d, "tm"))
            >>> built = agent.build_dynamic_tool_from_intent(
            ...     {"name": "shout", "purpose": "Echo a text.", "inputs": {"text": "string"}})
            >>> built.status.value
            'approval_required'
            >>> _ = agent.approve_dynamic_tool("shout", 1)
            >>> agent.activate_tool_version("shout", 1).name
            'shout'
            >>> "shout" in agent.initial_tools
            True
        """
        return self.toolsmaker.build_from_intent(intent)

    def approve_dynamic_tool(self, name: str, version: int) -> BuildRecord:
        """A person approved this version (``approval_required -> approved``).

        Args:
            name: The tool.
            version: The version.

        Returns:
            The updated build record.

        Raises:
            UnknownToolError: no such version.
            ToolTransitionError: it is not waiting for approval.
        """
        return self.toolsmaker.approve(name, version)

    def reject_dynamic_tool(self, name: str, version: int, reason: str = "") -> BuildRecord:
        """A person rejected this version (``approval_required -> rejected``, final).

        Args:
            name: The tool.
            version: The version.
            reason: Why (kept in the record and the audit log).

        Returns:
            The updated build record.

        Raises:
            UnknownToolError: no such version.
            ToolTransitionError: it is not waiting for approval.
        """
        return self.toolsmaker.reject(name, version, reason=reason or "rejected")

    def activate_tool_version(
        self, name: str, version: int, max_output_chars: int | None = None
    ) -> ToolSpec:
        """Activate an approved version: registered now, callable from runs' next cycle.

        It becomes active in new runs; a run already going gets it in its catalog from its next
        cycle (a plan can activate it there).

        Args:
            name: The tool.
            version: An approved version.
            max_output_chars: Cap of its result text (None: the Agent's ``max_output_chars``).

        Returns:
            Its runtime ToolSpec.

        Raises:
            ToolTransitionError: the version is not approved.
            ToolPolicyViolation: its code changed on disk since the review.
            ToolBuildError: a static tool holds the name.
        """
        return self._tools.activate_version(name, version, max_output_chars)

    def rollback_tool(self, name: str, version: int | None = None) -> ToolSpec:
        """Make an earlier activated version of a generated tool active again.

        Args:
            name: The tool.
            version: The version to return to (None: the one activated before the active one).

        Returns:
            That version's runtime ToolSpec (active in new runs).

        Raises:
            ToolTransitionError: nothing to roll back to.
        """
        return self._tools.rollback(name, version)
