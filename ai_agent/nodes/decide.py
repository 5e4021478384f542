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

__all__ = ["SKIPPED", "DecideUpdate", "canonical_call", "decide", "over_limit"]

SKIPPED = "Skipped: one action per cycle. Call it again next cycle if it is still needed."


def over_limit(limit: int) -> str:
    """What the model is told of a call past ``max_tool_calls`` (it was not run).

    Examples:
        >>> over_limit(3)
        'Not run: at most 3 tool calls run per turn (max_tool_calls). Call it again next turn if it is still needed.'
    """  # noqa: E501 - a doctest's output is one line
    return (
        f"Not run: at most {limit} tool calls run per turn (max_tool_calls). "
        "Call it again next turn if it is still needed."
    )


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
    """Pick the call(s) to run this cycle: the first by default; with execute_all_tool_calls,
    the first ``max_tool_calls`` of them.

    A call to a tool that is not active is a TOOL_MISSING issue. Calls not picked get a tool
    message at once saying they were not run (so the conversation stays valid for the model,
    and it may ask again next turn); the trace counts them.
    """  # noqa: D205 - the summary names both policies
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
    policy = context.policy
    limit = policy.max_tool_calls if policy.execute_all_tool_calls else 1
    picked = calls[:limit]
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
    not_run = over_limit(limit) if policy.execute_all_tool_calls else SKIPPED
    skipped = [
        Message(role="tool", content=not_run, tool_call_id=c["id"], name=c["name"])
        for c in calls[len(chosen) :]
    ]
    detail = f"{len(chosen)} call(s)"
    if skipped:
        detail += f", {len(skipped)} not run (limit {limit} per turn)"
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
                detail=detail,
            )
        ],
    )
