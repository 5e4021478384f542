"""OpenTelemetry spans, for ``ObservabilityConfig(enable_otel_instrumentation=True)``.

Needs the ``otel`` extra (``pip install 'ai-agent[otel]'``); this module is imported only when
instrumentation is enabled, so ``import ai_agent`` never loads OpenTelemetry.

The spans go to the tracer provider passed to the Agent (``Agent(tracer_provider=...)``), else to
OpenTelemetry's global provider, which exports nothing until the application installs one. The
engine never creates a provider or an exporter: no data leaves the machine unless the
application sends it somewhere.

Spans nest through OpenTelemetry's own context: a run started inside an application's span
becomes its child, and stage, model-call and tool-call spans are children of the run's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ai_agent.errors import ConfigError
from ai_agent.observability.redaction import Redactor, cut_body
from ai_agent.observability.tracing import (
    AttributeValue,
    Span,
    SpanKind,
    SpanLink,
    clean_attributes,
)

if TYPE_CHECKING:
    from opentelemetry.trace import Span as OtelSpanType
    from opentelemetry.trace import TracerProvider

# A text attribute at most: a server names the model it served, its finish reason... in what it
# sends back, and a span (exported who knows where) should not carry megabytes of it.
ATTRIBUTE_BYTES = 4096


def _redacted(
    redact: Redactor, attributes: Mapping[str, AttributeValue | None]
) -> dict[str, AttributeValue]:
    """The attributes without None values, every text in them redacted and cut.

    Some values come from outside the engine (a server's model name and finish reason, a
    thread id): masked here, where every attribute passes, so no caller can forget it.
    """
    out: dict[str, AttributeValue] = {}
    for key, value in clean_attributes(attributes).items():
        if isinstance(value, str):
            out[key] = cut_body(redact(value), ATTRIBUTE_BYTES)
        elif isinstance(value, list | tuple) and any(isinstance(v, str) for v in value):
            out[key] = [cut_body(redact(str(v)), ATTRIBUTE_BYTES) for v in value]
        else:
            out[key] = value
    return out


__all__ = ["OtelSpan", "OtelTracer"]

INSTRUMENTATION_NAME = "ai_agent"


class OtelSpan:
    """An OpenTelemetry span behind the engine's `Span`."""

    def __init__(self, span: OtelSpanType, redactor: Redactor | None = None) -> None:
        self.otel_span = span
        self.redactor = redactor or Redactor()
        context = span.get_span_context()
        self._context = context

    @property
    def trace_id(self) -> str:
        """32 hex digits."""
        return f"{self._context.trace_id:032x}"

    @property
    def span_id(self) -> str:
        """16 hex digits."""
        return f"{self._context.span_id:016x}"

    @property
    def sampled(self) -> bool:
        """Whether the span is sampled (recorded and exported by the provider)."""
        return bool(self._context.trace_flags.sampled)

    @property
    def trace_state(self) -> str:
        """The span context's ``tracestate`` header value."""
        return str(self._context.trace_state.to_header())

    def set(self, attributes: Mapping[str, AttributeValue | None]) -> None:
        """Add attributes (None values are left out, texts redacted)."""
        self.otel_span.set_attributes(_redacted(self.redactor, attributes))

    def event(self, name: str, attributes: Mapping[str, AttributeValue | None]) -> None:
        """Add a span event (texts redacted)."""
        self.otel_span.add_event(name, _redacted(self.redactor, attributes))

    def error(self, kind: str, message: str) -> None:
        """Status ERROR and an ``exception`` event, without a stack trace (it may hold values)."""
        from opentelemetry.trace import Status, StatusCode

        event = _redacted(self.redactor, {"exception.type": kind, "exception.message": message})
        self.otel_span.set_status(
            Status(StatusCode.ERROR, f"{event['exception.type']}: {event['exception.message']}")
        )
        self.otel_span.add_event("exception", event)


class OtelTracer:
    """Creates OpenTelemetry spans through ``provider`` (default: the global provider).

    ``redactor`` masks every text attribute (the Agent's, which knows its secrets).

    Raises:
        ConfigError: OpenTelemetry is not installed.
    """

    enabled = True

    def __init__(
        self, provider: TracerProvider | None = None, redactor: Redactor | None = None
    ) -> None:
        self.redactor = redactor or Redactor()
        try:
            from opentelemetry import trace
        except ImportError:
            raise ConfigError(
                "observability.enable_otel_instrumentation is on but OpenTelemetry is not "
                "installed; install the extra: pip install 'ai-agent[otel]'"
            ) from None
        from importlib.metadata import PackageNotFoundError, version

        try:
            own_version = version("ai-agent")
        except PackageNotFoundError:  # pragma: no cover - running from a source tree
            own_version = "0"
        self._trace: Any = trace
        source = provider if provider is not None else trace.get_tracer_provider()
        self._tracer = source.get_tracer(INSTRUMENTATION_NAME, own_version)

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
        """An OpenTelemetry span, current for the block; its parent is the current span.

        ``parent`` is not needed: OpenTelemetry's context already says which span is current.
        Exceptions are not recorded here (their text may hold values): the engine reports them
        through `OtelSpan.error`, redacted.
        """
        trace = self._trace
        otel_links = [
            trace.Link(
                trace.SpanContext(
                    trace_id=int(link.trace_id, 16),
                    span_id=int(link.span_id, 16),
                    is_remote=True,
                ),
                _redacted(self.redactor, link.attributes),
            )
            for link in links
        ]
        with self._tracer.start_as_current_span(
            cut_body(self.redactor(name), ATTRIBUTE_BYTES),  # "execute_tool <the model's name>"
            kind=trace.SpanKind.CLIENT if kind == "client" else trace.SpanKind.INTERNAL,
            attributes=_redacted(self.redactor, attributes),
            links=otel_links,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            yield OtelSpan(span, self.redactor)
