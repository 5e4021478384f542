"""RunResult: what a run or resume returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ai_agent.graph.divergence import DivergenceReport
from ai_agent.state import GateReport, TraceEvent

__all__ = ["RunResult", "RunStatusName"]

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
