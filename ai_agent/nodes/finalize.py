"""finalize: compose the answer (the last assistant text, or a clear summary of why it stopped).

A run with an output type asks for its typed answer here (`ai_agent.nodes._answer`): the answer
is kept as plain JSON data in ``output`` and written as the final text; an answer that still
does not fit is an OUTPUT_INVALID issue, and the run goes to the gate instead of persist.
"""

from __future__ import annotations

import json
from typing import Any, TypedDict

from langgraph.runtime import Runtime

from ai_agent.context import RunContext
from ai_agent.events import _TypedAnswer
from ai_agent.nodes._answer import output_spec, typed_answer
from ai_agent.nodes._citations import citations_of
from ai_agent.nodes._common import call_hook, hook_view, last_assistant, stage
from ai_agent.state import (
    Citation,
    CompactionRecord,
    Issue,
    RunState,
    RunStatus,
    TraceEvent,
    UsageRecord,
)

__all__ = ["FinalizeUpdate", "default_final_text", "finalize"]


class FinalizeUpdate(TypedDict, total=False):
    """What the finalize stage writes to the run state."""

    final_text: str
    citations: list[Citation]
    status: RunStatus
    output: Any
    issues: list[Issue]
    usage: dict[str, Any]
    usage_log: list[UsageRecord]
    compactions: list[CompactionRecord]
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
    """The typed answer (a run with a type), the hook's or the composed answer; its sources."""
    context = runtime.context
    iteration = state.get("iteration", 0)
    update = FinalizeUpdate()
    spec = output_spec(state, context)
    # A run that stopped (cancelled, out of cycles) has no answer to type: its text says why.
    finished = state.get("status") != "cancelled" and not state.get("stop_reason")
    if spec is not None and finished:
        answer = await typed_answer(state, context, spec)
        if answer.usage is not None:
            update["usage"] = answer.usage
        if answer.usage_log:
            update["usage_log"] = answer.usage_log
        if answer.compactions:
            update["compactions"] = answer.compactions
        line = TraceEvent(stage="finalize", iteration=iteration, detail=f"typed answer {spec.name}")
        line["detail"] += f" ({answer.requests} request(s))"
        if answer.issue is not None:
            line["status"] = "error"
            update["issues"] = [answer.issue]
            update["trace"] = [line]
            return update
        update["output"] = answer.data
    if context.hooks.finalize is not None:
        text = str(
            await call_hook(
                "finalize", context.hooks.finalize, state.get("task", ""), hook_view(state, context)
            )
        )
    elif "output" in update:
        text = json.dumps(update["output"], indent=2, ensure_ascii=False)
    else:
        text = default_final_text(state)
    if "output" in update:
        context.emit(_TypedAnswer(text, iteration))  # streams as the final answer
    status: RunStatus = "cancelled" if state.get("status") == "cancelled" else "completed"
    update["final_text"] = text
    update["citations"] = citations_of(text, state.get("results", []))
    update["status"] = status
    update["trace"] = [TraceEvent(stage="finalize", iteration=iteration, status=status)]
    return update
