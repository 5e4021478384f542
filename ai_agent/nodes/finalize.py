"""finalize: compose the answer (the last assistant text, or a clear summary of why it stopped)."""

from __future__ import annotations

from typing import TypedDict

from langgraph.runtime import Runtime

from ai_agent.context import RunContext
from ai_agent.nodes._citations import citations_of
from ai_agent.nodes._common import call_hook, hook_view, last_assistant, stage
from ai_agent.state import Citation, RunState, RunStatus, TraceEvent

__all__ = ["FinalizeUpdate", "default_final_text", "finalize"]


class FinalizeUpdate(TypedDict, total=False):
    """What the finalize stage writes to the run state."""

    final_text: str
    citations: list[Citation]
    status: RunStatus
    trace: list[TraceEvent]


def default_final_text(state: RunState) -> str:
    """The default answer: why the run stopped if it did not finish, else the model's last text."""
    gate = state.get("gate")
    if state.get("status") == "cancelled":
        issues = gate["issues"] if gate else []
        reasons = "; ".join(i["message"] for i in issues) or "no reason"
        plans = state.get("plans") or []
        note = (plans[-1]["plan"].get("instructions") if plans else None) or ""
        return f"Run cancelled at the gate: {reasons}." + (f" Note: {note}" if note else "")
    if state.get("stop_reason") == "max_iterations":
        done = len(state.get("results", []))
        return (
            f"Stopped after {state.get('iteration', 0)} iteration(s) (the max_iterations limit) "
            f"without a final answer; {done} tool call(s) ran. Raise max_iterations or narrow "
            "the task."
        )
    message = last_assistant(state)
    text = message["content"].strip() if message else ""
    return text or "The model returned no answer."


@stage("finalize")
async def finalize(state: RunState, *, runtime: Runtime[RunContext]) -> FinalizeUpdate:
    """Call the finalize hook, or compose the default answer; find the sources it cites."""
    context = runtime.context
    if context.hooks.finalize is not None:
        text = str(
            await call_hook(
                "finalize", context.hooks.finalize, state.get("task", ""), hook_view(state, context)
            )
        )
    else:
        text = default_final_text(state)
    status: RunStatus = "cancelled" if state.get("status") == "cancelled" else "completed"
    return FinalizeUpdate(
        final_text=text,
        citations=citations_of(text, state.get("results", [])),
        status=status,
        trace=[TraceEvent(stage="finalize", iteration=state.get("iteration", 0), status=status)],
    )
