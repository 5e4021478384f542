"""What one step costs the PostgreSQL checkpointer: a task's write and its checkpoint, leased.

``python -m bench.pg_steps [--steps N] [--against DIR]`` starts a private server
(``tests/postgres/cluster.py``) and times, in fresh interpreters, ``steps`` steps of one thread
under a lease: ``aput_writes`` of one message, then the ``aput`` of a checkpoint whose message
list grows by one. It prints the CPU and wall milliseconds a step (median and mean, after 20
steps of warm-up). ``--against DIR`` names a checkout of other code (its ``ai_agent``) to run
in turns with this one (this, that, that, this...), for a before and after on the same server.

A component figure for `docs/scale-out.md`, not one of the suite's: a resumed run is about
eight such steps, and on two cores their CPU is what four workers share.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

__all__ = ["measure_steps"]


async def measure_steps(url: str, steps: int, warm_up: int = 20) -> dict[str, float]:
    """Milliseconds a step: CPU (``time.process_time``) and wall, median and mean."""
    from langgraph.checkpoint.base import empty_checkpoint

    from ai_agent.checkpoints.fencing import LEASE_KEY
    from ai_agent.checkpoints.postgres import PostgresRunStore
    from ai_agent.checkpoints.postgres_saver import open_postgres_checkpointer

    store = PostgresRunStore(url)
    thread = f"steps-{uuid.uuid4().hex[:8]}"
    lease = await store.acquire(thread, seconds=600)
    base = {"thread_id": thread, "checkpoint_ns": "", LEASE_KEY: lease.owner}
    cpu: list[float] = []
    wall: list[float] = []
    messages: list[dict[str, object]] = []
    parent: str | None = None
    try:
        async with open_postgres_checkpointer(url) as saver:
            for i in range(steps + warm_up):
                messages = [*messages, {"role": "tool", "content": "x" * 200, "i": i}]
                checkpoint = empty_checkpoint()
                checkpoint["channel_values"] = {"messages": messages, "n": i, "task": "t"}
                checkpoint["channel_versions"] = {"messages": i + 1, "n": i + 1, "task": 1}
                config = {"configurable": {**base, "checkpoint_id": parent}}
                started, ticks = time.perf_counter(), time.process_time()
                if parent is not None:
                    write = [("messages", [{"role": "tool", "content": "y" * 200}])]
                    await saver.aput_writes(config, write, f"task-{i}")  # type: ignore[arg-type]
                new = await saver.aput(
                    config,  # type: ignore[arg-type]
                    checkpoint,
                    {"step": i, "source": "loop"},
                    {"messages": i + 1, "n": i + 1},
                )
                if i >= warm_up:
                    cpu.append(time.process_time() - ticks)
                    wall.append(time.perf_counter() - started)
                parent = new["configurable"]["checkpoint_id"]
    finally:
        store.close()
    return {
        "cpu_ms_median": statistics.median(cpu) * 1000,
        "cpu_ms_mean": statistics.fmean(cpu) * 1000,
        "wall_ms_median": statistics.median(wall) * 1000,
        "wall_ms_mean": statistics.fmean(wall) * 1000,
    }


def _one(url: str, steps: int, root: Path) -> dict[str, float]:
    # Imported here, not at the top: the measuring child runs this file by its path with the
    # other checkout first on its path, whose ``bench`` may not have these.
    from bench.common import subprocess_env

    env = {**subprocess_env(), "PYTHONPATH": str(root)}
    done = subprocess.run(
        # This file by its path: the other checkout's ``ai_agent`` is measured with it.
        [sys.executable, __file__, "--url", url, "--steps", str(steps)],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        check=True,
        timeout=600,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", type=Path, help="a checkout of other code to compare")
    parser.add_argument("--url", help=argparse.SUPPRESS)  # one measurement, in this process
    args = parser.parse_args()
    if args.url:
        print(json.dumps(asyncio.run(measure_steps(args.url, args.steps))))
        return
    from bench.common import in_turn
    from tests.postgres.cluster import start_cluster

    here = Path(__file__).resolve().parent.parent
    codes = {"this": here, **({"that": args.against.resolve()} if args.against else {})}
    cluster = start_cluster()
    try:
        url = cluster.create_database("pg_steps")
        names = list(codes)
        for round_ in range(args.rounds):
            for name in in_turn(names, round_):
                print(name, json.dumps(_one(url, args.steps, codes[name])), flush=True)
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
