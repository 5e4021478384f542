"""``python -m bench [--quick]``: every figure against its baseline, a table, JSON and a plot.

Sections, in order: the pipeline on three checkpointers (storage, time per cycle, reading the
latest state), plain LangGraph graphs on the delta saver and LangGraph's own savers
(``bench.plain_section``), tool overhead, token counting, many concurrent runs (in a fresh
interpreter, so its memory is its own), start-up (fresh interpreters), the command line's
read-only commands on a store of 1,000 runs (``bench.cli_reads``), spawning subagents (a
fresh interpreter), the console's pages on a store of 10,000 runs (``bench.console``) and the
same tasks through ai-agent and LangGraph's ``create_react_agent`` on the real local model
(``bench.peers``, in a fresh interpreter; ``--skip peers`` leaves it out), and workers on
PostgreSQL: throughput with 1 to 8 workers and a drain under SIGKILL (``bench.scale_out``;
``--skip scale-out``). The
no-checkpointer, null-saver and delta runs are repeated, interleaved.
Every round does the very same work cycle by cycle (a scripted model, one deterministic tool),
so the time figures take, for each cycle, its fastest time over the rounds: what other
processes added to a cycle in one round is gone, while a cost of the engine's own (a WAL
checkpoint every 100 commits, a garbage collection) recurs at the same cycle in every round and
stays. The median over rounds of the per-round figure is reported beside it. Storage comes from
the least disturbed run (lowest total wall time); all runs are in the JSON. The SqliteSaver
baseline runs once, for as many cycles as asked (``--baseline-cycles``); when that is fewer than
the run, its storage and time are extrapolated (quadratic storage, linear time per cycle,
fitted on its own samples), and the figures say so.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.cli_reads import measure_cli_reads
from bench.common import Figure, in_turn, median, settle_disk, subprocess_env
from bench.console import measure_console
from bench.peers import measure_peers
from bench.pipeline import PAYLOAD_BYTES, PipelineRun, run_pipeline
from bench.plain_section import measure_plain
from bench.report import markdown, plot, table, write_json
from bench.scale_section import measure_scale_out
from bench.spec_figures import measure_agent_memory, measure_serialization, spec_figures
from bench.startup import measure_startup
from bench.tokens import measure_tokens
from bench.tool_overhead import measure_tool_overhead


@dataclass(frozen=True)
class Plan:
    """How big a run is."""

    cycles: int
    window: int
    sample: int
    repeats: int
    baseline_cycles: int
    tool_calls: int
    token_repeat: int
    concurrent: int
    startup_repeat: int
    children: int = 50
    spawn_repeat: int = 15
    plain_cycles: int = 400
    plain_window: int = 100
    plain_rounds: int = 5  # as many as the pipeline: its flatness is each cycle's fastest of them
    console_runs: int = 10_000
    console_cycles: int = 800


FULL = Plan(800, 100, 50, 5, 800, 300, 5, 100, 7, 50, 15)
QUICK = Plan(160, 20, 20, 1, 160, 100, 2, 50, 1, 10, 5, 40, 10, 1, 1_000, 50)


Rounds = dict[str, list[PipelineRun]]


def _pipeline(plan: Plan, work: Path) -> tuple[dict[str, PipelineRun], Rounds, dict[str, Any]]:
    runs: dict[str, list[PipelineRun]] = {"none": [], "null": [], "delta": []}
    for i in range(plan.repeats):
        for kind in ("none", "null", "delta"):
            print(f"  pipeline: {kind}, {plan.cycles} cycles (round {i + 1})", flush=True)
            path = work / f"{kind}.sqlite"
            runs[kind].append(asyncio.run(run_pipeline(kind, plan.cycles, path, plan.sample)))
    print(f"  pipeline: sqlitesaver, {plan.baseline_cycles} cycles", flush=True)
    base = asyncio.run(
        run_pipeline("sqlitesaver", plan.baseline_cycles, work / "sqlitesaver.sqlite", plan.sample)
    )
    best = {kind: min(rs, key=lambda r: r.seconds) for kind, rs in runs.items()}
    best["sqlitesaver"] = base
    summary = {
        kind: [{"seconds": r.seconds, "sizes": r.sizes, "disk": r.disk} for r in rs]
        for kind, rs in runs.items()
    }
    return best, runs, summary


def envelope(runs: list[PipelineRun], which: str) -> list[float]:
    """Each cycle's fastest time over the rounds (see the module docstring).

    >>> a = PipelineRun("delta", 3, wall=[1.0, 5.0, 2.0])
    >>> b = PipelineRun("delta", 3, wall=[3.0, 1.0, 2.0])
    >>> envelope([a, b], "wall")
    [1.0, 1.0, 2.0]
    """
    series = [r.wall if which == "wall" else r.cpu for r in runs]
    return [min(times) for times in zip(*series, strict=True)]


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _per_round(rounds: Rounds, which: str, first: int, last: int) -> float:
    """Median over rounds of delta / none per cycle: runs of one round saw the same load."""
    return median(
        [
            d.mean(which, first, last) / n.mean(which, first, last)
            for d, n in zip(rounds["delta"], rounds["none"], strict=True)
        ]
    )


def _extrapolate(run: PipelineRun, cycles: int, window: int) -> dict[str, float]:
    """SqliteSaver at ``cycles`` from a shorter run: quadratic bytes, linear time per cycle."""
    import numpy as np

    xs = np.array(sorted(run.sizes), dtype=float)
    ys = np.array([run.sizes[int(c)] for c in xs], dtype=float)
    a, b, c = np.polyfit(xs, ys, 2)
    size = a * cycles**2 + b * cycles + c
    first = a * window**2 + b * window
    last = size - (a * (cycles - window) ** 2 + b * (cycles - window) + c)
    slope, intercept = np.polyfit(np.arange(len(run.wall), dtype=float), np.array(run.wall), 1)
    late = slope * (cycles - window / 2) + intercept
    early = slope * (window / 2) + intercept
    return {
        "bytes": float(size),
        "growth": float(last / first),
        "flat": float(late / early),
        "late": float(late),
    }


def pipeline_figures(
    best: dict[str, PipelineRun],
    rounds: Rounds,
    plan: Plan,
    reads: dict[str, tuple[list[float], int, list[float]]],
) -> list[Figure]:
    n, w = plan.cycles, plan.window
    delta, base = best["delta"], best["sqlitesaver"]
    m = len(delta.wall)  # cycle times: one per draft-to-draft interval
    payload = n * PAYLOAD_BYTES
    delta_growth = (delta.sizes[n] - delta.sizes[n - w]) / (delta.sizes[w] - delta.sizes[0])
    scaled = base.cycles < n
    if scaled:
        ex = _extrapolate(base, n, w)
        base_bytes, base_growth, base_flat, base_late = (
            ex["bytes"],
            ex["growth"],
            ex["flat"],
            ex["late"],
        )
        how = f"extrapolated from a {base.cycles}-cycle run (quadratic fit)"
    else:
        base_bytes = base.sizes[n]
        base_growth = (base.sizes[n] - base.sizes[n - w]) / (base.sizes[w] - base.sizes[0])
        base_flat = base.mean("wall", m - w, m) / base.mean("wall", 0, w)
        base_late = base.mean("wall", m - w, m)
        how = "measured"
    ours, bare, nothing = (envelope(rounds[k], "wall") for k in ("delta", "none", "null"))
    flat = _mean(ours[m - w :]) / _mean(ours[:w])
    flat_median = median([r.mean("wall", m - w, m) / r.mean("wall", 0, w) for r in rounds["delta"]])
    flat_cpu = median([r.mean("cpu", m - w, m) / r.mean("cpu", 0, w) for r in rounds["delta"]])
    late, late_none = _mean(ours), _mean(bare)
    per_cycle = late / late_none
    per_cycle_median = _per_round(rounds, "wall", 0, m)
    per_cycle_cpu = _per_round(rounds, "cpu", 0, m)
    late_ratio = _mean(ours[m - w :]) / _mean(bare[m - w :])
    null_ratio = _mean(nothing) / late_none
    read, read_base = median(reads["delta"][0]), median(reads["sqlitesaver"][0])
    disks = [r.disk for r in rounds["delta"]]
    disk, disk_spread = max(disks), max(disks) / min(disks)
    return [
        Figure(
            "pipeline",
            f"storage after {n} cycles",
            delta.sizes[n],
            "bytes",
            base_bytes,
            f"SqliteSaver, {how}",
            base_bytes / delta.sizes[n],
            "baseline / ours",
            ">= 100",
            base_bytes / delta.sizes[n] >= 100,
            "pages in use (WAL included, free pages not), both with WAL and synchronous=NORMAL; "
            f"on disk before closing (file + WAL file): ours {delta.disk / 1e6:.3g} MB, "
            f"SqliteSaver {base.disk / 1e6:.4g} MB",
        ),
        Figure(
            "pipeline",
            f"storage growth: last {w} cycles / first {w}",
            delta_growth,
            "x",
            base_growth,
            f"SqliteSaver, {how}",
            delta_growth,
            "ours",
            "<= 1.1",
            delta_growth <= 1.1,
        ),
        Figure(
            "pipeline",
            f"disk (database + WAL) / payload after {n} cycles",
            disk / payload,
            "x",
            base.disk / (base.cycles * PAYLOAD_BYTES),
            "SqliteSaver",
            disk / payload,
            "ours (largest run)",
            "<= 3, same each run",
            disk <= 3 * payload and disk_spread <= 1.1,
            f"the files on disk before closing, in each of {len(disks)} runs: largest / smallest "
            f"{disk_spread:.3g}; pages in use {delta.sizes[n] / payload:.3g} times the payload; "
            f"payload: {PAYLOAD_BYTES} bytes of tool output per cycle, which the state holds "
            "twice (the tool message and the result record), plus the step's pending writes",
        ),
        Figure(
            "pipeline",
            f"time per cycle: last {w} / first {w}",
            flat,
            "x",
            base_flat,
            f"SqliteSaver, {how}",
            flat,
            "ours",
            "<= 1.1",
            flat <= 1.1,
            f"wall time, each cycle's fastest of {len(rounds['delta'])} rounds; median of the "
            f"per-round figure {flat_median:.3g}; CPU time (median) {flat_cpu:.3g}",
        ),
        Figure(
            "pipeline",
            f"time per cycle over {n} cycles",
            late * 1000,
            "ms",
            late_none * 1000,
            "no checkpointer",
            per_cycle,
            "ours / baseline",
            "<= 1.2",
            per_cycle <= 1.2,
            f"wall, each cycle's fastest of {len(rounds['delta'])} rounds; median of the "
            f"per-round ratio {per_cycle_median:.3g}x; CPU time (median) {per_cycle_cpu:.3g}x; "
            f"last {w} cycles {late_ratio:.3g}x; a saver that stores nothing (LangGraph's own "
            f"checkpointing) {null_ratio:.3g}x; SqliteSaver {base_late * 1000:.3g} ms per cycle "
            f"at the end ({how})",
        ),
        Figure(
            "pipeline",
            f"read the latest state of a {n}-cycle thread",
            read * 1000,
            "ms",
            read_base * 1000,
            f"SqliteSaver at {base.cycles} cycles",
            read_base / read,
            "baseline / ours",
            ">= 1 (no slower)",
            read <= read_base,
            f"graph.aget_state on a freshly opened checkpointer, in a fresh interpreter as a "
            f"resume is (median of {len(reads['delta'][0])}; the first round's target, "
            f"under 50 ms, {'met' if read * 1000 < 50 else 'missed'}); "
            f"{reads['delta'][1]} messages read back, the page cache written back first; "
            f"{_gc_note(reads)}",
        ),
    ]


def other_figures(
    tools: dict[str, float],
    tokens: dict[str, Any],
    many: dict[str, Any],
    start: dict[str, float],
) -> list[Figure]:
    sync_over, async_over = tools["sync"] - tools["bare"], tools["async"] - tools["bare_async"]
    imp = start["import_cost"]
    return [
        Figure(
            "tools",
            "tool overhead per call (sync tool)",
            sync_over * 1e6,
            "us",
            tools["bare"] * 1e6,
            "the tool called bare",
            None,
            "",
            "< 1000 us",
            sync_over < 1e-3,
            "the act stage for one call: policy, journal in SQLite (lookup, intent, outcome), "
            "registry (a worker thread for a sync tool), timing, trace",
        ),
        Figure(
            "tools",
            "tool overhead per call (async tool)",
            async_over * 1e6,
            "us",
            tools["bare_async"] * 1e6,
            "the tool awaited bare",
            None,
            "",
            "< 1000 us",
            async_over < 1e-3,
        ),
        Figure(
            "tokens",
            f"full count of {tokens['tokens']:,} tokens",
            tokens["full"] * 1000,
            "ms",
            tokens["baseline_full"] * 1000,
            "tiktoken, whole text",
            tokens["full"] / tokens["baseline_full"],
            "ours / baseline",
            "< 100 ms",
            tokens["full"] < 0.1,
            f"counter: {tokens['counter']}; {tokens['messages']} messages",
        ),
        Figure(
            "tokens",
            "recount after one new message",
            tokens["recount"] * 1000,
            "ms",
            tokens["baseline_recount"] * 1000,
            "tiktoken, whole text",
            tokens["baseline_recount"] / tokens["recount"],
            "baseline / ours",
            "< 5 ms",
            tokens["recount"] < 0.005,
            f"counter: {tokens['counter']}",
        ),
        Figure(
            "concurrency",
            f"{many['n']} concurrent runs: throughput",
            many["efficiency"],
            "of ideal",
            None,
            f"ideal: {many['ideal']:.3g} s = max(T1, n*C1)",
            many["efficiency"],
            "ideal / measured",
            ">= 0.8",
            many["efficiency"] >= 0.8,
            f"measured {many['tn']:.3g} s for {many['n']} runs ({many['runs_per_second']:.3g}/s); "
            f"one run alone: {many['t1'] * 1000:.3g} ms wall, {many['c1'] * 1000:.3g} ms CPU; "
            f"{many['model_calls_per_run']} model calls of 20 ms each per run",
        ),
        Figure(
            "concurrency",
            "memory per extra concurrent run",
            many["bytes_per_run"] / 1e6,
            "MB",
            many["rss_one"] / 1e6,
            "RSS with one run",
            None,
            "",
            "< 5 MB",
            many["bytes_per_run"] < 5e6,
        ),
        Figure(
            "startup",
            "ai-agent --help",
            start["help"] * 1000,
            "ms",
            start["python"] * 1000,
            "python -c pass",
            start["help"] / start["python"],
            "ours / baseline",
            "< 300 ms",
            start["help"] < 0.3,
        ),
        Figure(
            "startup",
            "import cost on top of langgraph + langchain-openai",
            imp * 1000,
            "ms",
            start["deps"] * 1000,
            "importing the two",
            imp / start["deps"],
            "ours / baseline",
            "< 150 ms",
            imp < 0.15,
            f"from ai_agent import Agent; -X importtime own times of the modules it adds; "
            f"wall-time difference {(start['ours'] - start['deps']) * 1000:.0f} ms",
        ),
    ]


READ_KINDS = ("delta", "sqlitesaver")


def _gc_note(reads: dict[str, tuple[list[float], int, list[float]]]) -> str:
    """Which reads a full garbage collection fell into, and for how long (`GcPauses`)."""
    parts = []
    for kind, label in (("delta", "ours"), ("sqlitesaver", "SqliteSaver")):
        hit = [p for p in reads[kind][2] if p > 0]
        parts.append(f"{label} {len(hit)} of {len(reads[kind][2])} ({sum(hit) * 1000:.0f} ms)")
    return "reads a full garbage collection fell into: " + ", ".join(parts)


def _read_rounds(work: Path, rounds: int = 4) -> dict[str, tuple[list[float], int, list[float]]]:
    """Each saver's reads, in fresh interpreters taking turns (ours, theirs, theirs, ours...).

    In turns, as every other figure here is taken, and after the page cache is written back
    (`settle_disk`, by the caller): the reads follow SqliteSaver's baseline run, which has just
    written gigabytes, and reads landing while the kernel is still writing those back would pay
    for it. (In the runs measured so far the write-back found little left to do, 1 to 2 ms: the
    reads' spread from one run to the next is larger than anything it removed.)
    """
    out: dict[str, tuple[list[float], int, list[float]]] = {k: ([], 0, []) for k in READ_KINDS}
    for round_ in range(rounds):
        for kind in in_turn(READ_KINDS, round_):
            timings, messages, pauses = _read_latest(kind, work / f"{kind}.sqlite")
            out[kind] = (out[kind][0] + timings, messages, out[kind][2] + pauses)
    return out


def _read_latest(kind: str, path: Path) -> tuple[list[float], int, list[float]]:
    """Read timings of ``kind``'s database, from a fresh interpreter (see ``bench.resume``)."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.resume", kind, str(path)],
        check=True,
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=600,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    timings, pauses = result["timings"], result["gc_pauses"]
    return [float(t) for t in timings], int(result["messages"]), [float(p) for p in pauses]


def _child_bench(module: str, *args: object) -> dict[str, Any]:
    """Run ``python -m bench.MODULE ARGS`` in a fresh interpreter; its last line, as JSON."""
    done = subprocess.run(
        [sys.executable, "-m", f"bench.{module}", *map(str, args)],
        check=True,
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=600,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _concurrency(n: int, work: Path) -> dict[str, Any]:
    return _child_bench("concurrency", n, work)


def _subagents(n: int, repeat: int, work: Path) -> dict[str, Any]:
    return _child_bench("subagents", n, repeat, work)


def subagent_figures(spawn: dict[str, Any]) -> list[Figure]:
    """A subagent's spawn time and its memory, each beside its baseline (bench/subagents.py)."""
    return [
        Figure(
            "subagents",
            "spawn: the call to the child's first model request",
            spawn["spawn"] * 1000,
            "ms",
            spawn["plain"] * 1000,
            "the same agent's plain run to its first model request",
            spawn["spawn"] / spawn["plain"],
            "ours / baseline",
            "< 50 ms",
            spawn["spawn"] < 0.05,
            f"median of {spawn['repeat']}, interleaved; the child's linked run row, lease, "
            "tools, context, recall and the draft up to the request, on a warm parent",
        ),
        Figure(
            "subagents",
            "memory per concurrent child",
            spawn["bytes_per_child"] / 1e6,
            "MB",
            spawn["rss_one"] / 1e6,
            "RSS with one child",
            None,
            "",
            "< 5 MB",
            spawn["bytes_per_child"] < 5e6,
            f"{spawn['n']} children spawned at once (each model call waits 20 ms)",
        ),
    ]


def _later_sections(plan: Plan, work: Path, *, quick: bool) -> tuple[list[Figure], dict[str, Any]]:
    """The sections after start-up: the specification's figures, the CLI, subagents."""
    print("  the specification's figures", flush=True)
    serial = measure_serialization(repeat=plan.token_repeat)
    memory = measure_agent_memory(5 if quick else 20)
    figures = spec_figures(serial, memory)
    print("  command line: read-only commands on 1,000 stored runs", flush=True)
    figures += measure_cli_reads(work / "cli", plan.startup_repeat)
    print("  subagents", flush=True)
    spawn = _subagents(plan.children, plan.spawn_repeat, work)
    figures += subagent_figures(spawn)
    print(f"  console: pages over {plan.console_runs:,} runs", flush=True)
    figures += measure_console(
        work / "console", plan.startup_repeat, plan.console_runs, plan.console_cycles
    )
    return figures, {"serialization": serial, "memory": memory, "subagents": spawn}


def _parse(argv: list[str] | None) -> tuple[argparse.Namespace, Plan]:
    """The command line: its arguments and the size of the run they ask for."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a smaller run, under a minute")
    parser.add_argument("--out", default="bench-results", help="directory for JSON and plot")
    parser.add_argument("--cycles", type=int, help="pipeline cycles (default 800, quick 160)")
    parser.add_argument(
        "--baseline-cycles", type=int, help="SqliteSaver cycles (default: as many as --cycles)"
    )
    parser.add_argument(
        "--skip",
        default="",
        help="comma-separated sections to leave out: peers (the real local model, minutes), "
        "scale-out (PostgreSQL workers, minutes)",
    )
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else FULL
    if args.cycles:
        window = max(10, args.cycles // 8)
        sizes = {"cycles": args.cycles, "window": window, "sample": window}
        plan = Plan(**{**plan.__dict__, **sizes, "baseline_cycles": args.cycles})
    if args.baseline_cycles:
        plan = Plan(**{**plan.__dict__, "baseline_cycles": args.baseline_cycles})
    return args, plan


def main(argv: list[str] | None = None) -> int:
    args, plan = _parse(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="ai-agent-bench-"))
    started = time.perf_counter()
    try:
        print(f"ai-agent benchmark ({'quick' if args.quick else 'full'}): {plan}", flush=True)
        best, rounds, runs = _pipeline(plan, work)
        # The reads follow SqliteSaver's run, which has just written gigabytes: write them back
        # first, or the reads that land while the kernel is still busy with them pay for it.
        read_settle = settle_disk()
        reads = _read_rounds(work)
        figures = pipeline_figures(best, rounds, plan, reads)
        plain, plain_runs = measure_plain(
            plan.plain_cycles, plan.plain_window, plan.plain_rounds, plan.cycles
        )
        figures += plain
        print("  tools", flush=True)
        tools = measure_tool_overhead(plan.tool_calls, work)
        print("  tokens", flush=True)
        tokens = measure_tokens(repeat=plan.token_repeat)
        print("  concurrency", flush=True)
        many = _concurrency(plan.concurrent, work)
        print("  start-up", flush=True)
        start = measure_startup(plan.startup_repeat)
        figures += other_figures(tools, tokens, many, start)
        more, more_meta = _later_sections(plan, work, quick=args.quick)
        figures += more
        skipped = {name.strip() for name in args.skip.split(",") if name.strip()}
        if "peers" not in skipped:
            print(
                "  peers: the same tasks through create_react_agent, real local model", flush=True
            )
            peers, more_meta["peers"] = measure_peers(work, 4 if args.quick else 0)
            figures += peers
        if "scale-out" not in skipped:
            print("  scale-out: workers on PostgreSQL, and a drain under SIGKILL", flush=True)
            scale, more_meta["scale_out"] = measure_scale_out(
                work, *((40, "1,2,4", 40) if args.quick else (400, "1,2,4,8", 1000))
            )
            figures += scale
        seconds = time.perf_counter() - started
        print()
        print(table(figures))
        meta = {
            "mode": "quick" if args.quick else "full",
            "plan": plan.__dict__,
            "seconds": seconds,
            "pipeline_runs": runs,
            "reads": reads,
            "reads_settle_disk_seconds": round(read_settle, 3),
            "plain_runs": plain_runs,
            "tools": tools,
            "tokens": tokens,
            "concurrency": many,
            "startup": start,
            **more_meta,
        }
        write_json(out / "results.json", figures, meta)
        (out / "results.md").write_text(markdown(figures))
        title = f"{plan.cycles}-cycle pipeline, 1 KB tool output per cycle"
        plot(out / "growth.png", best, title)
        print(
            f"\n{len(figures)} figures in {seconds:.0f} s; wrote {out / 'results.json'} and "
            f"{out / 'growth.png'}"
        )
        return 0 if all(f.ok for f in figures) else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
