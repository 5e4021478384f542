"""Observability: logs, ids, trace context, spans, duration metrics and lifecycle listeners.

Nothing here acts on its own. Importing the package, or building an Agent, configures no logging
handler, starts no exporter and sends nothing anywhere:

- logs go through standard ``logging`` under ``ai_agent.*``; `configure_logging` (or the
  CLI's ``--log-level`` / ``--log-json``) installs a handler when asked. Every record is redacted
  at the source (`Redactor`) and carries the run's correlation ids
  (`CorrelationFilter`, `current_ids`);
- every run, stage, model call and tool call gets an id (``request_id_format``: uuid4 or ulid);
  model requests carry ``X-Request-ID``, ``traceparent`` and ``tracestate`` when
  ``propagate_trace_context`` is on;
- OpenTelemetry spans (run -> stage -> model call / tool call) exist only with
  ``enable_otel_instrumentation`` and the ``otel`` extra, sent to the tracer provider the
  application gives;
- durations of runs, stages, model calls and tool calls go to `DurationMetrics`
  (``agent.metrics``) and to the collectors of ``custom_collectors``;
- ``agent.add_listener(fn)`` calls ``fn`` with the typed lifecycle events of every run.

Examples:
    >>> import io
    >>> from ai_agent.config import LoggingConfig
    >>> from ai_agent.observability import Telemetry, configure_logging, unconfigure_logging
    >>> out = io.StringIO()
    >>> _ = configure_logging(LoggingConfig(level="INFO", structured=True), stream=out)
    >>> telemetry = Telemetry()
    >>> with telemetry.run("thread-1") as run:
    ...     run.finish("completed", iterations=1)
    >>> import json
    >>> [json.loads(line)["message"].split(" in ")[0] for line in out.getvalue().splitlines()]
    ['run started (thread thread-1)', 'run completed']
    >>> unconfigure_logging()
"""

from typing import TYPE_CHECKING

from ai_agent._lazy import lazy_names

if TYPE_CHECKING:
    from ai_agent.observability._scope import current_ids
    from ai_agent.observability.hooks import Listener, Listeners
    from ai_agent.observability.ids import new_id, parse_traceparent, traceparent, ulid
    from ai_agent.observability.logs import (
        CorrelationFilter,
        JsonFormatter,
        TextFormatter,
        configure_logging,
        logging_configured,
        unconfigure_logging,
    )
    from ai_agent.observability.metrics import (
        DurationMetrics,
        DurationStats,
        Metric,
        MetricsCollector,
        MetricSeries,
    )
    from ai_agent.observability.redaction import Redactor
    from ai_agent.observability.telemetry import Telemetry
    from ai_agent.observability.tooldata import RetrievedItem, ToolTelemetry, tool_telemetry

__all__ = [
    "CorrelationFilter",
    "DurationMetrics",
    "DurationStats",
    "JsonFormatter",
    "Listener",
    "Listeners",
    "Metric",
    "MetricSeries",
    "MetricsCollector",
    "Redactor",
    "RetrievedItem",
    "Telemetry",
    "TextFormatter",
    "ToolTelemetry",
    "configure_logging",
    "current_ids",
    "logging_configured",
    "new_id",
    "parse_traceparent",
    "tool_telemetry",
    "traceparent",
    "ulid",
    "unconfigure_logging",
]

# Imported on first use (PEP 562): the run store logs through ``observability.logs``, and a
# command that only reads runs must not load the metrics, spans and listeners with it.
_HOMES = {
    "CorrelationFilter": "ai_agent.observability.logs",
    "DurationMetrics": "ai_agent.observability.metrics",
    "DurationStats": "ai_agent.observability.metrics",
    "JsonFormatter": "ai_agent.observability.logs",
    "Listener": "ai_agent.observability.hooks",
    "Listeners": "ai_agent.observability.hooks",
    "Metric": "ai_agent.observability.metrics",
    "MetricSeries": "ai_agent.observability.metrics",
    "MetricsCollector": "ai_agent.observability.metrics",
    "Redactor": "ai_agent.observability.redaction",
    "RetrievedItem": "ai_agent.observability.tooldata",
    "Telemetry": "ai_agent.observability.telemetry",
    "TextFormatter": "ai_agent.observability.logs",
    "ToolTelemetry": "ai_agent.observability.tooldata",
    "configure_logging": "ai_agent.observability.logs",
    "current_ids": "ai_agent.observability._scope",
    "logging_configured": "ai_agent.observability.logs",
    "new_id": "ai_agent.observability.ids",
    "parse_traceparent": "ai_agent.observability.ids",
    "tool_telemetry": "ai_agent.observability.tooldata",
    "traceparent": "ai_agent.observability.ids",
    "ulid": "ai_agent.observability.ids",
    "unconfigure_logging": "ai_agent.observability.logs",
}

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
