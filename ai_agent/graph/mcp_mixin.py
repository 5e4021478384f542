"""MCP servers on the Agent: configured with it, started for its runs, closed with it.

``Agent(mcp_servers=[...], mcp_config="mcp.yaml")`` adds servers to those of the settings
(``mcp_servers`` in ``config.yaml`` / ``config.toml`` / ``MAMBA_MCP_SERVERS``); a server named
like an earlier one replaces it (settings, then the files in order, then ``mcp_servers``; see
`gather_servers`).

Lifecycle: every run, resume, replay, plan served by a worker and direct ``call_tool`` is a span
that needs the servers
(`McpManager.use <ai_agent.tools.mcp.McpManager.use>`). Outside an ``async with Agent``
block the servers start when the span begins and stop when it ends; inside one they start with
the first span and stay open, sessions and server state included, until the block closes
(``aclose``). A resume in a new process starts them again.

A required server that cannot be started does not fail the run: its problem reaches the gate
before the model is asked anything (an ``AUTH`` issue for a refused key, ``MISSING_ENV`` for a
variable that is not set, ``TOOL_ERROR`` otherwise), so a person can fix it and resume; the
resume connects again. An optional server (``required: false``) only loses its tools.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Self

from ai_agent.context import ModelCaller, RunContext, ToolBox
from ai_agent.errors import UnknownThreadError
from ai_agent.graph.replay import ReplayMixin
from ai_agent.graph.tools_mixin import ToolsMixin
from ai_agent.graph.worker import PlanOutcome, WorkerMixin
from ai_agent.nodes._issues import issue
from ai_agent.nodes.gate import parse_plan
from ai_agent.state import Issue, ToolResult, UserPlan
from ai_agent.tools.mcp.manager import McpFailure, McpManager

if TYPE_CHECKING:
    from ai_agent.checkpoints.plans import PlanRecord
    from ai_agent.graph.player import ReplayMode
    from ai_agent.graph.result import RunResult

__all__ = ["McpMixin"]

# The servers that failed to start for the run being prepared in this task; _context hands them
# to the run (a context variable: concurrent runs of one Agent each see their own).
_FAILURES: ContextVar[list[McpFailure] | None] = ContextVar("ai_agent_mcp_failures", default=None)


def _issue(failure: McpFailure) -> Issue:
    return issue(failure.code, failure.message)


class McpMixin(ToolsMixin, WorkerMixin, ReplayMixin):
    """MCP servers for the Agent (see the module docstring); ``agent.mcp`` is their manager."""

    @functools.cached_property
    def mcp(self) -> McpManager:
        """The Agent's MCP servers: status, health, start/stop, adding servers at run time."""
        manager = McpManager(
            self.mcp_servers,
            registry=self.registry,
            on_activate=self._activate_mcp_tools,
            on_event=self._mcp_event,
        )
        # What a server's ${VAR} references resolved to is known once it connects.
        self.secrets.add_source(manager.secret_values)
        return manager

    def _activate_mcp_tools(self, names: list[str]) -> None:
        self.initial_tools.extend(n for n in names if n not in self.initial_tools)

    def _mcp_event(self, text: str) -> None:
        if self._on_event is not None:
            self._on_event({"type": "mcp", "detail": text})

    # Resources -------------------------------------------------------------------------------
    async def __aenter__(self) -> Self:
        agent = await super().__aenter__()
        self.mcp.hold()
        return agent

    async def aclose(self) -> None:
        """Stop the MCP servers, then close what the core opened."""
        try:
            await self.mcp.aclose()
        finally:
            await super().aclose()

    # Spans that need the servers -------------------------------------------------------------
    async def run(self, task: str, *, thread_id: str | None = None) -> RunResult:
        """Run a task until it finishes, fails, or pauses at the gate.

        The MCP servers the run needs are started first (and kept open for the whole run).

        Args:
            task: What to do, in plain language.
            thread_id: Id for the new run (default: a fresh one). It must not exist yet.

        Returns:
            The RunResult: ``completed``, ``paused`` (``result.gate`` says why and what a plan
            may do), ``failed`` (``result.error``) or ``cancelled``.

        Raises:
            ConfigError: the task is empty.
            RunError: the thread id is already taken.
            InvalidThreadIdError: the thread id breaks the grammar of thread ids (1 to 128
                characters of letters, digits, ``.``, ``_``, ``:`` and ``-``, starting with a
                letter or a digit).

        Examples:
            >>> import asyncio
            >>> from ai_agent import Agent
            >>> from ai_agent.testing import ScriptedModel
            >>> agent = Agent(model=ScriptedModel(["Hello."]), checkpoint_path=":memory:",
            ...               memory_path=None)
            >>> asyncio.run(agent.run("say hello")).final_text
            'Hello.'
        """
        async with self.mcp.use() as failures:
            token = _FAILURES.set(failures)
            try:
                return await super().run(task, thread_id=thread_id)
            finally:
                _FAILURES.reset(token)

    async def resume(
        self, thread_id: str, plan: UserPlan | Mapping[str, Any] | None = None
    ) -> RunResult:
        """Continue a run: with a plan when it is paused at the gate, without after a crash.

        Any Agent built the same way, in any process, can resume a run: everything the run
        knows is in the checkpoint database. The MCP servers are connected again, and a plan
        also activates the tools of active servers the run does not have yet (a server that
        failed when the run started and connects now, or one added since).

        Args:
            thread_id: The run to continue.
            plan: The person's answer to the gate: a `UserPlan` or a dict of its fields.
                Leave it out to continue a run that stopped mid-step (a crash).

        Returns:
            The RunResult, as for `run`.

        Raises:
            UnknownThreadError: no such thread.
            InvalidThreadIdError: the thread id breaks the grammar of thread ids.
            PlanRequiredError: it is paused at the gate and no plan was given.
            InvalidPlanError: the plan is invalid, or longer than ``max_plan_chars`` (the run
                stays paused).
            NothingPendingError: the run has finished.
            ThreadBusyError: another process is working on it.
        """
        async with self.mcp.use() as failures:
            token = _FAILURES.set(failures)
            try:
                return await super().resume(thread_id, await self._with_mcp_tools(thread_id, plan))
            finally:
                _FAILURES.reset(token)

    async def _with_mcp_tools(
        self, thread_id: str, plan: UserPlan | Mapping[str, Any] | None
    ) -> UserPlan | Mapping[str, Any] | None:
        if plan is None or not self.mcp:
            return plan
        parsed = parse_plan(plan)
        if not parsed.allow_continue:
            return parsed
        try:
            active = set((await self.get_state(thread_id)).get("active_tools", []))
        except UnknownThreadError:
            return parsed  # the resume itself says so
        wanted = [
            name
            for server in self.mcp.servers
            if server.active
            for name in self.mcp.tool_names(server.name)
            if name not in active and name not in parsed.activate_tools
        ]
        if not wanted:
            return parsed
        return parsed.model_copy(update={"activate_tools": [*parsed.activate_tools, *wanted]})

    async def serve_plan(self, plan: PlanRecord, worker: str) -> PlanOutcome | None:
        """Serve a queued plan (see ``WorkerMixin.serve_plan``), with the MCP servers started."""
        async with self.mcp.use() as failures:
            token = _FAILURES.set(failures)
            try:
                return await super().serve_plan(plan, worker)
            finally:
                _FAILURES.reset(token)

    async def replay(
        self, thread_id: str, checkpoint_id: str | None = None, mode: ReplayMode = "recorded"
    ) -> RunResult:
        """Re-execute a stored run into a new thread and return the new thread's RunResult.

        The MCP servers are started so their tools' schemas are those the model saw; a server
        that fails only loses its tools.

        Args:
            thread_id: The run to replay.
            checkpoint_id: Where to start (``recorded``, ``live``; default: the beginning), or
                where to switch to live (``live-after``; default: the original's last
                checkpoint).
            mode: ``"recorded"`` (answers from the recording: no model server, no tool runs),
                ``"live"`` (model and tools called again) or ``"live-after"``.

        Returns:
            The replay's RunResult. When the recording could not answer a call, the replay
            stops there and ``result.divergence`` says where and how the new call differs.

        Raises:
            ConfigError: an unknown mode.
            UnknownThreadError: no such run.
            UnknownCheckpointError: no such checkpoint in that run.
        """
        async with self.mcp.use():
            return await super().replay(thread_id, checkpoint_id, mode)

    async def call_tool(
        self, name: str, args: dict[str, Any] | None = None, *, approved: bool = False
    ) -> ToolResult:
        """Run one tool directly, under the same policy a run applies.

        An MCP tool starts its server first.

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
        """
        async with self.mcp.use():
            return await super().call_tool(name, args, approved=approved)

    async def _context(
        self, thread_id: str, *, model: ModelCaller | None = None, tools: ToolBox | None = None
    ) -> RunContext:
        context = await super()._context(thread_id, model=model, tools=tools)
        failures = [f for f in _FAILURES.get() or [] if f.required]
        if model is not None or not failures:
            return context  # a replay brings its own model and gets no start-up issues
        pending = [_issue(f) for f in failures]

        def take_issues() -> list[Issue]:
            taken = list(pending)
            pending.clear()
            return taken

        return dataclasses.replace(context, take_issues=take_issues)
