"""The suite's section on plain LangGraph graphs: figures against baselines of the same run.

For each graph of `bench.plain_graphs` (``messages``: a list appended with ``operator.add``;
``dict``: a dict edited in place), with ``DeltaSaver(path)`` at its defaults:

- time and storage per cycle, last window over first, with ``durability="sync"``, each cycle's
  fastest time over the rounds (as the pipeline's figures are taken; with
  LangGraph's default, "async", a step's put overlaps the next steps, so a cycle's time is not
  what its checkpoints cost and sizes sampled during the run lag behind);
- the whole run's time over the same graph with no checkpointer, at LangGraph's default
  durability, median of the per-round ratios (rounds interleaved: the runs of one round see the
  same load), with the CPU-time ratio beside it; and the same ratio for LangGraph's
  ``InMemorySaver``, which writes nothing to disk: the floor under any saver's ratio;
- the files on disk (database plus WAL, before closing) over the payload, in every round: the
  largest, and the largest over the smallest (the same from run to run);
- LangGraph's ``SqliteSaver`` at its defaults and tuned (``synchronous=NORMAL``), and for the
  list graph LangGraph's delta mode (the list as a ``DeltaChannel``, on SqliteSaver): storage
  and time, theirs over ours;
- reading the latest state of a long thread of the list graph, in a fresh interpreter, against
  SqliteSaver's.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import Figure, in_turn, median, subprocess_env
from bench.plain_graphs import PAYLOAD_BYTES, PlainRun, remove, run_plain

__all__ = ["measure_plain"]


def _flat(run: PlainRun, window: int) -> float:
    m = len(run.wall)
    return run.mean(m - window, m) / run.mean(0, window)


def _envelope(runs: list[PlainRun]) -> PlainRun:
    """Each cycle's fastest time over the rounds (what other processes added in one is gone)."""
    first = runs[0]
    wall = [min(times) for times in zip(*(r.wall for r in runs), strict=True)]
    return PlainRun(first.graph, first.saver, first.cycles, wall, first.sizes)


def _storage_growth(run: PlainRun, window: int) -> float:
    n, sizes = run.cycles, run.sizes
    # A page is 4 KB: a very short run may not fill one in its first window.
    return (sizes[n] - sizes[n - window]) / max(sizes[window] - sizes[0], 1)


def _graph_figures(
    graph: str, cycles: int, window: int, rounds: int, work: Path
) -> tuple[list[Figure], dict[str, Any]]:
    path = work / f"{graph}.sqlite"
    ours: list[PlainRun] = []
    bare: list[PlainRun] = []
    memory: list[PlainRun] = []
    for i in range(rounds):
        print(
            f"  plain graph {graph}: none, InMemorySaver and delta, {cycles} cycles "
            f"(round {i + 1})",
            flush=True,
        )
        bare.append(run_plain(graph, "none", cycles, path, window))
        memory.append(run_plain(graph, "memory", cycles, path, window))
        ours.append(run_plain(graph, "delta", cycles, path, window))
    synced_runs = []
    for i in range(rounds):
        print(f"  plain graph {graph}: delta, durability sync (round {i + 1})", flush=True)
        synced_runs.append(run_plain(graph, "delta", cycles, path, window, durability="sync"))
    synced = _envelope(synced_runs)
    theirs: dict[str, PlainRun] = {}
    kinds = ["sqlite", "sqlite_tuned"] + (["deltachannel"] if graph == "messages" else [])
    for kind in kinds:
        print(f"  plain graph {graph}: {kind}", flush=True)
        theirs[kind] = run_plain(graph, kind, cycles, path, window)
    remove(path)
    payload = cycles * PAYLOAD_BYTES
    flat, growth = _flat(synced, window), _storage_growth(synced, window)
    over = median([d.seconds / n.seconds for d, n in zip(ours, bare, strict=True)])
    over_cpu = median([d.cpu / n.cpu for d, n in zip(ours, bare, strict=True)])
    floor = median([m.seconds / n.seconds for m, n in zip(memory, bare, strict=True)])
    disks = [r.disk / payload for r in ours]
    spread = max(disks) / min(disks)
    best = min(ours, key=lambda r: r.seconds)
    name = f"{graph} graph"
    figures = [
        Figure(
            "plain",
            f"{name}: time per cycle, last {window} / first {window}",
            flat,
            "x",
            _flat(theirs["sqlite"], window),
            "SqliteSaver, defaults",
            flat,
            "ours",
            "<= 1.1",
            flat <= 1.1,
            "DeltaSaver(path) at its defaults (in-place edit check on), durability='sync'; each "
            f"cycle's fastest of {rounds} rounds; per round: "
            + ", ".join(f"{_flat(r, window):.3g}" for r in synced_runs),
        ),
        Figure(
            "plain",
            f"{name}: storage per cycle, last {window} / first {window}",
            growth,
            "x",
            _storage_growth(theirs["sqlite"], window),
            "SqliteSaver, defaults",
            growth,
            "ours",
            "<= 1.1",
            growth <= 1.1,
            "pages in use, WAL included, durability='sync'",
        ),
        Figure(
            "plain",
            f"{name}: time of the run over no checkpointer",
            best.seconds / cycles * 1000,
            "ms",
            min(r.seconds for r in bare) / cycles * 1000,
            "no checkpointer",
            over,
            "ours / baseline",
            "<= 1.5",
            over <= 1.5,
            f"ms per cycle; LangGraph's default durability; median of {rounds} per-round ratios; "
            f"CPU time (every thread) {over_cpu:.3g} times no checkpointer's",
        ),
        Figure(
            "plain",
            f"{name}: time of the run on LangGraph's InMemorySaver over no checkpointer",
            min(r.seconds for r in memory) / cycles * 1000,
            "ms",
            min(r.seconds for r in bare) / cycles * 1000,
            "no checkpointer",
            floor,
            "InMemorySaver / baseline",
            "report",
            True,
            "what LangGraph's own checkpointing costs with a saver that writes nothing to disk "
            f"(median of {rounds} per-round ratios): the floor under any saver's ratio",
        ),
        Figure(
            "plain",
            f"{name}: disk (database + WAL) / payload",
            max(disks),
            "x",
            theirs["sqlite"].disk / payload,
            "SqliteSaver, defaults",
            spread,
            "largest / smallest run",
            "<= 3, same each run",
            max(disks) <= 3 and spread <= 1.1,
            f"{rounds} runs: " + ", ".join(f"{d:.3g}" for d in disks),
        ),
    ]
    for kind, label in (
        ("sqlite", "SqliteSaver, defaults"),
        ("sqlite_tuned", "SqliteSaver, WAL + synchronous=NORMAL"),
        ("deltachannel", "LangGraph's DeltaChannel on SqliteSaver"),
    ):
        if kind not in theirs:
            continue
        other = theirs[kind]
        size_ratio = other.sizes[cycles] / best.sizes[cycles]
        time_ratio = other.seconds / best.seconds
        figures.append(
            Figure(
                "plain",
                f"{name}: against {label}",
                best.seconds / cycles * 1000,
                "ms",
                other.seconds / cycles * 1000,
                label,
                time_ratio,
                "theirs / ours (time)",
                ">= 1 (smaller and faster)",
                time_ratio >= 1 and size_ratio >= 1,
                f"ms per cycle; storage theirs / ours {size_ratio:.3g} "
                f"({other.sizes[cycles] / 1e6:.3g} MB against {best.sizes[cycles] / 1e6:.3g} MB)",
            )
        )
    meta = {
        "ours": [
            {"seconds": r.seconds, "cpu": r.cpu, "disk": r.disk, "sizes": r.sizes} for r in ours
        ],
        "none": [{"seconds": r.seconds, "cpu": r.cpu} for r in bare],
        "memory": [{"seconds": r.seconds, "cpu": r.cpu} for r in memory],
        "sync": [{"seconds": r.seconds, "sizes": r.sizes} for r in synced_runs],
        "theirs": {k: {"seconds": r.seconds, "disk": r.disk} for k, r in theirs.items()},
    }
    return figures, meta


def _read(kind: str, path: Path) -> list[float]:
    done = subprocess.run(
        [sys.executable, "-m", "bench.plain_read", kind, str(path)],
        check=True,
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=600,
    )
    return [float(t) for t in json.loads(done.stdout.strip().splitlines()[-1])]


def _read_figure(cycles: int, work: Path, rounds: int = 4) -> Figure:
    # Both threads written first, then read in turns (ours, theirs, theirs, ours...), each read
    # in a fresh interpreter: neither saver's reads all land while the disk writes back what
    # the other one has just written.
    kinds = ("delta", "sqlite_tuned")
    timings: dict[str, list[float]] = {kind: [] for kind in kinds}
    for kind in kinds:
        print(f"  plain graph messages: {cycles}-cycle thread on {kind}", flush=True)
        run_plain("messages", kind, cycles, work / f"read-{kind}.sqlite", cycles, durability="sync")
    for round_ in range(rounds):
        for kind in in_turn(kinds, round_):
            timings[kind] += _read(kind, work / f"read-{kind}.sqlite")
    for kind in kinds:
        remove(work / f"read-{kind}.sqlite")
    ours, theirs = median(timings["delta"]), median(timings["sqlite_tuned"])
    return Figure(
        "plain",
        f"messages graph: read the latest state of a {cycles}-cycle thread",
        ours * 1000,
        "ms",
        theirs * 1000,
        "SqliteSaver",
        theirs / ours,
        "baseline / ours",
        ">= 1 (no slower)",
        ours <= theirs,
        f"graph.get_state on a freshly opened saver, in fresh interpreters taking turns "
        f"(median of {len(timings['delta'])})",
    )


def measure_plain(
    cycles: int, window: int, rounds: int, read_cycles: int
) -> tuple[list[Figure], dict[str, Any]]:
    """Every figure of this section, and the raw runs for the JSON file."""
    work = Path(tempfile.mkdtemp(prefix="ai-agent-bench-plain-"))
    figures: list[Figure] = []
    meta: dict[str, Any] = {}
    for graph in ("messages", "dict"):
        found, meta[graph] = _graph_figures(graph, cycles, window, rounds, work)
        figures += found
    figures.append(_read_figure(read_cycles, work))
    return figures, meta
