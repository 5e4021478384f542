"""RunResult: what a run or resume returns."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

from ai_agent.graph.divergence import DivergenceReport
from ai_agent.graph.interrupts import Interrupted, waiting_node
from ai_agent.issues import IssueKind
from ai_agent.state import CUT, ENDED_BY_SERVER, Citation, GateReport, RunState, TraceEvent

if TYPE_CHECKING:
    from langgraph.types import StateSnapshot

    from ai_agent.graph.stored_state import StoredSnapshot
    from ai_agent.structured import OutputSpec

__all__ = [
    "UNFINISHED",
    "RunResult",
    "RunStatusName",
    "StopReason",
    "is_pending",
    "result_of",
    "with_run_row",
]

UNFINISHED = "the run stopped before finishing"
"""The error of a run read between two checkpoints: crashed, or still being worked on."""

RunStatusName = Literal["completed", "paused", "failed", "cancelled", "forked"]

#: Why a run ended. ``finished``: the model gave its final answer. ``token_limit``: it did, but
#: the server cut the answer at the model's token limit. ``ended_by_server``: it did, but the
#: server ended the answer for a reason of its own (a content filter). ``max_iterations``: the
#: cycles ran out first (a failure: the task is not done). ``cancelled``, ``denied``, ``budget``:
#: a person's plan stopped it at the gate; ``denied`` when the gate asked for an approval,
#: ``budget`` when it reported the budget spent. ``error``: the run failed. ``diverged``: a
#: replay could not follow its recording.
StopReason = Literal[
    "finished",
    "token_limit",
    "ended_by_server",
    "max_iterations",
    "cancelled",
    "denied",
    "budget",
    "error",
    "diverged",
]

# What a status says on its own about why the run ended (the others are read from the state).
_DEFAULT_REASON: dict[str, StopReason] = {
    "completed": "finished",
    "failed": "error",
    "cancelled": "cancelled",
}


@dataclass(frozen=True, slots=True)
class RunResult:
    """The outcome of ``Agent.run`` / ``Agent.resume``.

    Attributes:
        status: ``completed``, ``paused`` (waiting at the gate for a plan), ``failed`` (an
            error, or the max_iterations limit reached without an answer), ``cancelled`` (a
            plan stopped it) or ``forked`` (a fork or a replay's copy not resumed yet:
            ``Agent.resume`` runs it on from where it was copied).
        thread_id: The run's id; pass it to ``Agent.resume``.
        final_text: The answer (or a clear stop summary); None while paused or after a failure.
        gate: The GateReport when paused (issues, severity, a prompt for a person, options).
        error: What went wrong, when failed.
        trace: The structured trace: stage, iteration, duration, tool, status, gate score.
        usage: Token usage reported by the model server, summed over the run.
        iterations: Cycles run so far.
        divergence: For a replay that stopped because the recording could not answer a call:
            where, and how the new call differs from the recorded one.
        stop_reason: Why the run ended (see `StopReason`); None while it is paused or forked.
            A completed run whose answer stopped at the model's token limit (the server cut
            it: finish reason ``length``) says ``token_limit`` instead of ``finished``; one whose
            answer the server ended for another reason (``content_filter``...),
            ``ended_by_server``.
        output: A typed run's answer (``Agent(output_type=...)``), rebuilt as that type from
            the data the run kept; the plain data when read without the type (a `RunArchive`
            alone, ``ai-agent show``); None for a run without one, or one that has not
            completed.
        citations: The sources the final answer cites (`ai_agent.state.Citation`: id, path,
            section, URI and the sentences citing it), as finalize found them.
        interrupt: When paused in a node of your pipeline (``interrupt(value)``): the node and
            its value; ``resume(thread_id, answer)`` answers it. None at the gate.
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
    stop_reason: StopReason | None = None
    output: Any = None
    citations: list[Citation] = field(default_factory=list)
    interrupt: Interrupted | None = None

    def __post_init__(self) -> None:
        if self.stop_reason is None and self.status in _DEFAULT_REASON:
            object.__setattr__(self, "stop_reason", _DEFAULT_REASON[self.status])

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (what ``--json`` prints); a typed output as its JSON data."""
        # pydantic's core is imported here, not with the module: listing or showing a run
        # must not load it (it costs more than the read), and only a typed output needs it.
        from pydantic_core import to_jsonable_python

        out = asdict(self)
        out["output"] = to_jsonable_python(self.output)
        return out


def result_of(
    thread_id: str, snapshot: StateSnapshot | StoredSnapshot, output: OutputSpec | None = None
) -> RunResult:
    """The RunResult a run's latest checkpoint stands for (its output typed by ``output``).

    Raises:
        OutputValidationError: the run's output does not fit ``output`` (it was made with
            another type).
    """
    values = cast(RunState, snapshot.values)
    common: dict[str, Any] = {
        "thread_id": thread_id,
        "trace": list(values.get("trace", [])),
        "usage": dict(values.get("usage") or {}),
        "iterations": values.get("iteration", 0),
        "citations": list(values.get("citations") or []),
    }
    waiting = waiting_node(snapshot)
    if waiting is not None:
        line = TraceEvent(stage=waiting.node, iteration=common["iterations"], status="paused")
        common["trace"].append(line)
        return RunResult(status="paused", interrupt=waiting, **common)
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
        return RunResult(status="failed", error=UNFINISHED, **common)
    final_text, last_gate = values.get("final_text"), values.get("gate")
    if values.get("status") == "cancelled":
        reason = _cancelled_because(last_gate)
        return RunResult(
            status="cancelled", final_text=final_text, gate=last_gate, stop_reason=reason, **common
        )
    if values.get("stop_reason") == "max_iterations":
        # Running out of cycles is not success: the answer is the stop summary, not the task's.
        return RunResult(
            status="failed",
            final_text=final_text,
            gate=last_gate,
            error=final_text or "stopped at the max_iterations limit without a final answer",
            stop_reason="max_iterations",
            **common,
        )
    data = values.get("output")
    typed = output.value(data) if output is not None and data is not None else data
    return RunResult(
        status="completed",
        final_text=final_text,
        gate=last_gate,
        output=typed,
        stop_reason=_how_answered(common["trace"]),
        **common,
    )


def _how_answered(trace: list[TraceEvent]) -> StopReason:
    """``finished``, unless the server, not the model, ended the draft that gave the answer."""
    drafts = [line for line in trace if line.get("stage") == "draft"]
    status = drafts[-1].get("status") if drafts else None
    if status == CUT:
        return "token_limit"
    return "ended_by_server" if status == ENDED_BY_SERVER else "finished"


def _cancelled_because(gate: GateReport | None) -> StopReason:
    """What the person refused when their plan stopped the run at this gate."""
    codes = {issue["code"] for issue in gate["issues"]} if gate else set()
    if IssueKind.BUDGET in codes:
        return "budget"
    if IssueKind.APPROVAL_REQUIRED in codes:
        return "denied"
    return "cancelled"


def is_pending(snapshot: StateSnapshot | StoredSnapshot) -> bool:
    """Whether the run stopped with work left in its step (a crash, a failure).

    ``next`` lists only the step's tasks that have no stored writes: when every task of the
    step finished and stored its writes but the checkpoint after them was never written, it is
    empty while ``tasks`` still holds the step.
    """
    return bool(snapshot.next or snapshot.tasks)


def with_run_row(result: RunResult, record: Mapping[str, Any] | None) -> RunResult:
    """A stored run's result, told what only its run row knows.

    A fork that was never resumed waits at its fork point (its checkpoint alone looks like a
    run that stopped midway); a run that failed with an error has it in its row only.
    """
    if record and record["status"] == "paused" and result.status != "paused":
        # Paused in a node of a pipeline this reader did not compile (``ai-agent show`` without
        # ``--pipeline``): the checkpoints read without it cannot say where; the run row can.
        return dataclasses.replace(
            result, status="paused", final_text=None, error=None, stop_reason=None
        )
    if record and record["status"] == "forked" and result.status == "failed":
        return dataclasses.replace(result, status="forked", error=None, stop_reason=None)
    if (
        record
        and record["status"] == "failed"
        and result.status != "paused"
        and result.stop_reason != "max_iterations"  # the state says it all
    ):
        return RunResult(
            status="failed",
            thread_id=result.thread_id,
            error=record["error"],
            trace=result.trace,
            usage=result.usage,
            iterations=result.iterations,
        )
    return result
