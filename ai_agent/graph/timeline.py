"""A run as a timeline: its trace lines with their steps and tokens, and its tool calls.

What ``timeline`` and ``get_execution_trace`` return, shaped from the run's checkpoints (each
trace line is placed at the checkpoint of the stage that wrote it), its state and its recorded
calls. Pure functions of data the archive read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from ai_agent.errors import UnknownCheckpointError
from ai_agent.state import RunState, ToolCall, ToolResult
from ai_agent.usage import counted_usage

if TYPE_CHECKING:
    from ai_agent.checkpoints.recorded import ModelCallRecord, ToolCallRecord
    from ai_agent.graph.history import HistoryEntry

__all__ = [
    "ExecutionTrace",
    "TimelineRow",
    "ToolCallView",
    "execution_trace",
    "timeline_row",
    "timeline_rows",
    "up_to",
]


class TimelineRow(TypedDict):
    """One line of a run's timeline: a trace line with its step and token count."""

    step: int | None
    checkpoint_id: str | None
    stage: str
    iteration: int
    started_at: float | None
    duration_ms: float
    tokens: int | None
    tool: str | None
    status: str
    gate_score: float | None
    detail: str


class ToolCallView(TypedDict):
    """A tool call of the run with its result."""

    iteration: int
    call: ToolCall
    result: ToolResult
    duration_ms: float | None


class ExecutionTrace(TypedDict):
    """The full trace: the timeline and every tool call with its arguments and result."""

    thread_id: str
    timeline: list[TimelineRow]
    tool_calls: list[ToolCallView]


def up_to(
    entries: Sequence[HistoryEntry], checkpoint_id: str, thread_id: str
) -> list[HistoryEntry]:
    """The history up to and including ``checkpoint_id``.

    Raises:
        UnknownCheckpointError: the run has no checkpoint with this id.
    """
    ids = [e.checkpoint_id for e in entries]
    if checkpoint_id not in ids:
        raise UnknownCheckpointError(
            f"thread {thread_id} has no checkpoint {checkpoint_id}; "
            f"`ai-agent history {thread_id}` lists them"
        )
    return list(entries[: ids.index(checkpoint_id) + 1])


def timeline_rows(
    trace: Sequence[Any], entries: Sequence[HistoryEntry], calls: Sequence[ModelCallRecord]
) -> list[TimelineRow]:
    """Trace lines as timeline rows, each with its step, checkpoint and tokens."""
    return _rows(trace, entries, _usage_by_step(calls))


def execution_trace(
    thread_id: str,
    state: RunState,
    recorded: Sequence[ToolCallRecord],
    timeline: list[TimelineRow],
) -> ExecutionTrace:
    """The timeline and every tool call of the state with its result and duration."""
    durations = {(t["iteration"], t["call"]["id"]): t["duration_ms"] for t in recorded}
    calls = [
        ToolCallView(
            iteration=r["iteration"],
            call=r["call"],
            result=r["result"],
            duration_ms=durations.get(
                (r["iteration"], r["call"]["id"]), r["result"].get("execution_time_ms")
            ),
        )
        for r in state.get("results", [])
    ]
    return ExecutionTrace(thread_id=thread_id, timeline=timeline, tool_calls=calls)


def _rows(
    trace: Sequence[Any], entries: Sequence[HistoryEntry], usage: dict[int, int]
) -> list[TimelineRow]:
    where: list[tuple[int | None, str | None]] = []
    for entry in entries:
        where += [(entry.step, entry.checkpoint_id)] * len(entry.trace)
    offset = len(trace) - len(where)  # a pruned run keeps its trace, not every checkpoint
    rows: list[TimelineRow] = []
    for index, line in enumerate(trace):
        step, checkpoint = where[index - offset] if index >= offset else (None, None)
        tokens = line.get("tokens")
        if tokens is None and line["stage"] == "draft" and step is not None:
            tokens = usage.get(step)
        rows.append(timeline_row(line, step, checkpoint, tokens))
    return rows


def timeline_row(
    line: Mapping[str, Any], step: int | None, checkpoint: str | None, tokens: int | None
) -> TimelineRow:
    """One trace line as a timeline row, placed at the checkpoint (and step) that added it."""
    return TimelineRow(
        step=step,
        checkpoint_id=checkpoint,
        stage=line["stage"],
        iteration=line["iteration"],
        started_at=line.get("started_at"),
        duration_ms=float(line.get("duration_ms", 0.0)),
        tokens=tokens,
        tool=line.get("tool"),
        status=str(line.get("status", "")),
        gate_score=line.get("gate_score"),
        detail=str(line.get("detail") or ""),
    )


def _usage_by_step(calls: Sequence[ModelCallRecord]) -> dict[int, int]:
    """Each recorded call's total tokens by its step.

    Usage no server could have counted (text, NaN, a negative count: a row edited by hand) is
    no usage (`ai_agent.usage.counted_usage`): its tokens are unknown (it failed ``int(...)``,
    "internal error" in ``show`` and ``export``).
    """
    totals: dict[int, int] = {}
    for c in calls:
        usage = counted_usage(c["usage"])
        if c["step"] is not None and "total_tokens" in usage:
            totals[c["step"]] = usage["total_tokens"]
    return totals
