"""Scale-out on PostgreSQL: worker throughput, and a drain with workers killed under it.

Every run of `bench.scale_app` asks a 50 ms model for one ``ship`` call, pauses at the gate
(the call needs approval), and gets an approving plan queued (``Agent.submit_plan``). Then:

- **Throughput**: for 1, 2, 4 and 8 worker processes (``ai-agent worker --once``), each on a
  fresh database of the same server with the same number of queued runs: runs finished per
  second, from the first plan claimed to the last plan finished (the plans' own timestamps, so
  the workers' start-up is not counted). The baseline is one worker.
- **Drain under SIGKILL**: four polling workers drain a larger queue while one of them is
  SIGKILLed every few seconds and replaced. Afterwards every plan must be finished, and the
  ledger the tool writes must hold each order at most once: a run whose worker died inside the
  tool call is reported by the journal (UNKNOWN_OUTCOME, the run paused for a person), never
  shipped again silently. A worker is killed only while it holds a run's lease (mid-run).

The PostgreSQL server is a private one (``tests/postgres/cluster.py``), started for the run.

Run it with ``python -m bench.scale_out [--runs 400] [--workers 1,2,4,8] [--drain 1000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
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

from ai_agent.testing import MockOpenAIServer, RecordedRequest, Reply

__all__ = ["answer", "drain_under_kills", "seed", "throughput"]

MODEL_DELAY = 0.05


def answer(request: RecordedRequest) -> Reply:
    """The model: ship the order the task names; once the tool answered, say it is done."""
    messages = request.body.get("messages", [])
    if any(m.get("role") == "tool" for m in messages):
        return Reply(text="done", delay=MODEL_DELAY)
    task = next((m.get("content") for m in messages if m.get("role") == "user"), "") or ""
    order = str(task).rsplit(" ", 1)[-1]
    return Reply(tool_calls=[{"name": "ship", "args": {"order": order}}], delay=MODEL_DELAY)


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


def _worker(url: str, env: dict[str, str], *, once: bool) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "ai_agent.cli", "worker", "--db", url]
    argv += ["--app", "bench.scale_app:make", "--poll", "0.05"]
    argv += ["--once"] if once else []
    return subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _plans(url: str) -> list[dict[str, Any]]:
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT thread_id, status, claimed_at, finished_at, outcome, attempts FROM agent_plans"
        ).fetchall()
    keys = ("thread_id", "status", "claimed_at", "finished_at", "outcome", "attempts")
    return [dict(zip(keys, row, strict=True)) for row in rows]


def _lease_holders(url: str) -> set[int]:
    import psycopg

    with psycopg.connect(url) as conn:
        return {row[0] for row in conn.execute("SELECT pid FROM agent_leases").fetchall()}


def throughput(cluster: Any, env: dict[str, str], runs: int, workers: int) -> dict[str, Any]:
    """Runs per second with ``workers`` processes draining ``runs`` queued runs."""
    url = cluster.create_database(f"throughput_{workers}_{random.randrange(1 << 30)}")
    asyncio.run(seed(url, runs))
    procs = [_worker(url, env, once=True) for _ in range(workers)]
    for proc in procs:
        proc.wait(timeout=3600)
    plans = _plans(url)
    done = [p for p in plans if p["status"] == "done"]
    start = min(p["claimed_at"] for p in done)
    end = max(p["finished_at"] for p in done)
    return {
        "workers": workers,
        "runs": runs,
        "done": len(done),
        "completed": sum(p["outcome"] == "completed" for p in done),
        "seconds": end - start,
        "runs_per_second": len(done) / (end - start),
    }


def drain_under_kills(
    cluster: Any, env: dict[str, str], runs: int, kill_every: float
) -> dict[str, Any]:
    """Four polling workers drain ``runs`` queued runs; one is SIGKILLed every ``kill_every`` s."""
    url = cluster.create_database(f"drain_{random.randrange(1 << 30)}")
    asyncio.run(seed(url, runs, first=1_000_000))
    procs = [_worker(url, env, once=False) for _ in range(4)]
    kills = 0
    started = time.monotonic()
    try:
        while True:
            time.sleep(kill_every)
            pending = [p for p in _plans(url) if p["status"] in ("queued", "claimed")]
            if not pending:
                break
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
    return {
        "runs": runs,
        "kills": kills,
        "seconds": seconds,
        "plans_done": sum(p["status"] == "done" for p in plans),
        "plans_other": Counter(p["status"] for p in plans if p["status"] != "done"),
        "outcomes": Counter(str(p["outcome"]) for p in plans),
        "reclaimed": sum(p["attempts"] > 1 for p in plans),
        "shipped_twice": sum(1 for o in orders if shipped[o] > 1),
        "not_shipped": sum(1 for o in orders if shipped[o] == 0),
    }


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.scale_out``: print the throughput table and the drain's counts."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.postgres.cluster import start_cluster

    parser = argparse.ArgumentParser(prog="python -m bench.scale_out", description=__doc__)
    parser.add_argument("--runs", type=int, default=400, help="queued runs per throughput round")
    parser.add_argument("--workers", default="1,2,4,8", help="worker counts to measure")
    parser.add_argument(
        "--drain", type=int, default=1000, help="runs in the SIGKILL drain (0: skip)"
    )
    parser.add_argument("--kill-every", type=float, default=5.0, help="seconds between kills")
    parser.add_argument("--out", default="bench-results", help="directory for scale_out.json")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="ai-agent-scale-"))
    cluster = start_cluster()
    try:
        with MockOpenAIServer(responder=answer) as server:
            env = {**os.environ, "BENCH_MODEL_URL": server.base_url}
            env["BENCH_LEDGER"] = str(work / "ledger.txt")
            os.environ.update(env)  # the seeding Agent in this process reads them too
            rounds = []
            for workers in (int(w) for w in args.workers.split(",")):
                rounds.append(throughput(cluster, env, args.runs, workers))
                print(json.dumps(rounds[-1]), flush=True)
            drain = (
                drain_under_kills(cluster, env, args.drain, args.kill_every) if args.drain else {}
            )
            print(json.dumps(drain, default=str), flush=True)
    finally:
        cluster.stop()
    base = rounds[0]["runs_per_second"]
    for r in rounds:
        print(
            f"{r['workers']} workers: {r['runs_per_second']:.3g} runs/s, "
            f"{r['runs_per_second'] / base:.2f}x one"
        )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "scale_out.json").write_text(json.dumps({"rounds": rounds, "drain": drain}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
