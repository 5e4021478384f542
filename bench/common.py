"""What every section of the suite shares: the Figure record and small timing helpers."""

from __future__ import annotations

import gc
import json
import os
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

__all__ = [
    "Figure",
    "GcPauses",
    "Stopwatch",
    "child_section",
    "in_turn",
    "median",
    "settle_disk",
    "subprocess_env",
]

T = TypeVar("T")


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


class GcPauses:
    """Seconds the interpreter spent in full (generation 2) garbage collections while in use.

    Where a full collection lands is set by the whole process's allocation count, not by the
    code being timed: two reads that keep the same number of objects alive (the delta saver's
    and SqliteSaver's reads of one thread: 4,160 and 4,037) take the ~100 ms pause in turn,
    whichever runs first. The bench reports it beside the timing it fell into.
    """

    def __init__(self) -> None:
        self.seconds = 0.0
        self._started = 0.0

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started

    def __enter__(self) -> GcPauses:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)


def median(samples: list[float]) -> float:
    """The median (the suite's summary of repeated runs: robust to one noisy neighbour)."""
    return statistics.median(samples)


def in_turn(items: Sequence[T], round_: int) -> Sequence[T]:
    """``items`` in order in even rounds, reversed in odd ones (A B, B A, A B, ...).

    How the suite runs what it compares: neither side always goes first, into a warm cache or
    a disk still writing back what the other side wrote.
    """
    return items if round_ % 2 == 0 else items[::-1]


def settle_disk() -> float:
    """Write back what earlier sections left in the page cache; the seconds it took.

    For a section whose figure is a share of wall time or a throughput, taken after sections
    that wrote gigabytes (SqliteSaver's 6.2 GB pipeline run): while the kernel writes those back,
    every fsync waits for it, and only one side of the comparison fsyncs (measured on the peers'
    tasks: the engine's share of wall time 4.06 % on a settled disk, 6.68 % right after writing
    2.5 GB, with the same answers and tokens).
    """
    started = time.perf_counter()
    os.sync()
    return time.perf_counter() - started


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


def child_section(
    command: list[str], report: Path, section: str, name: str, target: str
) -> tuple[dict[str, Any] | None, list[Figure], dict[str, Any]]:
    """Run a section in a fresh interpreter and read the JSON report it writes.

    A section that cannot run here (no local model, no PostgreSQL server programs) is reported
    as one figure "not measured", with the reason from its last line of stderr, rather than
    failing the whole suite. Returns the report (None then), and that figure and its meta.
    """
    done = subprocess.run(
        command, check=False, capture_output=True, text=True, env=subprocess_env()
    )
    if done.returncode == 0 and report.exists():
        loaded: dict[str, Any] = json.loads(report.read_text())
        return loaded, [], {}
    reason = (done.stderr.strip().splitlines() or ["no output"])[-1][:200]
    missed = Figure(
        section,
        name,
        float("nan"),
        "",
        None,
        "",
        None,
        "-",
        target,
        False,
        f"not measured: {reason}",
    )
    return None, [missed], {"error": reason}
