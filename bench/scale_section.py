"""The suite's section on scale-out: `bench.scale_out` in a fresh interpreter, as figures.

Throughput with N workers is stated against one worker's, in the same run; the drain under
SIGKILL against its own promise (nothing lost, nothing shipped twice). Without PostgreSQL's
server programs (``tests/postgres/cluster.py`` finds them) the section is reported as not
measured, with the reason, rather than failing the whole suite.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from bench.common import Figure, child_section, settle_disk

__all__ = ["measure_scale_out", "scale_figures"]

TARGET_WORKERS = 4
TARGET_SPEEDUP = 3.2


def scale_figures(report: dict[str, Any]) -> list[Figure]:
    """Figures from ``scale_out.json``: each worker count against one worker; the drain."""
    figures: list[Figure] = []
    rounds = report.get("rounds") or []
    if rounds:
        one = rounds[0]
        for r in rounds:
            speedup = r["runs_per_second"] / one["runs_per_second"]
            targeted = r["workers"] == TARGET_WORKERS
            cpu = r["cpu_ms_per_run"]
            figures.append(
                Figure(
                    "scale-out",
                    f"throughput, {r['workers']} workers on PostgreSQL ({r['runs']} queued runs)",
                    r["runs_per_second"],
                    "runs/s",
                    one["runs_per_second"],
                    f"{one['workers']} worker, same queue",
                    speedup,
                    "ours / baseline",
                    f">= {TARGET_SPEEDUP}" if targeted else "report",
                    speedup >= TARGET_SPEEDUP if targeted else True,
                    f"CPU ms per run: workers {cpu['workers']}, PostgreSQL {cpu['postgres']}, "
                    f"model {cpu['model']}; 50 ms model",
                )
            )
    drain = report.get("drain") or {}
    if drain:
        bad = drain["lost"] + drain["shipped_twice"]
        figures.append(
            Figure(
                "scale-out",
                f"drain of {drain['runs']} runs, a worker SIGKILLed every few seconds",
                bad,
                "runs lost or run twice",
                None,
                "",
                None,
                "-",
                "0",
                bad == 0,
                f"{drain['kills']} kills, {drain['plans_done']} plans done, {drain['reclaimed']} "
                f"reclaimed, {drain['lost']} lost, {drain['shipped_twice']} shipped twice, "
                f"{drain['seconds']} s",
            )
        )
    return figures


def measure_scale_out(
    work: Path, runs: int, workers: str, drain: int, python: str = sys.executable
) -> tuple[list[Figure], dict[str, Any]]:
    """Run ``python -m bench.scale_out`` and read its figures."""
    out = work / "scale"
    settled = settle_disk()
    command = [python, "-m", "bench.scale_out", "--runs", str(runs), "--workers", workers]
    command += ["--drain", str(drain), "--out", str(out)]
    report, missed, meta = child_section(
        command,
        out / "scale_out.json",
        "scale-out",
        "throughput, 4 workers on PostgreSQL",
        f">= {TARGET_SPEEDUP}",
    )
    if report is None:
        return missed, meta
    report["settle_disk_seconds"] = round(settled, 3)
    return scale_figures(report), report
