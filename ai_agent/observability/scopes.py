"""Scopes: a run, a stage, a model call, a tool call.

Each gets an id, a span, a duration metric and its log lines.

The Agent opens a run scope around each run or resume (`Telemetry.run`); inside it the stage
wrapper opens a stage scope, and the Agent's model and tool wrappers open model-call and tool-call
scopes. Outside a run scope every scope here is a cheap no-op, so stages and callers can be used
alone (in tests, in a hook) without any of it.

Span names and attributes (OpenTelemetry's ``gen_ai`` conventions where they exist):

==========================  ================================================================
``ai_agent.run``            ``ai_agent.thread_id``, ``ai_agent.run_id``, ``ai_agent.run.resumed``,
                            ``ai_agent.run.status``, ``ai_agent.iterations``, token and cost
                            totals; linked to the thread (see ``ids.thread_span_context``)
``ai_agent.stage.<name>``   ``ai_agent.stage``, ``ai_agent.stage.id``, ``ai_agent.iteration``,
                            ``ai_agent.step``, ``ai_agent.stage.status``; the gate's severity,
                            threshold and issue codes when it pauses or takes a plan
``chat <model>``            ``gen_ai.operation.name`` = chat, ``gen_ai.request.model``,
                            ``ai_agent.request_id`` (the ``X-Request-ID``),
                            ``gen_ai.usage.input_tokens`` / ``output_tokens``, ``ai_agent.cost``
                            (when rates are configured), attempts, streamed, finish reason
``execute_tool <name>``     ``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
                            ``ai_agent.tool_call_id``, ``ai_agent.tool.status``,
                            ``ai_agent.tool.duration_ms``, chars read, K, item count, attempts
==========================  ================================================================
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ai_agent.errors import AgentError
from ai_agent.observability._scope import SCOPE, Observer, Scope
from ai_agent.observability.ids import thread_span_context
from ai_agent.observability.logs import engine_logger
from ai_agent.observability.redaction import cut_body
from ai_agent.observability.tooldata import ToolTelemetry, tool_telemetry
from ai_agent.observability.tracing import AttributeValue, SpanLink

if TYPE_CHECKING:
    from ai_agent.context import ModelReply
    from ai_agent.state import ToolCall, ToolResult

__all__ = [
    "ModelCallScope",
    "RunScope",
    "StageScope",
    "ToolCallScope",
    "model_call_scope",
    "request_headers",
    "run_scope",
    "set_iteration",
    "stage_scope",
    "tool_call_scope",
]

log_run = engine_logger("ai_agent.run")
log_stage = engine_logger("ai_agent.stages")
log_model = engine_logger("ai_agent.models")
log_tool = engine_logger("ai_agent.tools")

_SNIPPET_CHARS = 160


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def _interrupted(exc: BaseException) -> bool:
    if isinstance(exc, KeyboardInterrupt | GeneratorExit):
        return True
    import asyncio  # here, not at the top: importing the package stays cheap

    return isinstance(exc, asyncio.CancelledError)


# Runs ---------------------------------------------------------------------------------------


class RunScope:
    """An open run: its ids; `finish` says how it ended."""

    def __init__(self, scope: Scope, resumed: bool) -> None:
        self.scope = scope
        self.resumed = resumed
        self.status: str | None = None
        self.error: str | None = None
        self.iterations: int | None = None
        self.usage: Mapping[str, Any] = {}

    @property
    def run_id(self) -> str:
        """This run's id (a resume is a new run of the same thread)."""
        return self.scope.run_id

    @property
    def thread_id(self) -> str:
        """The thread the run belongs to."""
        return self.scope.thread_id

    @property
    def trace_id(self) -> str:
        """The W3C trace id of the run's span."""
        return self.scope.span.trace_id

    def finish(
        self,
        status: str,
        *,
        error: str | None = None,
        iterations: int | None = None,
        usage: Mapping[str, Any] | None = None,
    ) -> None:
        """Record the outcome: completed, paused, failed or cancelled."""
        self.status, self.error, self.iterations = status, error, iterations
        self.usage = dict(usage or {})


@contextmanager
def run_scope(telemetry: Observer, thread_id: str, *, resumed: bool = False) -> Iterator[RunScope]:
    """The scope of one run (see `Telemetry.run`)."""
    run_id = telemetry.new_id()
    trace_id, span_id = thread_span_context(thread_id)
    link = SpanLink(trace_id, span_id, {"ai_agent.link": "thread", "ai_agent.thread_id": thread_id})
    attributes: dict[str, AttributeValue | None] = {
        "ai_agent.thread_id": thread_id,
        "ai_agent.run_id": run_id,
        "ai_agent.run.resumed": resumed,
    }
    started = time.perf_counter()
    with telemetry.tracer.span("ai_agent.run", attributes, links=[link]) as span:
        scope = Scope(telemetry, telemetry.redactor, span, thread_id, run_id)
        token = SCOPE.set(scope)
        run = RunScope(scope, resumed)
        log_run.info(
            "run %s (thread %s)",
            "resumed" if resumed else "started",
            thread_id,
            fields={"event": "run_started", "resumed": resumed},
        )
        try:
            yield run
        except BaseException as exc:
            if run.status is None:
                run.finish("cancelled" if _interrupted(exc) else "failed", error=type(exc).__name__)
                _end_run(run, _ms(started), exc)
            raise
        else:
            if run.status is None:  # the caller never said: it ended without a result
                run.finish("failed", error="the run ended without a result")
            _end_run(run, _ms(started), None)
        finally:
            SCOPE.reset(token)


def _end_run(run: RunScope, elapsed: float, exc: BaseException | None) -> None:
    scope = run.scope
    status = str(run.status)
    usage = run.usage
    scope.span.set(
        {
            "ai_agent.run.status": status,
            "ai_agent.iterations": run.iterations,
            "gen_ai.usage.input_tokens": usage.get("prompt_tokens"),
            "gen_ai.usage.output_tokens": usage.get("completion_tokens"),
            "ai_agent.cost": usage.get("cost") or None,
        }
    )
    error = scope.redactor(run.error or "")
    if status == "failed":
        scope.span.error(type(exc).__name__ if exc else "RunFailed", error)
    scope.telemetry.record("ai_agent.run.duration", elapsed, {"status": status})
    fields = {
        "event": "run_finished",
        "status": status,
        "duration_ms": elapsed,
        "iterations": run.iterations,
        "total_tokens": usage.get("total_tokens"),
    }
    took = f"{elapsed / 1000:.2f} s"
    if status == "failed":
        # An exception that is not the engine's own is a bug: the traceback helps. The engine's
        # own errors (a full disk, a lost lease) say what happened; their text is enough.
        own = isinstance(exc, AgentError)
        detail = f"{error}: {scope.redactor(str(exc))}" if own else error
        log_run.error(
            "run failed after %s: %s", took, detail, fields=fields, exc=None if own else exc
        )
    elif exc is not None:
        log_run.warning("run interrupted after %s (%s); it can be resumed", took, error)
    else:
        count = run.iterations or 0
        log_run.info(
            "run %s in %s (%d iteration%s)",
            status,
            took,
            count,
            "" if count == 1 else "s",
            fields=fields,
        )


# Stages -------------------------------------------------------------------------------------


class StageScope:
    """An open stage. ``None`` scope: no run is observed, every method does nothing."""

    def __init__(self, scope: Scope | None) -> None:
        self.scope = scope
        self.paused = False
        self.iteration: int | None = scope.iteration if scope else None

    def pause(self, report: Mapping[str, Any] | None) -> None:
        """The gate paused the run for a plan (its interrupt passes through this stage)."""
        self.paused = True
        if self.scope is None:
            return
        report = report or {}
        codes = [str(i.get("code")) for i in report.get("issues", [])]
        self.scope.span.set(_gate_attributes(report, codes) | {"ai_agent.gate.paused": True})
        self.scope.span.event("gate.paused", {"ai_agent.gate.severity": report.get("severity")})
        log_stage.info(
            "paused at the gate: severity %.2f at or over %.2f (%s); waiting for a plan",
            float(report.get("severity") or 0.0),
            float(report.get("threshold") or 0.0),
            ", ".join(codes) or "no issues",
            fields={"event": "gate_paused", "severity": report.get("severity"), "issues": codes},
        )

    def finish(self, iteration: int | None) -> None:
        """The stage returned; ``iteration`` is the run's iteration after it."""
        if iteration is not None:
            self.iteration = iteration


def _gate_attributes(report: Mapping[str, Any], codes: list[str]) -> dict[str, Any]:
    return {
        "ai_agent.gate.severity": report.get("severity"),
        "ai_agent.gate.threshold": report.get("threshold"),
        "ai_agent.gate.issues": codes,
    }


@contextmanager
def stage_scope(name: str, iteration: int, *, step: int | None = None) -> Iterator[StageScope]:
    """The scope of one stage; a no-op outside a run scope."""
    outer = SCOPE.get()
    if outer is None:
        yield StageScope(None)
        return
    telemetry = outer.telemetry
    stage_id = telemetry.new_id()
    attributes: dict[str, AttributeValue | None] = {
        "ai_agent.stage": name,
        "ai_agent.stage.id": stage_id,
        "ai_agent.iteration": iteration,
        "ai_agent.step": step,
        "ai_agent.thread_id": outer.thread_id,
        "ai_agent.run_id": outer.run_id,
    }
    started = time.perf_counter()
    with telemetry.tracer.span(f"ai_agent.stage.{name}", attributes, parent=outer.span) as span:
        scope = dataclasses.replace(
            outer, span=span, stage=name, stage_id=stage_id, iteration=iteration, step=step
        )
        token = SCOPE.set(scope)
        stage = StageScope(scope)
        status = "ok"
        log_stage.debug("stage %s started", name)
        try:
            yield stage
        except BaseException as exc:
            if stage.paused:
                status = "paused"
            else:
                status = "error"
                span.error(type(exc).__name__, scope.redactor(str(exc)))
            raise
        finally:
            elapsed = _ms(started)
            span.set({"ai_agent.stage.status": status, "ai_agent.iteration": stage.iteration})
            telemetry.record("ai_agent.stage.duration", elapsed, {"stage": name, "status": status})
            log_stage.debug(
                "stage %s %s in %.1f ms",
                name,
                {"ok": "done", "paused": "paused"}.get(status, "failed"),
                elapsed,
                fields={"event": "stage_finished", "status": status, "duration_ms": elapsed},
            )
            SCOPE.reset(token)


def set_iteration(iteration: int) -> None:
    """Say which iteration the current stage works on (draft starts the next one)."""
    scope = SCOPE.get()
    if scope is not None and scope.iteration != iteration:
        SCOPE.set(dataclasses.replace(scope, iteration=iteration))


def note_gate_plan(report: Mapping[str, Any], plan: Mapping[str, Any], source: str) -> None:
    """The gate took a plan (from a resume or the ``query_user_plan`` hook): span and log."""
    scope = SCOPE.get()
    if scope is None:
        return
    codes = [str(i.get("code")) for i in report.get("issues", [])]
    allow = bool(plan.get("allow_continue", True))
    scope.span.set(
        _gate_attributes(report, codes)
        | {"ai_agent.gate.plan_source": source, "ai_agent.gate.allow_continue": allow}
    )
    scope.span.event("gate.resumed", {"ai_agent.gate.allow_continue": allow})
    log_stage.info(
        "gate %s a plan (%s): %s",
        "resumed with" if source == "resume" else "got",
        source,
        "continue" if allow else "stop",
        fields={
            "event": "gate_resumed",
            "source": source,
            "allow_continue": allow,
            "approve": list(plan.get("approve") or []),
            "deny": list(plan.get("deny") or []),
            "activate_tools": list(plan.get("activate_tools") or []),
        },
    )


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
            elapsed = _ms(started)
            message = scope.redactor(str(exc))
            span.error(type(exc).__name__, message)
            if not _interrupted(exc):
                log_model.error(
                    "model call to %s failed after %.0f ms: %s",
                    model,
                    elapsed,
                    message,
                    fields={"event": "model_call", "model": model, "status": status},
                )
            raise
        finally:
            elapsed = _ms(started)
            telemetry.record("ai_agent.model.duration", elapsed, {"model": model, "status": status})
            if call.reply is not None:
                _end_model_call(scope, model, call.reply, elapsed)
            SCOPE.reset(token)


def _end_model_call(scope: Scope, model: str, reply: ModelReply, elapsed: float) -> None:
    telemetry = scope.telemetry
    usage = reply.get("usage") or {}
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    served_by = reply.get("model") or model
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
                cut_body(str(call.get("args")), telemetry.body_size_limit),
                fields={"tool": name, "call_id": call["id"]},
            )
        try:
            yield handle
        except BaseException as exc:
            message = scope.redactor(str(exc))
            span.error(type(exc).__name__, message)
            telemetry.record(
                "ai_agent.tool.duration", _ms(started), {"tool": name, "status": "error"}
            )
            if not _interrupted(exc):
                log_tool.error("tool %s raised %s: %s", name, type(exc).__name__, message)
            raise
        else:
            _end_tool_call(scope, call, handle, _ms(started))
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
            str(facts.get("code") or "ToolError"), scope.redactor(str(result.get("error", "")))
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
            snippet = str(item.get("snippet", ""))
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
