"""The run archive: everything about stored runs, one object with explicit dependencies.

`RunArchive` lists runs, reads their state and result, browses and forks their checkpoints,
inspects, exports (Mermaid, one HTML page), prunes and replays them, and keeps the plan queue
workers serve. The Agent holds one (``agent.archive``; its methods of the same names delegate to
it); the command line opens one on its own (`RunArchive.at`). None ``thread_id``: the last run.

Reading needs only the run store and the checkpointer (`ai_agent.graph.database`): this module
imports neither the model stack nor the tokenizer. What needs more is handed in: the tool
catalog, the Agent's run policy, its token counter, and the `Runner` that replays and queued
plans are driven with, each in a span of the Agent's tools (an archive opened on its own has
none, and refuses to drive runs).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from ai_agent.errors import RunError, UnknownThreadError
from ai_agent.graph.archive_plans import ArchivePlans
from ai_agent.graph.database import RunDatabase
from ai_agent.graph.history import HistoryEntry, fork_run, run_blocking, values_of
from ai_agent.graph.inspection import (
    AgentStateView,
    agent_state_view,
    message_view,
    recorded_system_prompt,
)
from ai_agent.graph.plain_reads import latest_snapshot, read_history
from ai_agent.graph.result import RunResult, result_of, with_run_row
from ai_agent.graph.run_summary import read_summaries
from ai_agent.graph.timeline import (
    ExecutionTrace,
    TimelineRow,
    execution_trace,
    timeline_rows,
    up_to,
)
from ai_agent.graph.usage_report import (
    ContextState,
    CostEstimate,
    CostRates,
    TokenBreakdown,
    TokenUsage,
    UsagePoint,
    context_view,
    cost_view,
    token_breakdown_view,
    token_usage_view,
    usage_points,
)
from ai_agent.state import Message, RunState, UsageRecord

if TYPE_CHECKING:
    from langgraph.types import StateSnapshot

    from ai_agent.checkpoints import RunRecord, RunStoreProtocol
    from ai_agent.config import AgentSettings
    from ai_agent.context import RunPolicy, ToolInfo
    from ai_agent.graph.driving import Runner
    from ai_agent.graph.player import ModelIdentity, ReplayMode
    from ai_agent.graph.stored_state import StoredSnapshot

    Snapshot = StateSnapshot | StoredSnapshot
    from ai_agent.graph.prune import PruneReport
    from ai_agent.graph.run_summary import Summaries
    from ai_agent.tokens import TokenCounter
    from ai_agent.tools.registry import ToolRegistry

__all__ = ["RunArchive"]

T = TypeVar("T")


class RunArchive(ArchivePlans):
    """Everything about stored runs (see the module docstring).

    Args:
        database: The run store and the checkpointer.
        settings: The settings the views read: the context window and compaction sizes, the
            budget and its rates, the tokenizer. None: loaded (env and files) when first read,
            so listing runs and plans reads none.
        catalog: The tool catalog (tool descriptions and schemas; a replay offers them to the
            model). Default: an empty one, so tools are known by name only.
        policy: The run policy of the Agent (its system prompt is the default of
            ``get_system_prompt``; a recorded replay turns its memory off). Default: the
            settings' system prompt.
        initial_tools: The tools new runs start with (``get_active_tools`` before any run).
        runner: Drives replays and queued plans; without one they raise RunError.
        counter: Gives the token counter (default: one from the settings, made when needed).
        compaction: Gives the live compactor's trigger and target, once a run made one.
    """

    def __init__(
        self,
        database: RunDatabase,
        settings: AgentSettings | None = None,
        *,
        catalog: ToolRegistry | None = None,
        policy: RunPolicy | None = None,
        initial_tools: Sequence[str] = (),
        runner: Runner | None = None,
        counter: Callable[[], TokenCounter] | None = None,
        compaction: Callable[[], tuple[int, int] | None] | None = None,
    ) -> None:
        self.database = database
        self._settings = settings
        self._catalog = catalog
        self._policy = policy
        self.initial_tools = initial_tools
        self.runner = runner
        self.last_thread: str | None = None
        self._counter = counter or functools.cache(lambda: _settings_counter(self.settings))
        self._compaction = compaction or (lambda: None)

    @classmethod
    def at(cls, location: str | Path | None, settings: AgentSettings | None = None) -> Self:
        """The archive of a database, opened on its own: for reading and maintaining runs.

        ``location`` is a SQLite path or a ``postgresql://`` URL; None: the settings'
        ``checkpoint_url``, then their ``checkpoint_path``. Without ``settings``, they are
        loaded when first needed.

        Examples:
            >>> from ai_agent import AgentSettings
            >>> archive = RunArchive.at("runs.sqlite", AgentSettings(_env_file=None))
            >>> archive.database.describe(), archive.database.exists()
            ('runs.sqlite', False)
        """
        return cls(RunDatabase.at(location, settings), settings)

    async def __aenter__(self) -> Self:
        await self.database.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the checkpointer and the run store (they reopen on the next use)."""
        await self.database.aclose()

    @property
    def settings(self) -> AgentSettings:
        """The settings the views read (loaded from the environment and files when not given)."""
        if self._settings is None:
            from ai_agent.config import load_settings

            self._settings = load_settings()
        return self._settings

    @property
    def policy(self) -> RunPolicy:
        """The Agent's run policy; for an archive alone, the settings' system prompt."""
        if self._policy is None:
            # The run context's module: only when asked (a read of a stored run needs none).
            from ai_agent.context import RunPolicy

            self._policy = RunPolicy(system_prompt=self.settings.system_prompt)
        return self._policy

    @property
    def catalog(self) -> ToolRegistry:
        """The tool catalog (an empty one, made when first needed, for an archive alone)."""
        if self._catalog is None:
            from ai_agent.tools.registry import ToolRegistry  # the tools: only when asked

            self._catalog = ToolRegistry()
        return self._catalog

    @property
    def store(self) -> RunStoreProtocol:
        """The run store (runs, leases, journal, recorded calls, plans)."""
        return self.database.store

    # Runs -----------------------------------------------------------------------------------
    async def list_runs(
        self, *, limit: int | None = 20, status: str | None = None
    ) -> list[RunRecord]:
        """The runs, most recently updated first (only those of one status when given)."""
        return await self.store.list_runs(limit=limit, status=status)

    async def run_summaries(self, records: Sequence[RunRecord]) -> Summaries:
        """Stop reason, model, tokens, cost of these runs: one query, one graph session at most."""
        return await read_summaries(self.database, records)

    async def get_state(self, thread_id: str) -> RunState:
        """The latest checkpointed state of a run."""
        return cast(RunState, (await self._snapshot(thread_id)).values)

    async def get_result(self, thread_id: str) -> RunResult:
        """The RunResult of a stored run, as it stands now."""
        return (await self.get_outcome(thread_id))[0]

    async def get_outcome(self, thread_id: str) -> tuple[RunResult, RunState]:
        """The RunResult and the latest state of a run, from one read of its latest checkpoint."""
        snapshot = await self._snapshot(thread_id)
        output = None if self._policy is None else self._policy.output  # alone: plain data
        result = result_of(thread_id, snapshot, output)
        state = cast(RunState, snapshot.values)  # as get_state gives it
        return with_run_row(result, await self.store.get_run(thread_id)), state

    # History and forks (graph/history.py) -----------------------------------------------------
    def history(self, thread_id: str) -> list[HistoryEntry]:
        """The run's checkpoints, oldest first: id, parent, step, stage, time and what changed.

        Blocking; safe anywhere (it reads through its own connection, on a worker thread when
        this one runs an event loop).

        Raises:
            UnknownThreadError: the thread has no checkpoints.

        Examples:
            >>> import asyncio, tempfile, os
            >>> from ai_agent import Agent
            >>> from ai_agent.testing import ScriptedModel
            >>> d = tempfile.mkdtemp()
            >>> agent = Agent(model=ScriptedModel(["hi"]), memory_path=None,
            ...               checkpoint_path=os.path.join(d, "c.sqlite"))
            >>> res = agent.run_sync("greet")
            >>> [(e.step, e.stage) for e in agent.history(res.thread_id)][:4]
            [(-1, 'input'), (0, 'start'), (1, 'recall'), (2, 'draft')]
        """
        return run_blocking(lambda: read_history(self.database, thread_id, private=True))

    async def ahistory(self, thread_id: str) -> list[HistoryEntry]:
        """``history`` for async code."""
        return await read_history(self.database, thread_id)

    def fork(
        self, thread_id: str, checkpoint_id: str, update: Mapping[str, Any] | None = None
    ) -> str:
        """Copy a run up to a checkpoint into a new thread; return the new thread's id.

        Blocking; in async code use ``await afork(...)``. See `afork`.

        Raises:
            RunError: called on a thread that runs an event loop.
        """
        import asyncio

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self._closing(self.afork(thread_id, checkpoint_id, update)))
        raise RunError("fork() blocks; in async code use `await agent.afork(...)`")

    async def afork(
        self, thread_id: str, checkpoint_id: str, update: Mapping[str, Any] | None = None
    ) -> str:
        """Copy a run up to a checkpoint into a new thread, ready to resume (the original stays).

        The fork has the run's state as it was at that checkpoint: its messages, its tools, and
        its grants on record (a fork from before an approval does not have it; a grant from
        before the fork point is bound to the original run and covers nothing in the fork, so
        a person is asked again). ``resume(new_id)`` continues it from there; a fork at a paused
        gate is paused, so ``resume(new_id, plan)`` answers it with another plan.

        Args:
            thread_id: The run to fork.
            checkpoint_id: Where (``history`` lists the ids).
            update: State values applied to the fork as if the stage that wrote the checkpoint
                had returned them (through the state's reducers: a list of messages is
                appended; ``{"replace": [...]}`` replaces).

        Raises:
            UnknownThreadError / UnknownCheckpointError: no such run or checkpoint.
            RunError: ``update`` was given for a paused gate (resume the fork with a plan
                instead) or for the run's input, or it names a key the run state lacks or a
                value not of its key's type (``{"iteration": "abc"}``): refused before
                anything is copied (``ai_agent.graph.state_edits``).
        """
        return await fork_run(self.database, thread_id, checkpoint_id, update, origin="fork")

    # The run's state and conversation (graph/inspection.py) ---------------------------------
    async def get_system_prompt(self, thread_id: str | None = None) -> str:
        """The system prompt: as last sent in that run when it was recorded, else this Agent's.

        The prompt is never stored in state (it comes from the Agent on every draft), so for a
        stored run the recorded request is the witness of what the model was told.
        """
        if thread_id is None and self.last_thread is None:
            return self.policy.system_prompt
        calls = await self.store.model_calls(self._thread(thread_id))
        if not calls:
            return self.policy.system_prompt
        return recorded_system_prompt(await self.store.model_request(calls[-1]["seq"]))

    async def get_message_history(
        self,
        thread_id: str | None = None,
        *,
        roles: Sequence[str] | None = None,
        last: int | None = None,
        include_system: bool = False,
    ) -> list[Message]:
        """The conversation, oldest first.

        Args:
            thread_id: The run (default: this Agent's last).
            roles: Only messages with these roles (``user``, ``assistant``, ``tool``, ``system``).
            last: Only the last N (after filtering).
            include_system: Put the system prompt first, as the model sees it.
        """
        thread, state, _ = await self._state(thread_id)
        prompt = await self.get_system_prompt(thread) if include_system else None
        return message_view(state.get("messages", []), prompt, roles=roles, last=last)

    async def get_active_tools(self, thread_id: str | None = None) -> list[ToolInfo]:
        """The tools the model is offered now (before any run: the Agent's initial tools)."""
        if thread_id is None and self.last_thread is None:
            names = list(self.initial_tools)
        else:
            names = list((await self._state(thread_id))[1].get("active_tools", []))
        return [info for name in names if (info := self.catalog.info(name)) is not None]

    async def get_agent_state(self, thread_id: str | None = None) -> AgentStateView:
        """Where the run stands: status, next stage, what it waits for."""
        thread, state, snapshot = await self._state(thread_id)
        return agent_state_view(thread, state, snapshot, await self.store.get_run(thread))

    # Tokens and costs (graph/usage_report.py) -----------------------------------------------
    async def get_context_state(self, thread_id: str | None = None) -> ContextState:
        """The messages the next draft would send, their token counts, and the compactions."""
        thread, state, _ = await self._state(thread_id)
        sizes = self.settings.context
        window = self._compaction() or (sizes.trigger_threshold_tokens, sizes.target_tokens)
        return context_view(
            thread,
            state,
            self._counter(),
            system_prompt=await self.get_system_prompt(thread),
            tools=self.catalog.schemas(list(state.get("active_tools", []))),
            trigger=window[0],
            target=window[1],
            window=self.settings.model_backend.context_window,
        )

    async def get_token_usage(self, thread_id: str | None = None) -> TokenUsage:
        """The run's token totals (server figures, estimates where it gave none) and cost."""
        return token_usage_view((await self._state(thread_id))[1])

    async def get_token_breakdown(self, thread_id: str | None = None) -> TokenBreakdown:
        """Tokens of the current context by component, and the tokens attributed to each tool.

        Components: the system prompt, messages by role and kind, tool schemas, tool results
        by tool.
        """
        thread, state, _ = await self._state(thread_id)
        return token_breakdown_view(
            thread,
            state,
            self._counter(),
            system_prompt=await self.get_system_prompt(thread),
            tools=self.catalog.schemas(list(state.get("active_tools", []))),
        )

    async def get_usage_history(self, thread_id: str | None = None) -> list[UsagePoint]:
        """Token usage per model request, in time order, with running totals.

        Each point joins the request's recorded call (time, step, latency, replayed) with its
        usage record (server or estimated counts, estimate error, cost, tools).
        """
        thread = self._thread(thread_id)
        calls = [c for c in await self.store.model_calls(thread) if c["error"] is None]
        records: list[UsageRecord] = []
        if thread_id is not None or self.last_thread is not None:
            with contextlib.suppress(UnknownThreadError):
                records = list((await self._state(thread))[1].get("usage_log") or [])
        return usage_points(calls, records)

    async def get_cost_estimate(
        self, thread_id: str | None = None, *, rates: CostRates | None = None
    ) -> CostEstimate:
        """The run's cost, at ``rates`` when given, else each model's (``BudgetConfig.rates``)."""
        thread = self._thread(thread_id)
        points = await self.get_usage_history(thread)
        state = (await self._state(thread))[1]
        return cost_view(thread, points, state, self.settings.budget, rates)

    # The timeline (graph/timeline.py) ---------------------------------------------------------
    async def timeline(
        self, thread_id: str | None = None, checkpoint_id: str | None = None
    ) -> list[TimelineRow]:
        """The run's trace as a timeline, up to ``checkpoint_id`` when given.

        Each row: step, stage, duration, tokens, tool, status, gate score.
        """
        thread = self._thread(thread_id)
        entries = await self.ahistory(thread)
        if checkpoint_id is not None:
            entries = up_to(entries, checkpoint_id, thread)
            trace = [line for entry in entries for line in entry.trace]
        else:
            trace = list((await self._state(thread))[1].get("trace", []))
        return timeline_rows(trace, entries, await self.store.model_calls(thread))

    async def get_execution_trace(self, thread_id: str | None = None) -> ExecutionTrace:
        """The timeline and every tool call with its arguments and result."""
        thread, state, _ = await self._state(thread_id)
        recorded = await self.store.tool_calls(thread)
        return execution_trace(thread, state, recorded, await self.timeline(thread))

    # Pictures (graph/export.py) ---------------------------------------------------------------
    async def run_report(self, thread_id: str | None = None) -> dict[str, Any]:
        """Everything the HTML page shows about a run, as JSON-ready data."""
        from ai_agent.graph.export import run_report

        thread, state, snapshot = await self._state(thread_id)
        return await run_report(self, thread, state, snapshot)

    async def export_html(self, thread_id: str | None, path: str | Path) -> Path:
        """Write the run's page to ``path`` (one file, nothing fetched when it is opened)."""
        from ai_agent.graph.export import write_page

        return await write_page(Path(path), await self.run_report(thread_id))

    # Maintenance (graph/prune.py) -------------------------------------------------------------
    async def prune(
        self,
        thread_id: str | None = None,
        *,
        older_than_days: float | None = None,
        keep_last: int | None = None,
        vacuum: bool = True,
    ) -> PruneReport:
        """Prune one run, the runs not updated for some days, or all but the latest N runs.

        Args:
            thread_id: Prune this run.
            older_than_days: Prune the runs last updated more than this many days ago.
            keep_last: Prune all but the N most recently updated runs.
            vacuum: Reclaim the space afterwards (SQLite ``VACUUM``).

        Raises:
            ConfigError: not exactly one of the three was given, or a negative number.
            UnknownThreadError: ``thread_id`` names no run.
        """
        from ai_agent.graph.prune import prune_runs

        return await prune_runs(
            self.database,
            thread_id,
            older_than_days=older_than_days,
            keep_last=keep_last,
            vacuum=vacuum,
        )

    # Replay (graph/replay.py) -----------------------------------------------------------------
    async def replay(
        self,
        thread_id: str,
        checkpoint_id: str | None = None,
        mode: ReplayMode = "recorded",
        *,
        model_identity: ModelIdentity = "recorded",
    ) -> RunResult:
        """Re-execute a stored run into a new thread and return the new thread's RunResult.

        Args:
            thread_id: The run to replay.
            checkpoint_id: Where to start (``recorded``, ``live``; default: the beginning), or
                where to switch to live (``live-after``; default: the original's last
                checkpoint).
            mode: ``"recorded"`` (answers from the recording: no model server, no tool runs),
                ``"live"`` (model and tools called again) or ``"live-after"``.
            model_identity: Which model the recorded requests are compared as coming from:
                ``"recorded"`` (the original's, as recorded with its first model call: an
                offline replay needs no model of its own) or ``"agent"`` (this Agent's: a
                replay with another model, or other generation parameters, diverges at its
                first model call, and the divergence shows the parameters that differ).

        Returns:
            The replay's RunResult. When the recording could not answer a call, the replay
            stops there (status ``failed``, or ``paused`` at a gate the original did not stop
            at) and ``result.divergence`` says where and how the new call differs.

        Raises:
            ConfigError: an unknown mode.
            UnknownThreadError / UnknownCheckpointError: no such run or checkpoint.
            RunError: the archive has no runner (it was opened on its own).

        Examples:
            >>> import asyncio, tempfile, os
            >>> from ai_agent import Agent
            >>> from ai_agent.testing import ScriptedModel
            >>> async def demo():
            ...     db = os.path.join(tempfile.mkdtemp(), "c.sqlite")
            ...     async with Agent(model=ScriptedModel(["hi"]), checkpoint_path=db,
            ...                      memory_path=None) as agent:
            ...         original = await agent.run("greet")
            ...     # Another Agent, whose model would fail: the replay never asks it.
            ...     async with Agent(model=ScriptedModel([]), checkpoint_path=db,
            ...                      memory_path=None) as agent:
            ...         again = await agent.replay(original.thread_id)
            ...     return again.final_text, again.thread_id != original.thread_id
            >>> asyncio.run(demo())
            ('hi', True)
        """
        from ai_agent.graph.replay import Replayer  # the player imports the model's hashing

        replayer = Replayer(self.database, self._driver("replay"), self.catalog, self.policy)
        return await replayer.replay(thread_id, checkpoint_id, mode, model_identity)

    # Helpers --------------------------------------------------------------------------------
    def _thread(self, thread_id: str | None) -> str:
        if thread_id is not None:
            return thread_id
        if self.last_thread is None:
            raise RunError("this agent has not run anything yet; pass a thread_id")
        return self.last_thread

    async def _snapshot(self, thread_id: str) -> Snapshot:
        """The run's latest checkpoint (UnknownThreadError when it has none)."""
        return await latest_snapshot(self.database, thread_id)

    async def _state(self, thread_id: str | None) -> tuple[str, RunState, Snapshot]:
        thread = self._thread(thread_id)
        snapshot = await self._snapshot(thread)
        return thread, values_of(snapshot), snapshot

    async def _closing(self, coro: Awaitable[T]) -> T:
        try:
            return await coro
        finally:
            await self.aclose()


def _settings_counter(settings: AgentSettings) -> TokenCounter:
    from ai_agent.tokens import TokenCounter  # tiktoken: only when a view counts tokens

    return TokenCounter(settings.token_tracking, model=settings.model_backend.model)
