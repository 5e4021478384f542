"""``Agent.replay``: re-execute a stored run into a new thread, offline from its recording or live.

Modes:

- ``"recorded"``: model replies and tool results come from the recording, matched by request
  hash (see `ai_agent.graph.player`); no model server is asked, no tool runs, nothing is
  written to long-term memory. Plans the original received at the gate are given again at the
  same gates. A call the recording cannot answer stops the replay with a DivergenceReport.
- ``"live"``: the model and the tools are called again under the normal policy and approvals;
  a gate that intervenes pauses the replay like any run.
- ``"live-after"``: recorded up to the chosen checkpoint (by default the original's last), live
  after it.

The replay starts at ``checkpoint_id`` (``recorded`` and ``live``) or at the run's first
checkpoint (``live-after``, which switches to live at ``checkpoint_id``). The system prompt, the
tools' schemas, the hooks and the code are the Agent's own, so a replay after a change shows
where the run takes another way. The replay is an ordinary thread afterwards: ``resume`` it to go
on live from where it stopped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, get_args

from langgraph.types import Command

from ai_agent.checkpoints.recorded import CallPosition, ModelCallRecord, ToolCallRecord
from ai_agent.context import RunContext, RunPolicy
from ai_agent.errors import ConfigError, ReplayDivergedError, UnknownCheckpointError
from ai_agent.graph.database import RunDatabase, config_for
from ai_agent.graph.history import HistoryEntry, fork_run, history_of, values_of
from ai_agent.graph.plain_reads import checked
from ai_agent.graph.player import (
    ModelIdentity,
    ReplayMode,
    ReplayModel,
    ReplaySession,
    ReplayToolBox,
    Tape,
    plan_hook,
    recall_hook,
)
from ai_agent.graph.result import RunResult
from ai_agent.state import TraceEvent

if TYPE_CHECKING:
    from ai_agent.graph.driving import Runner
    from ai_agent.tools.registry import ToolRegistry

__all__ = ["REPLAY_MODES", "Replayer", "recorded_calls", "trace_signature"]

REPLAY_MODES: tuple[ReplayMode, ...] = ("recorded", "live", "live-after")
# recall is the first stage of every run: step -1 is the input, 0 the start, 1 recall.
_RECALL_STEP = 1
# The origins of runs whose first steps are their parent's, copied by `fork_run`.
_COPIES = frozenset({"fork", "replay"})


def trace_signature(trace: Sequence[TraceEvent]) -> list[tuple[Any, ...]]:
    """What two runs must share to have taken the same path.

    Each trace line without timings (and without where ``persist`` saved the result, which a
    recorded replay does not do).

    Examples:
        >>> trace_signature([{"stage": "draft", "iteration": 1, "duration_ms": 3.0,
        ...                   "status": "ok", "detail": "text reply"}])
        [('draft', 1, None, 'ok', None, 'text reply')]
    """
    return [
        (
            t["stage"],
            t["iteration"],
            t.get("tool"),
            t.get("status"),
            t.get("gate_score"),
            None if t["stage"] == "persist" else t.get("detail"),
        )
        for t in trace
    ]


class Replayer:
    """Replays stored runs of one database (see the module docstring).

    Args:
        database: The run store and the checkpointer.
        runner: Builds the replay's run context and drives it.
        catalog: The Agent's tools: their schemas are what the replayed model is offered, and
            a live part of the replay calls them.
        policy: The Agent's run policy (a recorded replay runs it without long-term memory).
    """

    def __init__(
        self, database: RunDatabase, runner: Runner, catalog: ToolRegistry, policy: RunPolicy
    ) -> None:
        self.database = database
        self.runner = runner
        self.catalog = catalog
        self.policy = policy
        self.model_identity: ModelIdentity = "recorded"

    async def replay(
        self,
        thread_id: str,
        checkpoint_id: str | None = None,
        mode: ReplayMode = "recorded",
        model_identity: ModelIdentity = "recorded",
    ) -> RunResult:
        """Re-execute a stored run into a new thread (see ``RunArchive.replay``)."""
        if mode not in REPLAY_MODES:
            raise ConfigError(f"unknown replay mode {mode!r}; use one of {', '.join(REPLAY_MODES)}")
        if model_identity not in get_args(ModelIdentity):
            raise ConfigError(
                f"unknown model identity {model_identity!r}; use 'recorded' or 'agent'"
            )
        self.model_identity = model_identity
        # The tools open (graph/tooling.py): an MCP tool's schema is the one the model saw; a
        # server that fails only loses its tools (a replay hears no start-up issues).
        async with self.runner.tool_session():
            return await self._replay(thread_id, checkpoint_id, mode)

    async def _replay(
        self, thread_id: str, checkpoint_id: str | None, mode: ReplayMode
    ) -> RunResult:
        async with self.database.graph() as graph:
            entries = await history_of(graph, thread_id)
        chosen = _entry(entries, checkpoint_id, thread_id) if checkpoint_id else None
        start = entries[0] if mode == "live-after" or chosen is None else chosen
        switch = (chosen or entries[-1]).step if mode == "live-after" else None
        new = await fork_run(self.database, thread_id, start.checkpoint_id, None, origin="replay")
        session = await self._session(thread_id, new, mode, switch, start)
        return await self._play(session)

    async def _session(
        self,
        source: str,
        new: str,
        mode: ReplayMode,
        switch: int | None,
        start: HistoryEntry,
    ) -> ReplaySession:
        models, tools = await recorded_calls(self.database, source)
        async with self.database.graph() as graph:
            head = checked(await graph.aget_state(config_for(source)))
            at_start = await graph.aget_state(config_for(source, checkpoint_id=start.checkpoint_id))
        plans = list(values_of(head).get("plans", []))
        return ReplaySession(
            source=source,
            thread_id=new,
            mode=mode,
            switch_step=switch,
            tape=Tape(models, tools),
            store=self.database.store,
            plans=plans,
            applied=len(values_of(at_start).get("plans", [])),
            source_paused=bool(head.interrupts),
            live_model=self.runner.model,
            catalog=list(self.catalog),
        )

    async def _params(self, session: ReplaySession) -> dict[str, Any]:
        """The generation parameters the recorded requests are compared with.

        The original's (its first recorded request's) unless the caller asked for the Agent's:
        a replay from the recording needs no model, so it need not be told the original's.
        """
        if self.model_identity == "recorded" and session.tape.models:
            first = await self.database.store.model_request(session.tape.models[0]["seq"])
            return dict(first["params"])
        return self.runner.generation_params()

    async def _replay_context(self, session: ReplaySession, start_step: int) -> RunContext:
        runner = self.runner
        context = await runner.context(
            session.thread_id,
            model=ReplayModel(session, await self._params(session)),
            tools=ReplayToolBox(session, self.catalog),
        )
        hooks = dataclasses.replace(
            runner.hooks, query_user_plan=plan_hook(session, runner.hooks.query_user_plan)
        )
        changes: dict[str, Any] = {}
        if start_step < _RECALL_STEP and session.recorded_at(_RECALL_STEP):
            # What the original recalled, not what memory holds now (it has grown since).
            source = values_of(await self._head(session.source))
            skipped = any(
                t["stage"] == "recall" and t.get("status") == "skipped"
                for t in source.get("trace", [])
            )
            hooks = dataclasses.replace(
                hooks, recall=None if skipped else recall_hook(list(source.get("recalled", [])))
            )
            changes["memory"] = None
        if session.mode == "recorded":  # no side effects: nothing goes to long-term memory
            hooks = dataclasses.replace(hooks, persist=None)
            changes["policy"] = dataclasses.replace(self.policy, memory_path=None)
            changes["memory"] = None
        return dataclasses.replace(context, hooks=hooks, **changes)

    async def _head(self, thread_id: str) -> Any:
        async with self.database.graph() as graph:
            return checked(await graph.aget_state(config_for(thread_id)))

    async def _play(self, session: ReplaySession) -> RunResult:
        """Drive the replay, answering the gates the original was answered at."""
        head = await self._head(session.thread_id)
        context = await self._replay_context(session, int((head.metadata or {}).get("step", -1)))
        graph_input: Any = None
        while True:
            lease = await self.database.store.acquire(session.thread_id)
            result = await self.runner.drive(session.thread_id, graph_input, lease, context)
            session.resuming = False
            if session.forget is not None:  # act journaled a call the player refused to serve
                await self.database.store.forget(session.thread_id, *session.forget)
                session.forget = None
            if session.divergence is not None:
                return await self._diverged(session, result)
            if result.status != "paused" or result.gate is None:
                return result
            graph_input = await self._answer(session, result)
            if graph_input is None:
                return dataclasses.replace(result, divergence=session.divergence)

    async def _answer(self, session: ReplaySession, result: RunResult) -> Command[Any] | None:
        """The recorded plan for a pause, or None to hand the pause to the caller."""
        if result.gate is None:
            return None
        head = await self._head(session.thread_id)
        step = int((head.metadata or {}).get("step", 0)) + 1
        if not session.recorded_at(step):
            return None
        if session.next_plan() is None and session.source_paused:
            return None  # the original waits here too: so does its replay
        position = CallPosition(step=step, stage="gate", checkpoint_id=None)
        try:
            plan = session.take_plan(result.gate, position)
        except ReplayDivergedError:
            return None
        session.resuming = True
        return Command(resume=plan)

    async def _diverged(self, session: ReplaySession, result: RunResult) -> RunResult:
        return dataclasses.replace(result, divergence=session.divergence, stop_reason="diverged")


async def recorded_calls(
    database: RunDatabase, thread_id: str
) -> tuple[list[ModelCallRecord], list[ToolCallRecord]]:
    """The calls recorded for a run, with its ancestors' up to where it was forked.

    A fork's (or a replay's) first steps were made, and recorded, by its parent. A subagent's
    run also names a parent, but made every step itself, with a model of its own: its parent's
    calls are no part of its recording.
    """
    store = database.store
    models = await store.model_calls(thread_id)
    tools = await store.tool_calls(thread_id)
    record = await store.get_run(thread_id)
    seen = {thread_id}
    while record and record["parent_thread_id"] and record["parent_thread_id"] not in seen:
        if record["origin"] not in _COPIES:
            break  # a subagent's run: its parent's calls are not its own first steps
        parent, cut = record["parent_thread_id"], await _fork_step(database, record)
        seen.add(parent)
        models = [m for m in await store.model_calls(parent) if _before(m, cut)] + models
        tools = [t for t in await store.tool_calls(parent) if _before(t, cut)] + tools
        record = await store.get_run(parent)
    return models, tools


async def _fork_step(database: RunDatabase, record: Any) -> int | None:
    checkpoint = record["fork_checkpoint_id"]
    if not checkpoint:
        return None
    async with database.graph() as graph:
        snapshot = await graph.aget_state(config_for(record["thread_id"], checkpoint_id=checkpoint))
    step = (snapshot.metadata or {}).get("step")
    return int(step) if step is not None else None


def _before(record: ModelCallRecord | ToolCallRecord, cut: int | None) -> bool:
    step = record["step"]
    return cut is None or (step is not None and step <= cut)


def _entry(entries: list[HistoryEntry], checkpoint_id: str, thread_id: str) -> HistoryEntry:
    for entry in entries:
        if entry.checkpoint_id == checkpoint_id:
            return entry
    raise UnknownCheckpointError(
        f"thread {thread_id} has no checkpoint {checkpoint_id}; "
        f"`ai-agent history {thread_id}` lists them"
    )
