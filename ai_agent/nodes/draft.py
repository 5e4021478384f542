"""draft: one model call with the conversation and the active tools' schemas."""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.runtime import Runtime

from ai_agent.context import RunContext
from ai_agent.errors import (
    CircuitOpenError,
    ModelAuthError,
    ModelRateLimitError,
    ModelResponseError,
)
from ai_agent.nodes._common import stage
from ai_agent.nodes._issues import issue
from ai_agent.state import Issue, Message, RunState, TraceEvent

__all__ = ["DraftUpdate", "compose_messages", "draft"]

# Model failures the gate can help with; anything else (an unreachable server, a broken script)
# fails the run with a clear message and leaves the last checkpoint resumable.
_GATED: tuple[tuple[type[Exception], str], ...] = (
    (ModelRateLimitError, "RATE_LIMIT"),
    (ModelAuthError, "AUTH"),
    (CircuitOpenError, "CIRCUIT_OPEN"),
    (ModelResponseError, "MODEL_ERROR"),
)


class DraftUpdate(TypedDict, total=False):
    iteration: int
    messages: list[Message]
    issues: list[Issue]
    usage: dict[str, Any]
    trace: list[TraceEvent]


def compose_messages(system_prompt: str, messages: list[Message]) -> list[Message]:
    """The request's messages: the system prompt (from the context, never from state) first."""
    head = [Message(role="system", content=system_prompt)] if system_prompt else []
    return head + list(messages)


def _add_usage(total: dict[str, Any] | None, usage: dict[str, Any]) -> dict[str, Any]:
    out = dict(total or {})
    for key, value in usage.items():
        out[key] = out.get(key, 0) + value
    out["requests"] = out.get("requests", 0) + 1
    return out


@stage("draft")
async def draft(state: RunState, *, runtime: Runtime[RunContext]) -> DraftUpdate:
    """Call the model once; a gated model failure becomes an issue instead of a reply."""
    context = runtime.context
    iteration = state.get("iteration", 0) + 1
    tools = context.tools.schemas(list(state.get("active_tools", [])))
    messages = compose_messages(context.policy.system_prompt, state.get("messages", []))
    context.emit({"type": "model_waiting", "stage": "draft", "iteration": iteration})
    try:
        reply = await context.model(messages, tools)
    except Exception as exc:
        for kind, code in _GATED:
            if isinstance(exc, kind):
                return DraftUpdate(
                    iteration=iteration,
                    issues=[issue(code, str(exc))],
                    trace=[
                        TraceEvent(stage="draft", iteration=iteration, status="error", detail=code)
                    ],
                )
        raise
    usage = reply["usage"]
    line = TraceEvent(stage="draft", iteration=iteration, detail=_summary(reply["message"]))
    if usage:
        line["tokens"] = usage.get("total_tokens", 0)  # type: ignore[typeddict-unknown-key]
    return DraftUpdate(
        iteration=iteration,
        messages=[reply["message"]],
        usage=_add_usage(state.get("usage"), usage),
        trace=[line],
    )


def _summary(message: Message) -> str:
    calls = message.get("tool_calls") or []
    if calls:
        return "tool call: " + ", ".join(c["name"] for c in calls)
    return "text reply"
