"""RunResult: what a run or resume returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

from ai_agent.graph.divergence import DivergenceReport
from ai_agent.state import GateReport, RunState, TraceEvent

if TYPE_CHECKING:
    from langgraph.types import StateSnapshot

__all__ = ["RunResult", "RunStatusName", "is_pending", "result_of"]

RunStatusName = Literal["completed", "paused", "failed", "cancelled"]


@dataclass(frozen=True, slots=True)
class RunResult:
    """The outcome of ``Agent.run`` / ``Agent.resume``.

    Attributes:
        status: ``completed``, ``paused`` (waiting at the gate for a plan), ``failed`` or
            ``cancelled`` (a plan stopped it).
        thread_id: The run's id; pass it to ``Agent.resume``.
        final_text: The answer (or a clear stop summary); None while paused or after a failure.
        gate: The GateReport when paused (issues, severity, a prompt for a person, options).
        error: What went wrong, when failed.
        trace: The structured trace: stage, iteration, duration, tool, status, gate score.
        usage: Token usage reported by the model server, summed over the run.
        iterations: Cycles run so far.
        divergence: For a replay that stopped because the recording could not answer a call:
            where, and how the new call differs from the recorded one.
    """

    status: RunStatusName
    thread_id: str
    final_text: str | None = None
    gate: GateReport | None = None
    error: str | None = None
    trace: list[TraceEvent] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    iterations: int = 0
    divergence: DivergenceReport | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (what ``--json`` prints)."""
        return asdict(self)


def result_of(thread_id: str, snapshot: StateSnapshot) -> RunResult:
    """The RunResult a run's latest checkpoint stands for."""
    values = cast(RunState, snapshot.values)
    common: dict[str, Any] = {
        "thread_id": thread_id,
        "trace": list(values.get("trace", [])),
        "usage": dict(values.get("usage") or {}),
        "iterations": values.get("iteration", 0),
    }
    if snapshot.interrupts:
        gate: GateReport = snapshot.interrupts[0].value
        # The gate stage has not returned (it waits inside its interrupt), so its trace line is
        # added here: the trace shows where the run stands.
        common["trace"].append(
            TraceEvent(
                stage="gate",
                iteration=gate["iteration"],
                status="paused",
                gate_score=gate["severity"],
                detail=", ".join(i["code"] for i in gate["issues"]),
            )
        )
        return RunResult(status="paused", gate=gate, **common)
    if is_pending(snapshot):
        return RunResult(status="failed", error="the run stopped before finishing", **common)
    status: RunStatusName = "cancelled" if values.get("status") == "cancelled" else "completed"
    return RunResult(
        status=status, final_text=values.get("final_text"), gate=values.get("gate"), **common
    )


def is_pending(snapshot: StateSnapshot) -> bool:
    """Whether the run stopped with work left in its step (a crash, a failure).

    ``next`` lists only the step's tasks that have no stored writes: when every task of the
    step finished and stored its writes but the checkpoint after them was never written, it is
    empty while ``tasks`` still holds the step.
    """
    return bool(snapshot.next or snapshot.tasks)
