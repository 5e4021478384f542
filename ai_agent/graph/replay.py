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
from typing import Any

from langgraph.types import Command

from ai_agent.checkpoints.recorded import CallPosition, ModelCallRecord, ToolCallRecord
from ai_agent.context import RunContext
from ai_agent.errors import ConfigError, ReplayDivergedError, UnknownCheckpointError
from ai_agent.graph.core import config_for
from ai_agent.graph.history import HistoryEntry, HistoryMixin, values_of
from ai_agent.graph.player import (
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

__all__ = ["REPLAY_MODES", "ReplayMixin", "trace_signature"]

REPLAY_MODES: tuple[ReplayMode, ...] = ("recorded", "live", "live-after")
# recall is the first stage of every run: step -1 is the input, 0 the start, 1 recall.
_RECALL_STEP = 1


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


class ReplayMixin(HistoryMixin):
    """``replay`` (see the module docstring)."""

    async def replay(
        self, thread_id: str, checkpoint_id: str | None = None, mode: ReplayMode = "recorded"
    ) -> RunResult:
        """Re-execute a stored run into a new thread and return the new thread's RunResult.

        Args:
            thread_id: The run to replay.
            checkpoint_id: Where to start (``recorded``, ``live``; default: the beginning), or
                where to switch to live (``live-after``; default: the original's last
                checkpoint).
            mode: ``"recorded"``, ``"live"`` or ``"live-after"``.

        Returns:
            The replay's RunResult. When the recording could not answer a call, the replay
            stops there (status ``failed``, or ``paused`` at a gate the original did not stop
            at) and ``result.divergence`` says where and how the new call differs.

        Raises:
            ConfigError: an unknown mode.
            UnknownThreadError / UnknownCheckpointError: no such run or checkpoint.

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
        if mode not in REPLAY_MODES:
            raise ConfigError(f"unknown replay mode {mode!r}; use one of {', '.join(REPLAY_MODES)}")
        # The tools open (graph/tooling.py): an MCP tool's schema is the one the model saw; a
        # server that fails only loses its tools (a replay hears no start-up issues).
        async with self._tool_session():
            return await self._replay(thread_id, checkpoint_id, mode)

    async def _replay(
        self, thread_id: str, checkpoint_id: str | None, mode: ReplayMode
    ) -> RunResult:
        entries = await self.ahistory(thread_id)
        chosen = _entry(entries, checkpoint_id, thread_id) if checkpoint_id else None
        start = entries[0] if mode == "live-after" or chosen is None else chosen
        switch = (chosen or entries[-1]).step if mode == "live-after" else None
        new = await self._fork(thread_id, start.checkpoint_id, None, origin="replay")
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
        models, tools = await self._recording(source)
        async with self._graph() as graph:
            head = await graph.aget_state(config_for(source))
            at_start = await graph.aget_state(config_for(source, checkpoint_id=start.checkpoint_id))
        plans = list(values_of(head).get("plans", []))
        return ReplaySession(
            source=source,
            thread_id=new,
            mode=mode,
            switch_step=switch,
            tape=Tape(models, tools),
            store=self.store,
            plans=plans,
            applied=len(values_of(at_start).get("plans", [])),
            source_paused=bool(head.interrupts),
            live_model=self._model,
            catalog=list(self.registry),
        )

    async def _recording(
        self, thread_id: str
    ) -> tuple[list[ModelCallRecord], list[ToolCallRecord]]:
        """The calls recorded for a run, with its ancestors' up to where it was forked.

        A fork's first steps were made, and recorded, by its parent.
        """
        models = await self.store.model_calls(thread_id)
        tools = await self.store.tool_calls(thread_id)
        record = await self.store.get_run(thread_id)
        seen = {thread_id}
        while record and record["parent_thread_id"] and record["parent_thread_id"] not in seen:
            parent, cut = record["parent_thread_id"], await self._fork_step(record)
            seen.add(parent)
            models = [m for m in await self.store.model_calls(parent) if _before(m, cut)] + models
            tools = [t for t in await self.store.tool_calls(parent) if _before(t, cut)] + tools
            record = await self.store.get_run(parent)
        return models, tools

    async def _fork_step(self, record: Any) -> int | None:
        checkpoint = record["fork_checkpoint_id"]
        if not checkpoint:
            return None
        async with self._graph() as graph:
            snapshot = await graph.aget_state(
                config_for(record["thread_id"], checkpoint_id=checkpoint)
            )
        step = (snapshot.metadata or {}).get("step")
        return int(step) if step is not None else None

    async def _replay_context(self, session: ReplaySession, start_step: int) -> RunContext:
        context = await self._context(
            session.thread_id,
            model=ReplayModel(session, self.generation_params()),
            tools=ReplayToolBox(session, self.registry),
        )
        hooks = dataclasses.replace(
            self.hooks, query_user_plan=plan_hook(session, self.hooks.query_user_plan)
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
        async with self._graph() as graph:
            return await graph.aget_state(config_for(thread_id))

    async def _play(self, session: ReplaySession) -> RunResult:
        """Drive the replay, answering the gates the original was answered at."""
        head = await self._head(session.thread_id)
        context = await self._replay_context(session, int((head.metadata or {}).get("step", -1)))
        graph_input: Any = None
        while True:
            lease = await self.store.acquire(session.thread_id)
            result = await self._drive(session.thread_id, graph_input, lease, context)
            session.resuming = False
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
        if session.forget is not None:  # act journaled the call before the player refused it
            await self.store.forget(session.thread_id, *session.forget)
        return dataclasses.replace(result, divergence=session.divergence)


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
