"""The current run's observability scope: one context variable, read by logs, spans and headers.

A scope is immutable; entering a stage, a model call or a tool call sets a new one (the outer
fields copied) and restores the previous one on the way out. A context variable, so each asyncio
task (and each worker thread started with the task's context) sees its own run's ids.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ai_agent.observability.redaction import cut_body

if TYPE_CHECKING:
    from ai_agent.observability.redaction import Redactor
    from ai_agent.observability.tracing import Span, Tracer

__all__ = [
    "ERROR_BYTES",
    "SCOPE",
    "CostFunction",
    "Observer",
    "Scope",
    "current_ids",
    "elapsed_ms",
    "error_text",
    "interrupted",
]

CostFunction = Callable[[str, Mapping[str, Any]], float | None]
# An error's text in a log line or a span: a model server's error page or a tool's output quoted
# in an exception can be megabytes, and would be written whole into one record and one span.
ERROR_BYTES = 4096


class Observer(Protocol):
    """What the scopes need from the Agent's observability (`Telemetry` is the one there is).

    Named here, below the scopes and `Telemetry` both, so the scopes see only these members
    and `Telemetry` (which opens the run scope) imports the scopes, never the other way round.
    """

    redactor: Redactor
    tracer: Tracer
    cost: CostFunction | None

    @property
    def body_size_limit(self) -> int:
        """Bytes of a body (or of tool arguments) shown in a log line."""
        ...

    @property
    def slow_response_ms(self) -> float | None:
        """Model calls slower than this are logged at WARNING."""
        ...

    def new_id(self) -> str:
        """A fresh id in the configured format."""
        ...

    def record(self, name: str, value: float, attributes: Mapping[str, Any]) -> None:
        """Hand one duration to the metrics collectors."""
        ...

    def trace_headers(self, span: Span, request_id: str, run_id: str) -> dict[str, str]:
        """The headers a model request carries."""
        ...


@dataclass(frozen=True, slots=True)
class Scope:
    """Where the code running now is: which run, stage, model call or tool call."""

    telemetry: Observer
    redactor: Redactor
    span: Span
    thread_id: str
    run_id: str
    stage: str = ""
    stage_id: str = ""
    iteration: int | None = None
    step: int | None = None
    request_id: str = ""
    tool_call_id: str = ""

    def ids(self) -> dict[str, Any]:
        """The correlation ids that are set, trace and span ids included."""
        out: dict[str, Any] = {"thread_id": self.thread_id, "run_id": self.run_id}
        if self.stage:
            out["stage"] = self.stage
            out["stage_id"] = self.stage_id
        if self.iteration is not None:
            out["iteration"] = self.iteration
        if self.step is not None:
            out["step"] = self.step
        if self.request_id:
            out["request_id"] = self.request_id
        if self.tool_call_id:
            out["tool_call_id"] = self.tool_call_id
        out["trace_id"] = self.span.trace_id
        out["span_id"] = self.span.span_id
        return out


SCOPE: ContextVar[Scope | None] = ContextVar("ai_agent_observability_scope", default=None)


def current_ids() -> dict[str, Any]:
    """The correlation ids of the code running now; empty outside a run.

    Keys, when set: ``thread_id``, ``run_id``, ``stage``, ``stage_id``, ``iteration``, ``step``
    (LangGraph's), ``request_id`` (inside a model call: its ``X-Request-ID``), ``tool_call_id``
    (inside a tool call), ``trace_id`` and ``span_id`` (W3C, of the innermost span).

    Examples:
        >>> current_ids()
        {}
    """
    scope = SCOPE.get()
    return scope.ids() if scope is not None else {}


def elapsed_ms(started: float) -> float:
    """Milliseconds since ``started`` (a `time.perf_counter` reading), as every scope logs them."""
    return round((time.perf_counter() - started) * 1000, 3)


def error_text(redactor: Redactor, error: object) -> str:
    """An error's text fit for a log line or a span: redacted whole, then cut to `ERROR_BYTES`.

    Masked before it is cut, so a key the cut runs through is still recognised and masked.
    """
    return cut_body(redactor(str(error)), ERROR_BYTES)


def interrupted(exc: BaseException) -> bool:
    """Whether a scope ended because its task was cancelled or interrupted (not a failure)."""
    if isinstance(exc, KeyboardInterrupt | GeneratorExit):
        return True
    import asyncio  # here, not at the top: importing the package stays cheap

    return isinstance(exc, asyncio.CancelledError)
