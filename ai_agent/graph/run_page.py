"""One run, read for a page: its latest state once, and a window of its cycles in detail.

``RunArchive``'s views each read what they need on their own (the result, the state, the trace
and the history are separate reads), and the timeline places every trace line at its checkpoint
by reading the run's whole history through LangGraph: for a run of 800 cycles that is thousands
of state snapshots and many seconds. A page shows one window of cycles at a time (the latest by
default), so `read_run_page` reads the latest checkpoint once, and walks the checkpoints back
from the newest only as far as the window's first trace line, through the checkpointer's own
listing (``alist``: ids, metadata and values, none of LangGraph's per-snapshot work). A
checkpoint's trace lines are those its trace holds beyond its parent's, so each line of the
window gets the step and the checkpoint of the stage that wrote it, exactly as in `timeline`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from ai_agent.errors import UnknownThreadError
from ai_agent.graph.database import checkpoint_config, config_for
from ai_agent.graph.history import values_of
from ai_agent.graph.plain_reads import checked
from ai_agent.graph.result import RunResult, result_of, with_run_row
from ai_agent.graph.timeline import TimelineRow, ToolCallView, timeline_row

if TYPE_CHECKING:
    from ai_agent.checkpoints import RunRecord
    from ai_agent.graph.database import RunDatabase
    from ai_agent.state import RunState, TraceEvent, UsageRecord

__all__ = ["CheckpointMark", "RunPage", "read_run_page"]


@dataclass(frozen=True, slots=True)
class CheckpointMark:
    """A checkpoint of the window: where a person can look at the state, or fork."""

    checkpoint_id: str
    step: int
    stage: str
    iteration: int
    time: str


@dataclass(frozen=True)
class RunPage:
    """A run's latest result and state, and its cycles ``first``..``last`` in detail."""

    result: RunResult
    state: RunState
    record: RunRecord | None
    cycles: int  # the run's last cycle
    first: int
    last: int
    timeline: list[TimelineRow]
    checkpoints: list[CheckpointMark]
    tool_calls: list[ToolCallView]
    model_calls: list[UsageRecord]


async def read_run_page(
    database: RunDatabase,
    thread_id: str,
    *,
    output: Any = None,
    window: int = 10,
    last: int | None = None,
) -> RunPage:
    """The run, with cycles ``last - window + 1``..``last`` (default: the latest) in detail.

    Raises:
        UnknownThreadError: no run with this thread id has a checkpoint.
    """
    async with database.graph(reading=True) as graph:
        snapshot = checked(await graph.aget_state(config_for(thread_id)))
        if not snapshot.values:
            raise UnknownThreadError(f"no run with thread id {thread_id}")
        state = values_of(snapshot)
        trace: list[TraceEvent] = list(state.get("trace") or [])
        cycles = max([int(state.get("iteration", 0)), *(line["iteration"] for line in trace)])
        end = cycles if last is None else max(0, min(last, cycles))
        first = max(0, end - max(1, window) + 1)
        start = next((i for i, line in enumerate(trace) if line["iteration"] >= first), len(trace))
        places, marks = await _places(graph.checkpointer, thread_id, start)
    record = await database.store.get_run(thread_id)
    result = with_run_row(result_of(thread_id, snapshot, output), record)
    rows = [
        _row(line, places.get(index))
        for index, line in enumerate(trace[start:], start)
        if first <= line["iteration"] <= end
    ]
    return RunPage(
        result=result,
        state=state,
        record=record,
        cycles=cycles,
        first=first,
        last=end,
        timeline=rows,
        checkpoints=[m for m in marks if first <= m.iteration <= end],
        tool_calls=[
            _tool_call(r) for r in state.get("results", []) if first <= r["iteration"] <= end
        ],
        model_calls=[u for u in state.get("usage_log") or [] if first <= u["iteration"] <= end],
    )


async def _places(
    saver: Any, thread_id: str, start: int
) -> tuple[dict[int, tuple[int, str]], list[CheckpointMark]]:
    """Trace index -> (step, checkpoint id) from ``start`` on; the window's checkpoints, in order.

    The checkpoints are listed newest first; each one owns the trace lines its trace has beyond
    the next (older) one's. The walk stops at the first checkpoint whose trace ends at or
    before ``start``: the older ones own none of the window's lines.
    """
    places: dict[int, tuple[int, str]] = {}
    marks: list[CheckpointMark] = []
    newer: _Listed | None = None
    async for item in saver.alist(checkpoint_config(thread_id)):
        listed = _Listed.of(item)
        if newer is not None:
            marks.append(newer.mark(len(listed.lines)))
            for index in range(len(listed.lines), len(newer.lines)):
                places[index] = (newer.step, newer.checkpoint_id)
        newer = listed
        if len(listed.lines) <= start:
            break
    if newer is not None:
        marks.append(newer.mark(0))
    marks.reverse()
    return places, marks


@dataclass(frozen=True, slots=True)
class _Listed:
    """A listed checkpoint: what the walk needs of it."""

    checkpoint_id: str
    step: int
    source: str
    iteration: int
    time: str
    lines: Sequence[TraceEvent]

    @classmethod
    def of(cls, item: Any) -> _Listed:
        values: Mapping[str, Any] = item.checkpoint.get("channel_values") or {}
        metadata: Mapping[str, Any] = item.metadata or {}
        return cls(
            str(item.checkpoint["id"]),
            int(metadata.get("step", -1)),
            str(metadata.get("source") or ""),
            int(values.get("iteration", 0)),
            str(item.checkpoint.get("ts") or ""),
            values.get("trace") or [],
        )

    def mark(self, parent_lines: int) -> CheckpointMark:
        """Its mark, named by the stage of the last trace line it added (else its source)."""
        added = self.lines[parent_lines:]
        stage = added[-1]["stage"] if added else ("input" if self.source == "input" else "start")
        return CheckpointMark(self.checkpoint_id, self.step, stage, self.iteration, self.time)


def _row(line: TraceEvent, place: tuple[int, str] | None) -> TimelineRow:
    step, checkpoint = place if place is not None else (None, None)
    return timeline_row(line, step, checkpoint, cast("int | None", line.get("tokens")))


def _tool_call(record: Mapping[str, Any]) -> ToolCallView:
    result = record["result"]
    return ToolCallView(
        iteration=int(record["iteration"]),
        call=record["call"],
        result=result,
        duration_ms=cast("float | None", result.get("execution_time_ms")),
    )
