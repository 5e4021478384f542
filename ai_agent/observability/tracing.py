"""Spans: the engine's thin tracing seam, with OpenTelemetry behind it only when asked for.

The engine opens spans through a `Tracer`. Two exist:

- `NullTracer` (the default) records nothing and exports nothing. It still gives every
  span W3C ids, so the ``traceparent`` header a model request carries is valid without
  OpenTelemetry;
- `OtelTracer` (``enable_otel_instrumentation = true``, the
  ``otel`` extra) creates real OpenTelemetry spans through the tracer provider the user gives, or
  OpenTelemetry's global one. Whatever is exported, and where to, is the provider's business:
  the engine never sets up an exporter.

Examples:
    >>> tracer = NullTracer()
    >>> with tracer.span("ai_agent.run", {"ai_agent.thread_id": "t1"}) as run:
    ...     with tracer.span("ai_agent.stage.draft", {}, parent=run) as stage:
    ...         pass
    >>> stage.trace_id == run.trace_id and stage.span_id != run.span_id
    True
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Literal, Protocol

from ai_agent.observability.ids import new_span_id, new_trace_id

__all__ = [
    "AttributeValue",
    "NullSpan",
    "NullTracer",
    "Span",
    "SpanKind",
    "SpanLink",
    "Tracer",
    "clean_attributes",
]

AttributeValue = str | bool | int | float | Sequence[str] | Sequence[int] | Sequence[float]
SpanKind = Literal["internal", "client"]


@dataclass(frozen=True, slots=True)
class SpanLink:
    """A link from a span to another span context (the thread a run belongs to)."""

    trace_id: str
    span_id: str
    attributes: Mapping[str, AttributeValue] = field(default_factory=dict)


class Span(Protocol):
    """One open span: its W3C ids, and what may be said about it while it is open."""

    @property
    def trace_id(self) -> str:
        """32 hex digits."""
        ...  # pragma: no cover - protocol

    @property
    def span_id(self) -> str:
        """16 hex digits."""
        ...  # pragma: no cover - protocol

    @property
    def sampled(self) -> bool:
        """Whether the span is recorded (the ``traceparent`` sampled flag)."""
        ...  # pragma: no cover - protocol

    @property
    def trace_state(self) -> str:
        """The W3C ``tracestate`` of the span's context, as a header value ("" when none)."""
        ...  # pragma: no cover - protocol

    def set(self, attributes: Mapping[str, AttributeValue | None]) -> None:
        """Add attributes (None values are left out)."""
        ...  # pragma: no cover - protocol

    def event(self, name: str, attributes: Mapping[str, AttributeValue | None]) -> None:
        """Add a timestamped event."""
        ...  # pragma: no cover - protocol

    def error(self, kind: str, message: str) -> None:
        """Mark the span failed; ``message`` must already be redacted."""
        ...  # pragma: no cover - protocol


class Tracer(Protocol):
    """Opens spans. ``parent`` is the engine's own parent span; OpenTelemetry uses its context."""

    def span(
        self,
        name: str,
        attributes: Mapping[str, AttributeValue | None],
        *,
        parent: Span | None = None,
        kind: SpanKind = "internal",
        links: Sequence[SpanLink] = (),
    ) -> AbstractContextManager[Span]:
        """A span around a block of work, a child of ``parent`` when given."""


def clean_attributes(
    attributes: Mapping[str, AttributeValue | None],
) -> dict[str, AttributeValue]:
    """The attributes without None values (OpenTelemetry rejects them).

    Examples:
        >>> clean_attributes({"a": 1, "b": None, "c": "x"})
        {'a': 1, 'c': 'x'}
    """
    return {k: v for k, v in attributes.items() if v is not None}


@dataclass(slots=True)
class NullSpan:
    """A span that records nothing; it only carries ids."""

    trace_id: str
    span_id: str
    sampled: bool = False
    trace_state: str = ""

    def set(self, attributes: Mapping[str, AttributeValue | None]) -> None:
        """Nothing is recorded."""

    def event(self, name: str, attributes: Mapping[str, AttributeValue | None]) -> None:
        """Nothing is recorded."""

    def error(self, kind: str, message: str) -> None:
        """Nothing is recorded."""


class NullTracer:
    """The default tracer: ids for every span, nothing recorded, nothing exported."""

    enabled = False

    @contextmanager
    def span(
        self,
        name: str,
        attributes: Mapping[str, AttributeValue | None],
        *,
        parent: Span | None = None,
        kind: SpanKind = "internal",
        links: Sequence[SpanLink] = (),
    ) -> Iterator[Span]:
        """A span under ``parent`` (same trace), or the root of a new trace."""
        trace_id = parent.trace_id if parent is not None else new_trace_id()
        yield NullSpan(trace_id, new_span_id())
