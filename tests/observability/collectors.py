"""Collectors named by import path in the tests' settings (``custom_collectors``)."""

from __future__ import annotations

from ai_agent.observability import Metric

SEEN: list[Metric] = []


class Recorder:
    """Appends every metric to SEEN (instantiated by the engine without arguments)."""

    def record(self, metric: Metric) -> None:
        SEEN.append(metric)


def record_function(metric: Metric) -> None:
    """A plain function works as a collector too."""
    SEEN.append(metric)


NOT_A_COLLECTOR = 42
