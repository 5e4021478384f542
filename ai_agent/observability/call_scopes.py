"""Scopes of a model call and of a tool call: an id, a span, a duration metric, log lines.

Opened inside a run scope (`ai_agent.observability.scopes`, where the span names and attributes
are listed) by the Agent's model and tool wrappers; outside one they are cheap no-ops.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ai_agent.observability._scope import SCOPE, Scope, elapsed_ms, error_text, interrupted
from ai_agent.observability.logs import engine_logger
from ai_agent.observability.redaction import cut_body
from ai_agent.observability.tooldata import ToolTelemetry, tool_telemetry

if TYPE_CHECKING:
    from ai_agent.context import ModelReply
    from ai_agent.state import ToolCall, ToolResult

__all__ = [
    "ModelCallScope",
    "ToolCallScope",
    "model_call_scope",
    "request_headers",
    "tool_call_scope",
]

log_model = engine_logger("ai_agent.models")
log_tool = engine_logger("ai_agent.tools")

_SNIPPET_CHARS = 160
_NAME_BYTES = 256


# Model calls --------------------------------------------------------------------------------


class ModelCallScope:
    """An open model call: its request id and the headers its HTTP request carries."""

    def __init__(self, scope: Scope | None, headers: Mapping[str, str]) -> None:
        self.scope = scope
        self.headers = dict(headers)
        self.reply: ModelReply | None = None

    @property
    def request_id(self) -> str:
        """The ``X-Request-ID`` of this call ("" outside a run)."""
        return self.scope.request_id if self.scope else ""

    def finish(self, reply: ModelReply) -> None:
        """The call returned ``reply``."""
        self.reply = reply


def request_headers() -> dict[str, str]:
    """The trace headers of the model call running now.

    Empty outside one, or when ``propagate_trace_context`` is off.
    """
    scope = SCOPE.get()
    if scope is None or not scope.request_id:
        return {}
    return scope.telemetry.trace_headers(scope.span, scope.request_id, scope.run_id)


@contextmanager
def model_call_scope(model: str) -> Iterator[ModelCallScope]:
    """The scope of one model call (all its attempts); a no-op outside a run scope."""
    outer = SCOPE.get()
    if outer is None:
        yield ModelCallScope(None, {})
        return
    telemetry = outer.telemetry
    request_id = telemetry.new_id()
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": model,
        "ai_agent.request_id": request_id,
        "ai_agent.stage": outer.stage or None,
        "ai_agent.iteration": outer.iteration,
        "ai_agent.thread_id": outer.thread_id,
    }
    started = time.perf_counter()
    with telemetry.tracer.span(
        f"chat {model}", attributes, parent=outer.span, kind="client"
    ) as span:
        scope = dataclasses.replace(outer, span=span, request_id=request_id, tool_call_id="")
        token = SCOPE.set(scope)
        call = ModelCallScope(scope, telemetry.trace_headers(span, request_id, outer.run_id))
        status = "ok"
        try:
            yield call
        except BaseException as exc:
            status = "error"
            elapsed = elapsed_ms(started)
            message = error_text(scope.redactor, exc)
            span.error(type(exc).__name__, message)
            if not interrupted(exc):
                log_model.error(
                    "model call to %s failed after %.0f ms: %s",
                    model,
                    elapsed,
                    message,
                    fields={"event": "model_call", "model": model, "status": status},
                )
            raise
        finally:
            elapsed = elapsed_ms(started)
            telemetry.record("ai_agent.model.duration", elapsed, {"model": model, "status": status})
            if call.reply is not None:
                _end_model_call(scope, model, call.reply, elapsed)
            SCOPE.reset(token)


def _end_model_call(scope: Scope, model: str, reply: ModelReply, elapsed: float) -> None:
    telemetry = scope.telemetry
    usage = reply.get("usage") or {}
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    # The server names the model it served: a name, never megabytes in a log line.
    served_by = cut_body(str(reply.get("model") or model), _NAME_BYTES)
    cost = telemetry.cost(served_by, usage) if usage and telemetry.cost else None
    attempts = int(reply.get("attempts", 1))
    scope.span.set(
        {
            "gen_ai.response.model": served_by,
            "gen_ai.usage.input_tokens": prompt,
            "gen_ai.usage.output_tokens": completion,
            "gen_ai.response.finish_reasons": [reply["finish_reason"]]
            if reply.get("finish_reason")
            else None,
            "ai_agent.cost": cost,
            "ai_agent.model.attempts": attempts,
            "ai_agent.model.streamed": bool(reply.get("streamed", False)),
            "ai_agent.model.latency_ms": float(reply.get("latency_ms", elapsed)),
        }
    )
    fields = {
        "event": "model_call",
        "model": served_by,
        "status": "ok",
        "duration_ms": elapsed,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "cost": cost,
        "attempts": attempts,
        "streamed": bool(reply.get("streamed", False)),
    }
    tokens = f"{prompt}+{completion} tokens" if usage else "no usage reported"
    log_model.info(
        "model call to %s: %s in %.0f ms%s",
        served_by,
        tokens,
        elapsed,
        f" ({attempts} attempts)" if attempts > 1 else "",
        fields=fields,
    )
    slow = telemetry.slow_response_ms
    if slow is not None and elapsed > slow:
        log_model.warning(
            "slow response: the model call to %s took %.3g s (over %.3g s)",
            served_by,
            elapsed / 1000,
            slow / 1000,
            fields={"event": "slow_response", "duration_ms": elapsed},
        )


# Tool calls ---------------------------------------------------------------------------------


class ToolCallScope:
    """An open tool call; `finish` gives it its result."""

    def __init__(self, scope: Scope | None) -> None:
        self.scope = scope
        self.result: ToolResult | None = None
        self.telemetry: ToolTelemetry = {}

    @property
    def tool_call_id(self) -> str:
        """The engine's id of this call ("" outside a run)."""
        return self.scope.tool_call_id if self.scope else ""

    def finish(self, call: ToolCall, result: ToolResult) -> None:
        """The call returned ``result``."""
        self.result = result
        if self.scope is not None:
            self.telemetry = tool_telemetry(call, result)


@contextmanager
def tool_call_scope(call: ToolCall, *, iteration: int | None = None) -> Iterator[ToolCallScope]:
    """The scope of one tool call (all its attempts); a no-op outside a run scope."""
    outer = SCOPE.get()
    if outer is None:
        yield ToolCallScope(None)
        return
    telemetry = outer.telemetry
    tool_call_id = telemetry.new_id()
    name = call["name"]
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call["id"],
        "ai_agent.tool_call_id": tool_call_id,
        "ai_agent.iteration": iteration if iteration is not None else outer.iteration,
        "ai_agent.thread_id": outer.thread_id,
    }
    started = time.perf_counter()
    with telemetry.tracer.span(f"execute_tool {name}", attributes, parent=outer.span) as span:
        scope = dataclasses.replace(outer, span=span, tool_call_id=tool_call_id, request_id="")
        token = SCOPE.set(scope)
        handle = ToolCallScope(scope)
        if log_tool.enabled(logging.DEBUG):
            log_tool.debug(
                "tool %s (call %s) arguments: %s",
                name,
                call["id"],
                # Masked whole, then cut: a key or a sensitive match the cut ran through would
                # no longer be recognised, and its first part would show.
                cut_body(scope.redactor(str(call.get("args"))), telemetry.body_size_limit),
                fields={"tool": name, "call_id": call["id"]},
            )
        try:
            yield handle
        except BaseException as exc:
            message = error_text(scope.redactor, exc)
            span.error(type(exc).__name__, message)
            telemetry.record(
                "ai_agent.tool.duration", elapsed_ms(started), {"tool": name, "status": "error"}
            )
            if not interrupted(exc):
                log_tool.error("tool %s raised %s: %s", name, type(exc).__name__, message)
            raise
        else:
            _end_tool_call(scope, call, handle, elapsed_ms(started))
        finally:
            SCOPE.reset(token)


def _end_tool_call(scope: Scope, call: ToolCall, handle: ToolCallScope, elapsed: float) -> None:
    result = handle.result or {"status": "unknown"}
    facts = handle.telemetry
    status = str(result.get("status", "unknown"))
    duration = float(result.get("execution_time_ms", elapsed))
    name = call["name"]
    scope.span.set(
        {
            "ai_agent.tool.status": status,
            "ai_agent.tool.duration_ms": duration,
            "ai_agent.tool.chars": facts.get("chars"),
            "ai_agent.tool.k": facts.get("k"),
            "ai_agent.tool.items": facts.get("item_count"),
            "ai_agent.tool.attempts": facts.get("attempts"),
            "ai_agent.tool.code": facts.get("code"),
        }
    )
    if status == "error":
        scope.span.error(
            str(facts.get("code") or "ToolError"),
            error_text(scope.redactor, result.get("error", "")),
        )
    scope.telemetry.record("ai_agent.tool.duration", duration, {"tool": name, "status": status})
    details = [
        f"{label}={facts[key]}"  # type: ignore[literal-required]
        for key, label in (
            ("chars", "chars"),
            ("k", "K"),
            ("item_count", "items"),
            ("attempts", "attempts"),
        )
        if key in facts
    ]
    fields: dict[str, Any] = {
        "event": "tool_call",
        "tool": name,
        "call_id": call["id"],
        "status": status,
        "duration_ms": duration,
        **{k: v for k, v in facts.items() if k != "items"},
    }
    log_tool.info(
        "tool %s %s in %.1f ms%s",
        name,
        status,
        duration,
        f" ({', '.join(details)})" if details else "",
        fields=fields,
    )
    if log_tool.enabled(logging.DEBUG):
        for rank, item in enumerate(facts.get("items", []), 1):
            snippet = scope.redactor(str(item.get("snippet", "")))  # masked before it is cut
            shown = snippet if len(snippet) <= _SNIPPET_CHARS else snippet[:_SNIPPET_CHARS] + "..."
            log_tool.debug(
                "retrieved #%d %s%s score=%s: %s",
                rank,
                item.get("path", ""),
                f" #{item['section']}" if item.get("section") else "",
                item.get("score"),
                shown,
                fields={
                    "event": "retrieved_item",
                    "tool": name,
                    "rank": rank,
                    **item,
                    "snippet": shown,
                },
            )
