"""Duration metrics, collectors and listeners, on their own."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import pytest

from ai_agent.config import ObservabilityConfig
from ai_agent.errors import ConfigError
from ai_agent.observability import (
    DurationMetrics,
    Listeners,
    Metric,
    MetricsCollector,
    Telemetry,
)
from ai_agent.observability.metrics import as_collector, load_collectors
from tests.observability import collectors
from tests.observability.conftest import Logs


def test_duration_stats_per_series_and_summed_over_attributes() -> None:
    metrics = DurationMetrics()
    for value, stage in ((10.0, "draft"), (30.0, "draft"), (5.0, "act")):
        metrics.record(Metric("ai_agent.stage.duration", value, {"stage": stage}))
    draft = metrics.stats("ai_agent.stage.duration", stage="draft")
    assert (draft.count, draft.total_ms, draft.min_ms, draft.max_ms, draft.mean_ms) == (
        2,
        40.0,
        10.0,
        30.0,
        20.0,
    )
    every = metrics.stats("ai_agent.stage.duration")
    assert (every.count, every.min_ms, every.max_ms) == (3, 5.0, 30.0)
    assert metrics.stats("ai_agent.stage.duration", stage="gate").mean_ms == 0.0
    names = [(s.name, dict(s.attributes), s.stats.count) for s in metrics.snapshot()]
    assert names == [
        ("ai_agent.stage.duration", {"stage": "act"}, 1),
        ("ai_agent.stage.duration", {"stage": "draft"}, 2),
    ]
    metrics.reset()
    assert metrics.snapshot() == []


def test_duration_metrics_count_from_many_threads() -> None:
    metrics = DurationMetrics()

    def work() -> None:
        for _ in range(500):
            metrics.record(Metric("m", 1.0))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert metrics.stats("m").count == 2000


def test_collectors_come_from_objects_classes_functions_and_import_paths() -> None:
    seen: list[Metric] = []
    assert isinstance(as_collector(DurationMetrics), DurationMetrics)
    function = as_collector(seen.append)
    function.record(Metric("m", 1.0))
    assert seen == [Metric("m", 1.0)] and "append" in repr(function)
    loaded = load_collectors(
        [
            "tests.observability.collectors:Recorder",
            "tests.observability.collectors:record_function",
        ]
    )
    assert all(isinstance(c, MetricsCollector) for c in loaded)
    with pytest.raises(TypeError, match="not a metrics collector"):
        as_collector(42)


@pytest.mark.parametrize(
    "path",
    [
        "tests.observability.nowhere:Recorder",
        "tests.observability.collectors:Missing",
        "tests.observability.collectors:NOT_A_COLLECTOR",
    ],
)
def test_a_collector_that_cannot_be_loaded_is_a_config_error(path: str) -> None:
    with pytest.raises(ConfigError, match="custom_collectors"):
        Telemetry(observability=ObservabilityConfig(custom_collectors=[path]))


def test_custom_collectors_get_every_metric_and_failures_are_logged(logs: Logs) -> None:
    logs.start("WARNING")
    collectors.SEEN.clear()
    config = ObservabilityConfig(custom_collectors=["tests.observability.collectors:Recorder"])
    telemetry = Telemetry(observability=config)

    def broken(metric: Metric) -> None:
        raise RuntimeError("collector down")

    telemetry.add_collector(broken)
    with telemetry.run("t") as run:
        run.finish("completed")
    assert [m.name for m in collectors.SEEN] == ["ai_agent.run.duration"]
    assert collectors.SEEN[0].attributes == {"status": "completed"}
    warning = logs.where(level="WARNING")[0]
    assert "failed on ai_agent.run.duration" in warning["message"]
    assert "collector down" in warning["exc"]


def test_with_metrics_off_nothing_is_collected(logs: Logs) -> None:
    logs.start("INFO")
    collectors.SEEN.clear()
    telemetry = Telemetry(
        observability=ObservabilityConfig(
            metrics_enabled=False, custom_collectors=["tests.observability.collectors:Recorder"]
        )
    )
    telemetry.add_collector(collectors.record_function)
    with telemetry.run("t") as run:
        run.finish("completed")
    assert telemetry.metrics is None and collectors.SEEN == []
    assert logs.where(message="observability.metrics_enabled is off: the collector gets no metrics")


@dataclass
class Ping:
    n: int


@dataclass
class Pong:
    n: int


def test_listeners_filter_by_type_and_can_be_removed() -> None:
    bus = Listeners()
    everything: list[object] = []
    pings: list[object] = []
    bus.add(everything.append)
    remove = bus.add(pings.append, Ping)
    assert len(bus) == 2 and bus.wants(Pong) and bus
    for event in (Ping(1), Pong(2)):
        bus.publish(event)
    remove()
    bus.remove(print)  # not listening: nothing happens
    bus.publish(Ping(3))
    assert everything == [Ping(1), Pong(2), Ping(3)] and pings == [Ping(1)]
    only = Listeners()
    only.add(pings.append, Ping)
    assert not only.wants(Pong)
    with pytest.raises(TypeError, match="callable"):
        bus.add("print")  # type: ignore[arg-type]


def test_a_failing_or_async_listener_is_logged_and_skipped(logs: Logs) -> None:
    logs.start("WARNING")
    bus = Listeners()
    after: list[object] = []

    def broken(event: object) -> None:
        raise RuntimeError("listener bug")

    async def coroutine(event: object) -> None:  # never awaited: closed by the bus
        after.append("never")

    bus.add(broken)
    bus.add(coroutine)
    bus.add(after.append)
    bus.publish(Ping(1))
    assert after == [Ping(1)]
    messages = [r["message"] for r in logs.where(level="WARNING")]
    assert "failed on Ping; the run goes on" in messages[0]
    assert "returned an awaitable" in messages[1]
    assert "listener bug" in logs.where(level="WARNING")[0]["exc"]
