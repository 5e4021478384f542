"""decide: turn the draft into this cycle's action (tool calls) or "finish"."""

from __future__ import annotations

from typing import TypedDict

from langgraph.runtime import Runtime

from ai_agent.context import RunContext
from ai_agent.nodes._common import last_assistant, stage
from ai_agent.nodes._issues import issue
from ai_agent.state import Decision, Issue, Message, PendingCall, RunState, ToolCall, TraceEvent

__all__ = ["SKIPPED", "DecideUpdate", "decide"]

SKIPPED = "Skipped: one action per cycle. Call it again next cycle if it is still needed."


class DecideUpdate(TypedDict, total=False):
    decision: Decision
    pending: list[PendingCall]
    issues: list[Issue]
    messages: list[Message]
    trace: list[TraceEvent]


@stage("decide")
async def decide(state: RunState, *, runtime: Runtime[RunContext]) -> DecideUpdate:
    """Pick the call(s) to run this cycle: the first by default, all with execute_all_tool_calls.

    A call to a tool that is not active is a TOOL_MISSING issue. Calls not picked get a "skipped"
    tool message at once, so the conversation stays valid for the model.
    """
    context = runtime.context
    message = last_assistant(state)
    calls: list[ToolCall] = list(message.get("tool_calls", [])) if message else []
    text = message["content"] if message else ""
    if not calls:
        return DecideUpdate(
            decision=Decision(action="finish", text=text, calls=[]),
            pending=[],
            trace=[TraceEvent(stage="decide", iteration=0, detail="finish")],
        )
    chosen = calls if context.policy.execute_all_tool_calls else calls[:1]
    active = set(state.get("active_tools", []))
    issues = [
        issue("TOOL_MISSING", f"the model asked for {c['name']!r}, which is not active", call=c)
        for c in chosen
        if c["name"] not in active
    ]
    skipped = [
        Message(role="tool", content=SKIPPED, tool_call_id=c["id"], name=c["name"])
        for c in calls[len(chosen) :]
    ]
    pending = [PendingCall(call=c, blocked=None, preview=context.tools.preview(c)) for c in chosen]
    return DecideUpdate(
        decision=Decision(action="tool", text=text, calls=chosen),
        pending=pending,
        issues=issues,
        messages=skipped,
        trace=[
            TraceEvent(
                stage="decide",
                iteration=0,
                tool=", ".join(c["name"] for c in chosen),
                detail=f"{len(chosen)} call(s)",
            )
        ],
    )
