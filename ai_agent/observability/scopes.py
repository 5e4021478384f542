"""Scopes: a run, a stage, a model call, a tool call.

Each gets an id, a span, a duration metric and its log lines.

The Agent opens a run scope around each run or resume (`Telemetry.run`); inside it the stage
wrapper opens a stage scope, and the Agent's model and tool wrappers open model-call and tool-call
scopes (those two live in `ai_agent.observability.call_scopes`; this module names them too).
Outside a run scope every scope here is a cheap no-op, so stages and callers can be used alone
(in tests, in a hook) without any of it.

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
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from ai_agent.errors import AgentError
from ai_agent.observability._scope import (
    SCOPE,
    Observer,
    Scope,
    elapsed_ms,
    error_text,
    interrupted,
)
from ai_agent.observability.call_scopes import (
    ModelCallScope,
    ToolCallScope,
    model_call_scope,
    request_headers,
    tool_call_scope,
)
from ai_agent.observability.ids import thread_span_context
from ai_agent.observability.logs import engine_logger
from ai_agent.observability.tracing import AttributeValue, SpanLink

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
                run.finish("cancelled" if interrupted(exc) else "failed", error=type(exc).__name__)
                _end_run(run, elapsed_ms(started), exc)
            raise
        else:
            if run.status is None:  # the caller never said: it ended without a result
                run.finish("failed", error="the run ended without a result")
            _end_run(run, elapsed_ms(started), None)
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
    error = error_text(scope.redactor, run.error or "")
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
        detail = f"{error}: {error_text(scope.redactor, exc)}" if own else error
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
                span.error(type(exc).__name__, error_text(scope.redactor, exc))
            raise
        finally:
            elapsed = elapsed_ms(started)
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
