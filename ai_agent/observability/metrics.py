"""Duration metrics: runs, stages, model calls and tool calls, handed to collectors.

With ``ObservabilityConfig.metrics_enabled`` (the default) the engine times every run, stage,
model call and tool call and hands each duration, as a `Metric`, to every collector:

============================  ===================================================
name                          attributes
============================  ===================================================
``ai_agent.run.duration``     ``status`` (completed, paused, failed, cancelled)
``ai_agent.stage.duration``   ``stage``, ``status`` (ok, paused, error)
``ai_agent.model.duration``   ``model``, ``status`` (ok, error)
``ai_agent.tool.duration``    ``tool``, ``status`` (the ToolResult's: ok, error...)
============================  ===================================================

Values are milliseconds. Attributes are few and low in cardinality (never ids), so a collector
can turn them straight into labelled histograms.

A collector is an object with ``record(metric)``, or a plain function of one metric. The Agent
always has a `DurationMetrics` (``agent.metrics``) that keeps count, total, minimum and
maximum per series; ``custom_collectors`` names more by import path, and
``agent.telemetry.add_collector`` adds objects. A collector that raises is logged at WARNING and
never stops a run.

Examples:
    >>> metrics = DurationMetrics()
    >>> metrics.record(Metric("ai_agent.stage.duration", 12.0, {"stage": "draft"}))
    >>> metrics.record(Metric("ai_agent.stage.duration", 4.0, {"stage": "act"}))
    >>> metrics.stats("ai_agent.stage.duration").count
    2
    >>> metrics.stats("ai_agent.stage.duration", stage="draft").mean_ms
    12.0
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ai_agent.errors import ConfigError

__all__ = [
    "METRIC_NAMES",
    "DurationMetrics",
    "DurationStats",
    "Metric",
    "MetricSeries",
    "MetricsCollector",
    "as_collector",
    "load_collectors",
]

METRIC_NAMES = (
    "ai_agent.run.duration",
    "ai_agent.stage.duration",
    "ai_agent.model.duration",
    "ai_agent.tool.duration",
)

MetricAttribute = str | int | float | bool


@dataclass(frozen=True, slots=True)
class Metric:
    """One measurement: a duration in milliseconds, with its attributes."""

    name: str
    value: float
    attributes: Mapping[str, MetricAttribute] = field(default_factory=dict)
    unit: str = "ms"


@runtime_checkable
class MetricsCollector(Protocol):
    """Receives every metric the engine records."""

    def record(self, metric: Metric) -> None:
        """Take one metric; called on the thread of the run, so keep it quick."""
        ...  # pragma: no cover - protocol


@dataclass(slots=True)
class DurationStats:
    """Count, total, minimum and maximum of some durations (milliseconds)."""

    count: int = 0
    total_ms: float = 0.0
    min_ms: float = 0.0
    max_ms: float = 0.0

    @property
    def mean_ms(self) -> float:
        """The average, 0 when there is none."""
        return self.total_ms / self.count if self.count else 0.0

    def add(self, value: float) -> None:
        """Count one more duration."""
        self.min_ms = value if self.count == 0 else min(self.min_ms, value)
        self.max_ms = value if self.count == 0 else max(self.max_ms, value)
        self.count += 1
        self.total_ms += value


@dataclass(frozen=True, slots=True)
class MetricSeries:
    """The stats of one metric name and one set of attributes."""

    name: str
    attributes: Mapping[str, MetricAttribute]
    stats: DurationStats


class DurationMetrics:
    """An in-memory collector: `DurationStats` per metric name and attributes.

    Thread-safe: an Agent may drive runs on several threads (``run_sync``, ``stream``).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._series: dict[tuple[str, tuple[tuple[str, MetricAttribute], ...]], DurationStats] = {}

    def record(self, metric: Metric) -> None:
        """Count ``metric`` in its series."""
        key = (metric.name, tuple(sorted(metric.attributes.items())))
        with self._lock:
            stats = self._series.get(key)
            if stats is None:
                stats = self._series[key] = DurationStats()
            stats.add(metric.value)

    def snapshot(self) -> list[MetricSeries]:
        """Every series so far (copies), sorted by name and attributes."""
        with self._lock:
            items = sorted(self._series.items(), key=lambda item: (item[0][0], str(item[0][1])))
            return [
                MetricSeries(
                    name, dict(attrs), DurationStats(s.count, s.total_ms, s.min_ms, s.max_ms)
                )
                for (name, attrs), s in items
            ]

    def stats(self, name: str, **attributes: MetricAttribute) -> DurationStats:
        """The stats of ``name`` over every series whose attributes include ``attributes``.

        Examples:
            >>> m = DurationMetrics()
            >>> m.record(Metric("ai_agent.tool.duration", 3.0, {"tool": "grep", "status": "ok"}))
            >>> m.stats("ai_agent.tool.duration", tool="grep").max_ms, m.stats("nothing").count
            (3.0, 0)
        """
        out = DurationStats()
        with self._lock:
            for (series, attrs), stats in self._series.items():
                if series != name or any(dict(attrs).get(k) != v for k, v in attributes.items()):
                    continue
                if stats.count:
                    out.min_ms = stats.min_ms if out.count == 0 else min(out.min_ms, stats.min_ms)
                    out.max_ms = max(out.max_ms, stats.max_ms)
                    out.count += stats.count
                    out.total_ms += stats.total_ms
        return out

    def reset(self) -> None:
        """Forget every series."""
        with self._lock:
            self._series.clear()


class _FunctionCollector:
    def __init__(self, fn: Callable[[Metric], object]) -> None:
        self.fn = fn

    def record(self, metric: Metric) -> None:
        self.fn(metric)

    def __repr__(self) -> str:
        return f"<collector {getattr(self.fn, '__qualname__', self.fn)!r}>"


def as_collector(value: Any) -> MetricsCollector:
    """A collector from an object with ``record``, a class, or a function of one metric.

    A class is instantiated without arguments.

    Raises:
        TypeError: ``value`` is none of those.
    """
    if isinstance(value, type):
        value = value()
    if isinstance(value, MetricsCollector):
        return value
    if callable(value):
        return _FunctionCollector(value)
    raise TypeError(f"{value!r} is not a metrics collector: give it a record(metric) method")


def load_collectors(paths: Iterable[str]) -> list[MetricsCollector]:
    """The collectors that ``custom_collectors`` names (``package.module:Name``).

    Raises:
        ConfigError: A path cannot be imported, or does not name a collector.

    Examples:
        >>> [type(c).__name__ for c in load_collectors(["ai_agent.observability:DurationMetrics"])]
        ['DurationMetrics']
    """
    out: list[MetricsCollector] = []
    for path in paths:
        module_name, _, attr = path.partition(":")
        try:
            target: Any = importlib.import_module(module_name)
            for part in attr.split(".") if attr else []:
                target = getattr(target, part)
            out.append(as_collector(target))
        except Exception as exc:
            raise ConfigError(
                f"cannot load the metrics collector {path!r} ({type(exc).__name__}: {exc}); "
                "check observability.custom_collectors"
            ) from None
    return out
