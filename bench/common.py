"""What every section of the suite shares: the Figure record and small timing helpers."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Figure", "Stopwatch", "median", "subprocess_env"]


@dataclass(slots=True)
class Figure:
    """One measured figure and the baseline measured beside it in the same run.

    Attributes:
        section: Which part of the suite measured it.
        name: What was measured.
        ours: The engine's value.
        unit: Unit of ``ours`` and ``baseline``.
        baseline: The baseline's value (None when the figure is a plain bound).
        baseline_name: What the baseline is.
        ratio: The quantity the target is stated on (see ``ratio_name``).
        ratio_name: How ``ratio`` is computed.
        target: The target, as text (``<= 1.2``, ``>= 100``, ``< 50 ms``).
        ok: Whether the target was met.
        note: How it was measured, or what to keep in mind.
    """

    section: str
    name: str
    ours: float
    unit: str
    baseline: float | None
    baseline_name: str
    ratio: float | None
    ratio_name: str
    target: str
    ok: bool
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The figure as JSON-ready data."""
        return asdict(self)


class Stopwatch:
    """Wall and CPU time of the process (every thread) since it was started."""

    def __init__(self) -> None:
        self.wall = time.perf_counter()
        self.cpu = time.process_time()

    def elapsed(self) -> tuple[float, float]:
        """(wall seconds, CPU seconds) so far."""
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


def median(samples: list[float]) -> float:
    """The median (the suite's summary of repeated runs: robust to one noisy neighbour)."""
    return statistics.median(samples)


def timed(fn: Callable[[], Any], repeat: int) -> list[float]:
    """Seconds per call of ``fn``, ``repeat`` times."""
    out: list[float] = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        out.append(time.perf_counter() - started)
    return out


def subprocess_env() -> dict[str, str]:
    """The environment for timed subprocesses: bytecode caching on, as on a user's machine."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env
