"""The suite's outputs: the table of ratios, the JSON file and the growth plot."""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

from bench.common import Figure
from bench.pipeline import PAYLOAD_BYTES, PipelineRun

__all__ = ["markdown", "plot", "table", "write_json"]


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "bytes":
        return f"{value / 1e6:,.2f} MB" if value >= 1e5 else f"{value:,.0f} B"
    if abs(value) >= 100:
        return f"{value:,.0f} {unit}".strip()
    return f"{value:.3g} {unit}".strip()


def _baseline(f: Figure) -> str:
    if f.baseline is None:
        return f.baseline_name or "-"
    return f"{_fmt(f.baseline, f.unit)} ({f.baseline_name})"


def table(figures: list[Figure]) -> str:
    """The figures as a text table: ours, the baseline beside it, the ratio, the target."""
    rows = [("figure", "ours", "baseline", "ratio", "target", "ok")]
    for f in figures:
        rows.append(
            (
                f.name,
                _fmt(f.ours, f.unit),
                _baseline(f),
                "-" if f.ratio is None else f"{f.ratio:.3g} ({f.ratio_name})",
                f.target,
                "yes" if f.ok else "NO",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown(figures: list[Figure]) -> str:
    """The figures as a Markdown table (what the README's performance section shows)."""
    lines = [
        "| figure | ours | baseline, same run | ratio | target | met |",
        "|---|---|---|---|---|---|",
    ]
    for f in figures:
        base = _baseline(f)
        ratio = "-" if f.ratio is None else f"{f.ratio:.3g} ({f.ratio_name})"
        cells = [f.name, _fmt(f.ours, f.unit), base, ratio, f.target, "yes" if f.ok else "**no**"]
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def write_json(path: Path, figures: list[Figure], meta: dict[str, Any]) -> None:
    """Every figure, how the run was set up, and the machine it ran on."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    data = {
        "meta": {
            **meta,
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average_at_end": load,
        },
        "figures": [f.to_dict() for f in figures],
    }
    path.write_text(json.dumps(data, indent=1) + "\n")


def _rolling(values: list[float], width: int) -> list[float]:
    out: list[float] = []
    total = 0.0
    for i, v in enumerate(values):
        total += v
        if i >= width:
            total -= values[i - width]
        out.append(total / min(i + 1, width))
    return out


def plot(path: Path, runs: dict[str, PipelineRun], title: str) -> None:
    """How storage and per-cycle time grow with run length, one line per checkpointer."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    styles = {
        "sqlitesaver": "tab:red",
        "delta": "tab:green",
        "none": "tab:gray",
        "null": "tab:blue",
    }
    for kind, run in runs.items():
        if run.sizes:
            cycles = sorted(run.sizes)
            left.plot(
                cycles, [run.sizes[c] / 1e6 for c in cycles], "o-", color=styles[kind], label=kind
            )
        width = max(5, run.cycles // 40)
        right.plot(
            range(1, len(run.wall) + 1),
            [w * 1000 for w in _rolling(run.wall, width)],
            color=styles[kind],
            label=f"{kind} (mean of {width})",
        )
    longest = max(run.cycles for run in runs.values())
    left.plot(
        [0, longest], [0, longest * PAYLOAD_BYTES / 1e6], "--", color="black", label="payload"
    )
    left.set_yscale("symlog", linthresh=1)
    left.set_xlabel("cycles")
    left.set_ylabel("database size (MB)")
    left.set_title("storage")
    left.legend()
    right.set_xlabel("cycle")
    right.set_ylabel("wall time per cycle (ms)")
    right.set_title("time per cycle")
    right.set_yscale("log")
    right.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
