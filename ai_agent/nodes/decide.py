"""decide: turn the draft into this cycle's action (tool calls) or "finish".

The model calls tools by their wire names (``fs__read_file``: OpenAI names allow no dots); the
decision uses each tool's own name (``fs.read_file``), which is what state, grants, plans and the
journal speak. The assistant message itself keeps what the model said. Calls are known by the
engine's ids (given by draft), so two calls that share a model id are two calls here, each
settled and answered on its own.
"""

from __future__ import annotations

from typing import TypedDict

from langgraph.runtime import Runtime

from ai_agent.context import RunContext, ToolBox
from ai_agent.issues import IssueKind
from ai_agent.nodes._common import last_assistant, stage
from ai_agent.nodes._issues import issue
from ai_agent.state import Decision, Issue, Message, PendingCall, RunState, ToolCall, TraceEvent

__all__ = ["SKIPPED", "DecideUpdate", "canonical_call", "decide"]

SKIPPED = "Skipped: one action per cycle. Call it again next cycle if it is still needed."


def canonical_call(call: ToolCall, tools: ToolBox) -> ToolCall:
    """The call under its tool's own name (the model may have used the wire name)."""
    info = tools.info(call["name"])
    if info is None or info["name"] == call["name"]:
        return call
    named = ToolCall(**call)
    named["name"] = info["name"]
    return named


class DecideUpdate(TypedDict, total=False):
    """What the decide stage writes to the run state."""

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
    picked = calls if context.policy.execute_all_tool_calls else calls[:1]
    chosen = [canonical_call(c, context.tools) for c in picked]
    active = set(state.get("active_tools", []))
    issues = [
        issue(
            IssueKind.TOOL_MISSING,
            f"the model asked for {c['name']!r}, which is not active",
            call=c,
        )
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
