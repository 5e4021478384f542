"""Telemetry: one Agent's observability, built from its settings.

It holds what the scopes need: the id format, the redactor (with the secrets the Agent knows),
the tracer (OpenTelemetry only when enabled), the metrics collectors, the listeners of lifecycle
events, and the logging settings that shape records (bodies, size limit, slow threshold). It is
per Agent, never process-wide: two Agents in one process may observe differently.

Examples:
    >>> from ai_agent.config import ObservabilityConfig
    >>> telemetry = Telemetry(observability=ObservabilityConfig(request_id_format="ulid"))
    >>> with telemetry.run("thread-1") as run:
    ...     run.finish("completed", iterations=1)
    >>> len(run.run_id), telemetry.metrics.stats("ai_agent.run.duration").count
    (26, 1)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from ai_agent.observability._scope import CostFunction
from ai_agent.observability.hooks import Listeners
from ai_agent.observability.ids import new_id
from ai_agent.observability.logs import engine_logger
from ai_agent.observability.metrics import (
    DurationMetrics,
    Metric,
    MetricsCollector,
    as_collector,
    load_collectors,
)
from ai_agent.observability.redaction import Redactor, SecretValues
from ai_agent.observability.scopes import RunScope, run_scope
from ai_agent.observability.tracing import NullTracer, Span, Tracer

if TYPE_CHECKING:
    from ai_agent.config import AgentSettings, LoggingConfig, ObservabilityConfig
    from ai_agent.observability.httplog import HttpLog

__all__ = ["CostFunction", "Telemetry", "tracestate"]

log = engine_logger("ai_agent.telemetry")
log_metrics = engine_logger("ai_agent.metrics")

# The tracestate key of the engine (W3C: lower-case letters, digits and _-*/).
TRACESTATE_KEY = "aiagent"


def tracestate(existing: str, run_id: str) -> str:
    """A ``tracestate`` with the engine's entry first (W3C: a changed entry moves to the front).

    Examples:
        >>> tracestate("rojo=00f067aa0ba902b7,aiagent=old", "run1")
        'aiagent=run1,rojo=00f067aa0ba902b7'
    """
    others = [
        entry.strip()
        for entry in existing.split(",")
        if entry.strip() and entry.split("=", 1)[0].strip() != TRACESTATE_KEY
    ]
    # W3C allows 32 entries; ours replaces the last one if the list is full.
    return ",".join([f"{TRACESTATE_KEY}={run_id}", *others][:32])


class Telemetry:
    """Ids, redaction, spans, metrics and listeners for one Agent.

    Args:
        logging: The logging settings (default: ``LoggingConfig()``).
        observability: The observability settings (default: ``ObservabilityConfig()``).
        secrets: Values always masked in logs and spans (API keys), or a `SecretValues` to share.
        tracer_provider: An OpenTelemetry ``TracerProvider`` for the spans (default: the global
            one). Used only when ``enable_otel_instrumentation`` is on.
        collectors: Metrics collectors besides those of ``custom_collectors``.
        cost: ``cost(model, usage) -> float | None``: what a model call cost, when rates are known.

    Raises:
        ConfigError: A custom collector cannot be loaded, or instrumentation is enabled without
            OpenTelemetry installed.
    """

    def __init__(
        self,
        logging: LoggingConfig | None = None,
        observability: ObservabilityConfig | None = None,
        *,
        secrets: Iterable[str] | SecretValues = (),
        tracer_provider: Any = None,
        collectors: Iterable[Any] = (),
        cost: CostFunction | None = None,
    ) -> None:
        from ai_agent.config import LoggingConfig, ObservabilityConfig

        self.logging = logging if logging is not None else LoggingConfig()
        self.config = observability if observability is not None else ObservabilityConfig()
        self.redactor = Redactor.from_config(self.logging, secrets)
        self.listeners = Listeners()
        self.cost = cost
        self.tracer: Tracer = NullTracer()
        if self.config.enable_otel_instrumentation:
            from ai_agent.observability.otel import OtelTracer

            self.tracer = OtelTracer(tracer_provider, self.redactor)
        elif tracer_provider is not None:
            log.info(
                "a tracer provider was given but observability.enable_otel_instrumentation is "
                "off: no spans are created"
            )
        self.metrics: DurationMetrics | None = None
        self._collectors: tuple[MetricsCollector, ...] = ()
        if self.config.metrics_enabled:
            self.metrics = DurationMetrics()
            self._collectors = (
                self.metrics,
                *load_collectors(self.config.custom_collectors),
                *(as_collector(c) for c in collectors),
            )

    @classmethod
    def from_settings(
        cls,
        settings: AgentSettings,
        *,
        tracer_provider: Any = None,
        collectors: Iterable[Any] = (),
        secrets: SecretValues | None = None,
    ) -> Telemetry:
        """The telemetry ``settings`` describe, knowing the configured API key and rates.

        ``secrets`` is the Agent's `SecretValues`, shared so logs and spans mask every secret
        it knows (and learns); without it, the configured API key is masked.
        """
        key = settings.model_backend.api_key
        values = secrets if secrets is not None else SecretValues()
        if key is not None:
            values.add(key.get_secret_value())
        budget = settings.budget

        def cost(model: str, usage: Mapping[str, Any]) -> float | None:
            lowered = model.lower()
            if not any(k == "*" or k.lower() in lowered for k in budget.rates):
                return None  # no rate applies: the cost is unknown, not zero
            return budget.rate_for(model).cost(
                int(usage.get("prompt_tokens") or 0),
                int(usage.get("completion_tokens") or 0),
                int(usage.get("cached_tokens") or 0),
            )

        return cls(
            settings.logging,
            settings.observability,
            secrets=values,
            tracer_provider=tracer_provider,
            collectors=collectors,
            cost=cost,
        )

    # Settings the scopes read ----------------------------------------------------------------
    @property
    def body_size_limit(self) -> int:
        """Bytes of a body (or of tool arguments) shown in a log line."""
        return self.logging.body_size_limit

    @property
    def slow_response_ms(self) -> float | None:
        """Model calls slower than this are logged at WARNING."""
        return self.logging.slow_response_seconds * 1000

    def new_id(self) -> str:
        """A fresh id in the configured format."""
        return new_id(self.config.request_id_format)

    # Runs ------------------------------------------------------------------------------------
    def run(self, thread_id: str, *, resumed: bool = False) -> AbstractContextManager[RunScope]:
        """The scope of one run or resume: ids, the run span, the duration metric, log lines.

        Everything the run does inside the block (stages, model calls, tool calls) is observed
        under it. Call ``finish`` on the scope with the outcome before the block ends.
        """
        return run_scope(self, thread_id, resumed=resumed)

    def trace_headers(self, span: Span, request_id: str, run_id: str) -> dict[str, str]:
        """The headers a model request carries.

        ``X-Request-ID``, ``traceparent`` and ``tracestate``; none when
        ``propagate_trace_context`` is off.
        """
        if not self.config.propagate_trace_context:
            return {}
        from ai_agent.observability.ids import traceparent

        return {
            "X-Request-ID": request_id,
            "traceparent": traceparent(span.trace_id, span.span_id, sampled=span.sampled),
            "tracestate": tracestate(span.trace_state, run_id),
        }

    def http_log(self) -> HttpLog:
        """Httpx event hooks that log model requests with these settings."""
        from ai_agent.observability.httplog import HttpLog

        return HttpLog(self.logging, self.redactor)

    # Metrics ---------------------------------------------------------------------------------
    def add_collector(self, collector: Any) -> None:
        """Hand every metric to ``collector`` too (an object with ``record``, or a function).

        Ignored, with a log line, when ``metrics_enabled`` is off.
        """
        if not self.config.metrics_enabled:
            log.info("observability.metrics_enabled is off: the collector gets no metrics")
            return
        self._collectors = (*self._collectors, as_collector(collector))

    def record(self, name: str, value: float, attributes: Mapping[str, Any]) -> None:
        """Hand one duration to every collector; a failing collector is logged, not raised."""
        if not self._collectors:
            return
        metric = Metric(name, value, attributes)
        for collector in self._collectors:
            try:
                collector.record(metric)
            except Exception as exc:
                log_metrics.warning(
                    "metrics collector %r failed on %s; the run goes on", collector, name, exc=exc
                )
