"""Scale-out on PostgreSQL: worker throughput, and a drain with workers killed under it.

Every run of `bench.scale_app` asks a 50 ms model for one ``ship`` call, pauses at the gate
(the call needs approval), and gets an approving plan queued (``Agent.submit_plan``). The model
is `bench.scale_model`, an asyncio server in its own process: every reply takes 50 ms however
many requests arrive at once (the bench prints the seconds per reply it measured with 32 at
once, and the server's own count over every reply of the run).

- **Throughput**: for 1, 2, 4 and 8 worker processes (``ai-agent worker --once``), each on a
  copy of one seeded database (``CREATE DATABASE ... TEMPLATE``: the same queued runs in every
  round): runs finished per second, from the first plan claimed to the last plan finished (the
  plans' own timestamps, so the workers' start-up is not counted). The baseline is one worker.
  Each round also reports CPU milliseconds per run of each kind of process (`bench.scale_cpu`):
  the workers (an idle worker's start-up taken off), PostgreSQL, the model, and what the rest
  of the machine took meanwhile.
- **Drain under SIGKILL**: four polling workers drain a larger queue while one of them is
  SIGKILLed every few seconds and replaced. Afterwards every plan must be finished, and the
  ledger the tool writes must hold each order at most once: a run whose worker died inside the
  tool call is reported by the journal (UNKNOWN_OUTCOME, the run paused for a person), never
  shipped again silently. A worker is killed only while it holds a run's lease (mid-run). Its
  runs are seeded through the engine by several processes at once.

The PostgreSQL server is a private one (``tests/postgres/cluster.py``), started for the run.

Run it with ``python -m bench.scale_out [--runs 400] [--workers 1,2,4,8] [--drain 1000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.scale_cpu import machine_busy_ms, postgres_cpu_ms, process_cpu_ms

__all__ = [
    "drain_under_kills",
    "model_latency",
    "model_stats",
    "seed",
    "seed_in_processes",
    "throughput",
]

MODEL_DELAY = 0.05


async def seed(url: str, runs: int, first: int = 0, concurrency: int = 8) -> list[str]:
    """``runs`` paused runs with an approving plan queued for each; their thread ids."""
    from bench.scale_app import make

    agent = make(url)
    limit = asyncio.Semaphore(concurrency)

    async def one(i: int) -> str:
        async with limit:
            paused = await agent.run(f"ship order {first + i}")
            if paused.status != "paused":
                raise RuntimeError(f"seeding: run {i} ended {paused.status}, not paused")
            await agent.submit_plan(paused.thread_id, {"approve": ["*"]})
            return paused.thread_id

    async with agent:
        return await asyncio.gather(*(one(i) for i in range(runs)))


def _seed_slice(url: str, runs: int, first: int) -> int:
    return len(asyncio.run(seed(url, runs, first)))


def seed_in_processes(url: str, runs: int, first: int, processes: int) -> int:
    """Seed ``runs`` runs through the engine, split over ``processes`` processes."""
    if runs == 0:
        return _seed_slice(url, 0, first)  # creates the tables
    share = -(-runs // processes)
    slices = [(url, min(share, runs - s), first + s) for s in range(0, runs, share)]
    with multiprocessing.get_context("spawn").Pool(len(slices)) as pool:
        return sum(pool.starmap(_seed_slice, slices))


def start_model(delay: float) -> tuple[subprocess.Popen[str], str]:
    """`bench.scale_model` in a process of its own; (the process, its base URL)."""
    argv = [sys.executable, "-m", "bench.scale_model", "--delay", str(delay)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    with proc.stdout:  # it says its port and nothing else
        port = proc.stdout.readline().strip()
    if not port.isdigit():
        proc.kill()
        raise RuntimeError(f"the bench's model server did not start (said {port!r})")
    return proc, f"http://127.0.0.1:{port}/v1"


def model_latency(base_url: str, concurrent: int = 32) -> dict[str, Any]:
    """Seconds per reply with ``concurrent`` requests at once: the model must not queue them."""
    import httpx

    body = {"model": "m", "messages": [{"role": "user", "content": "ship order 1"}]}

    async def one(client: httpx.AsyncClient) -> float:
        started = time.perf_counter()
        response = await client.post(f"{base_url}/chat/completions", json=body)
        response.raise_for_status()
        return time.perf_counter() - started

    async def all_at_once() -> list[float]:
        async with httpx.AsyncClient(timeout=30) as client:
            return sorted(await asyncio.gather(*(one(client) for _ in range(concurrent))))

    took = asyncio.run(all_at_once())  # as the client saw them: its own CPU is in there too
    return {
        "concurrent": concurrent,
        "client_median_s": took[len(took) // 2],
        "client_max_s": took[-1],
        "server": model_stats(base_url),
    }


def model_stats(base_url: str) -> dict[str, float]:
    """The model server's own count of replies and seconds per reply (mean, longest) so far."""
    import httpx

    return dict(httpx.get(f"{base_url}/stats", timeout=30).json())


def _worker(url: str, env: dict[str, str], *, once: bool) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "ai_agent.cli", "worker", "--db", url]
    argv += ["--app", "bench.scale_app:make", "--poll", "0.05"]
    argv += ["--once"] if once else []
    return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _reap_cpu_ms(proc: subprocess.Popen[bytes]) -> float:
    """Wait for a worker; its whole CPU time (``os.wait4``'s rusage), in milliseconds."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return (usage.ru_utime + usage.ru_stime) * 1000


def _plans(url: str) -> list[dict[str, Any]]:
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT p.thread_id, p.status, p.claimed_at, p.finished_at, p.outcome, p.attempts, "
            "p.error, r.status FROM agent_plans AS p LEFT JOIN agent_runs AS r USING (thread_id)"
        ).fetchall()
    keys = ("thread_id", "status", "claimed_at", "finished_at", "outcome", "attempts", "error")
    return [dict(zip((*keys, "run_status"), row, strict=True)) for row in rows]


def _lease_holders(url: str) -> set[int]:
    import psycopg

    with psycopg.connect(url) as conn:
        return {row[0] for row in conn.execute("SELECT pid FROM agent_leases").fetchall()}


class Bench:
    """The server, the model and the environment the rounds share."""

    def __init__(self, cluster: Any, model: subprocess.Popen[str], env: dict[str, str]) -> None:
        self.cluster = cluster
        self.model = model
        self.env = env
        self.postmaster = int((cluster.root / "data" / "postmaster.pid").read_text().split()[0])

    def copy(self, template: str, name: str) -> str:
        """A new database holding what ``template`` holds; its URL."""
        import psycopg

        with psycopg.connect(self.cluster.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')  # bench names only
        return str(self.cluster.url(name))

    def cpu(self) -> dict[str, float]:
        """CPU so far (ms): PostgreSQL, the model, the machine."""
        return {
            "postgres": postgres_cpu_ms(self.postmaster),
            "model": process_cpu_ms(self.model.pid),
            "machine": machine_busy_ms(),
        }

    def worker_startup_ms(self, url: str) -> float:
        """CPU of a worker that starts, finds nothing to do and exits."""
        return _reap_cpu_ms(_worker(url, self.env, once=True))


def throughput(
    bench: Bench, template: str, runs: int, workers: int, startup_ms: float
) -> dict[str, Any]:
    """Runs per second, and CPU ms per run, with ``workers`` processes draining ``runs`` runs."""
    url = bench.copy(template, f"throughput_{workers}_{random.randrange(1 << 30)}")
    before, started = bench.cpu(), time.monotonic()
    procs = [_worker(url, bench.env, once=True) for _ in range(workers)]
    worker_ms = sum(_reap_cpu_ms(proc) for proc in procs) - workers * startup_ms
    after, wall = bench.cpu(), time.monotonic() - started
    plans = _plans(url)
    done = [p for p in plans if p["status"] == "done"]
    start = min(p["claimed_at"] for p in done)
    end = max(p["finished_at"] for p in done)
    spent = {kind: (after[kind] - before[kind]) / runs for kind in before}
    ours = worker_ms / runs + spent["postgres"] + spent["model"] + startup_ms * workers / runs
    return {
        "workers": workers,
        "runs": runs,
        "done": len(done),
        "completed": sum(p["outcome"] == "completed" for p in done),
        "seconds": end - start,
        "runs_per_second": len(done) / (end - start),
        "cpu_ms_per_run": {
            "workers": round(worker_ms / runs, 1),
            "postgres": round(spent["postgres"], 1),
            "model": round(spent["model"], 1),
            "others_on_the_machine": round(
                spent["machine"] - ours - startup_ms * workers / runs, 1
            ),
        },
        "wall_seconds": round(wall, 1),
    }


def drain_under_kills(bench: Bench, runs: int, kill_every: float) -> dict[str, Any]:
    """Four polling workers drain ``runs`` queued runs; one is SIGKILLed every ``kill_every`` s."""
    env = bench.env
    url = bench.cluster.create_database(f"drain_{random.randrange(1 << 30)}")
    seeding = time.monotonic()
    seed_in_processes(url, runs, first=1_000_000, processes=2)
    seeded = time.monotonic() - seeding
    print(f"drain: {runs} runs seeded in {seeded:.0f}s", flush=True)
    procs = [_worker(url, env, once=False) for _ in range(4)]
    kills = 0
    started = reported = time.monotonic()
    try:
        while True:
            time.sleep(kill_every)
            pending = [p for p in _plans(url) if p["status"] in ("queued", "claimed")]
            if not pending:
                break
            if time.monotonic() - reported > 60:  # a long drain says how far it got
                reported = time.monotonic()
                left, took = len(pending), round(reported - started)
                print(
                    f"drain: {runs - left} of {runs} plans done, {kills} kills, {took}s", flush=True
                )
            # Only a worker in the middle of a run (it holds a thread's lease): killing one that
            # is still starting up would test nothing.
            busy = _lease_holders(url)
            working = [i for i, proc in enumerate(procs) if proc.pid in busy]
            if not working:
                continue
            victim = random.choice(working)
            procs[victim].send_signal(signal.SIGKILL)
            procs[victim].wait()
            kills += 1
            procs[victim] = _worker(url, env, once=False)
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            proc.wait(timeout=120)
    seconds = time.monotonic() - started
    plans = _plans(url)
    shipped = Counter(Path(env["BENCH_LEDGER"]).read_text().split())
    orders = {str(1_000_000 + i) for i in range(runs)}
    outcomes = Counter(str(p["outcome"]) for p in plans)
    return {
        "runs": runs,
        "seeding_seconds": round(seeded, 1),
        "kills": kills,
        "seconds": round(seconds, 1),
        "plans_done": sum(p["status"] == "done" for p in plans),
        "plans_other": Counter(p["status"] for p in plans if p["status"] != "done"),
        "outcomes": outcomes,
        "reclaimed": sum(p["attempts"] > 1 for p in plans),
        # What a plan that did not finish says, and where its run is (the first few of each).
        "not_done": [
            {k: p[k] for k in ("thread_id", "status", "error", "run_status")}
            for p in plans
            if p["status"] != "done"
        ][:20],
        "shipped_twice": sum(1 for o in orders if shipped[o] > 1),
        "not_shipped": sum(1 for o in orders if shipped[o] == 0),
        # Lost: a plan never finished, or a run reported completed whose order never shipped.
        "lost": sum(p["status"] in ("queued", "claimed") for p in plans)
        + max(0, outcomes["completed"] - sum(1 for o in orders if shipped[o] >= 1)),
    }


def _rounds(bench: Bench, runs: int, counts: list[int]) -> list[dict[str, Any]]:
    template = f"seeded_{random.randrange(1 << 30)}"
    empty = bench.cluster.create_database(f"empty_{random.randrange(1 << 30)}")
    seed_in_processes(empty, 0, 0, 1)
    startup_ms = bench.worker_startup_ms(empty)
    print(json.dumps({"worker_startup_cpu_ms": round(startup_ms)}), flush=True)
    seed_in_processes(bench.cluster.create_database(template), runs, 0, processes=2)
    rounds = []
    for workers in counts:
        rounds.append(throughput(bench, template, runs, workers, startup_ms))
        print(json.dumps(rounds[-1]), flush=True)
    return rounds


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.scale_out``: print the throughput table and the drain's counts."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.postgres.cluster import start_cluster

    parser = argparse.ArgumentParser(prog="python -m bench.scale_out", description=__doc__)
    parser.add_argument("--runs", type=int, default=400, help="queued runs per throughput round")
    parser.add_argument("--workers", default="1,2,4,8", help="worker counts to measure ('': none)")
    parser.add_argument(
        "--drain", type=int, default=1000, help="runs in the SIGKILL drain (0: skip)"
    )
    parser.add_argument("--kill-every", type=float, default=5.0, help="seconds between kills")
    parser.add_argument("--out", default="bench-results", help="directory for scale_out.json")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="ai-agent-scale-"))
    cluster = start_cluster()
    model, model_url = start_model(MODEL_DELAY)
    try:
        env = {**os.environ, "BENCH_MODEL_URL": model_url}
        env["BENCH_LEDGER"] = str(work / "ledger.txt")
        os.environ.update(env)  # the seeding processes read them too
        bench = Bench(cluster, model, env)
        latency = model_latency(model_url)
        print(json.dumps({"model_latency": latency}), flush=True)
        counts = [int(w) for w in args.workers.split(",") if w]
        rounds = _rounds(bench, args.runs, counts) if counts else []
        drain = drain_under_kills(bench, args.drain, args.kill_every) if args.drain else {}
        print(json.dumps(drain, default=str), flush=True)
        served = model_stats(model_url)
        print(json.dumps({"model_replies": served}), flush=True)
    finally:
        model.terminate()
        model.wait(timeout=30)
        cluster.stop()
    for r in rounds:
        print(
            f"{r['workers']} workers: {r['runs_per_second']:.3g} runs/s, "
            f"{r['runs_per_second'] / rounds[0]['runs_per_second']:.2f}x one, "
            f"CPU ms per run {r['cpu_ms_per_run']}"
        )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result = {"model_latency": latency, "model_replies": served, "rounds": rounds, "drain": drain}
    (out / "scale_out.json").write_text(json.dumps(result, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
