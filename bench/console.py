"""The console's pages on a large store: the runs page, the inbox, and the view of a long run.

The store is seeded through the engine's own API (the Agent, ``create_run``, ``update_run`` with
the run's summary as the runner writes it, ``DeltaSaver.acopy_thread``), never raw SQL: ``runs``
runs in all (10,000 in the full suite), most of them completed, one in a hundred paused at the
gate (copies of a real paused run, gate report and all), and the five most recently changed
ones running (copies of a real run, their rows updated to ``running`` without a summary: the
page reads them from their checkpoints, in one graph session, as it would a run in progress).
Then one long run, ``cycles`` cycles of the Agent on a scripted model calling the calculator.

Each page is fetched through the console's ASGI app in this process (token, guard, routes and
templates included; no socket): its server time, from the request to the last byte of the
response. Each is timed beside a baseline read of the same rows in the same round: the runs
page beside ``list_runs(limit=50)``, the inbox beside ``list_runs(status="paused", limit=100)``,
the run view beside the checkpointer's read of the run's latest checkpoint (``aget_tuple``).
Medians of ``repeat`` interleaved rounds, after one untimed round that warms the caches.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench.common import Figure, median

__all__ = ["measure_console", "seed_console_store"]

RUNS = 10_000
CYCLES = 800
PAGE_TARGET = 0.2
VIEW_TARGET = 0.5
LONG = "long"
TOKEN = "b" * 40


def _write_turn(i: int) -> dict[str, Any]:
    return {"tool_calls": [{"name": "write_file", "args": {"path": f"o{i}.txt", "content": "x"}}]}


async def seed_console_store(db: Path, runs: int, cycles: int) -> int:
    """The store the section reads (see the module docstring); how many runs are paused."""
    from ai_agent import Agent, AgentSettings
    from ai_agent.checkpoints import open_checkpointer
    from ai_agent.testing import ScriptedModel

    counting = [
        {"tool_calls": [{"name": "calculator", "args": {"expression": f"{i}+1"}}]}
        for i in range(cycles)
    ]
    scripts: dict[str, tuple[str, list[Any]]] = {
        "done": ("what is 6*7", [{"text": "42"}]),
        "paused": ("write a file", [_write_turn(0)]),
        LONG: ("count", [*counting, {"text": "counted"}]),
    }
    results = {}
    for thread, (task, turns) in scripts.items():
        agent = Agent(
            model=ScriptedModel(turns),
            tools=["calculator", "write_file"],
            checkpoint_path=db,
            memory_path=None,
            max_iterations=cycles + 2,
            settings=AgentSettings(),  # the defaults: a write waits for a person
        )
        async with agent:
            results[thread] = await agent.run(task, thread_id=thread)
    done, paused, long = results["done"], results["paused"], results[LONG]
    if (done.status, paused.status, long.status) != ("completed", "paused", "completed"):
        raise RuntimeError(f"the seed runs ended {done.status}, {paused.status}, {long.status}")
    async with agent:
        store = agent.store
        summaries = await store.run_summaries(["done", "paused"])
        paused_runs = 1
        async with open_checkpointer(db) as saver:
            for i in range(runs):
                thread = f"run-{i:05d}"
                await store.create_run(thread, f"task number {i}")
                if runs - i <= 5:  # the latest: running, read from their checkpoints
                    await saver.acopy_thread("done", thread)
                    await store.update_run(thread, status="running")
                elif i % 100 == 0:
                    paused_runs += 1
                    await saver.acopy_thread("paused", thread)
                    gate = dict(paused.gate) if paused.gate else None
                    await store.update_run(
                        thread, status="paused", gate=gate, summary=summaries["paused"]
                    )
                else:
                    await store.update_run(
                        thread, status="completed", final_text="42", summary=summaries["done"]
                    )
    return paused_runs


async def _timings(db: Path, repeat: int) -> dict[str, list[float]]:
    import httpx

    from ai_agent import Agent, AgentSettings
    from ai_agent.console import Access, create_app
    from ai_agent.console.auth import hosts_for
    from ai_agent.graph.database import config_for
    from ai_agent.testing import ScriptedModel

    agent = Agent(
        model=ScriptedModel([]), checkpoint_path=db, memory_path=None, settings=AgentSettings()
    )
    samples: dict[str, list[float]] = {}
    async with agent:
        app = create_app(agent, Access(TOKEN, hosts_for("127.0.0.1", 8765)))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as http:
            http.cookies.set("ai_agent_console", Access(TOKEN).session)
            store, database = agent.store, agent.archive.database

            async def page(path: str) -> None:
                response = await http.get(path)
                if response.status_code != 200:
                    raise RuntimeError(f"{path} answered {response.status_code}")

            async def latest() -> None:
                async with database.graph(reading=True) as graph:
                    await graph.checkpointer.aget_tuple(config_for(LONG))

            jobs: dict[str, Callable[[], Awaitable[Any]]] = {
                "runs page": lambda: page("/runs"),
                "runs rows": lambda: store.list_runs(limit=50),
                "inbox": lambda: page("/inbox"),
                "inbox rows": lambda: store.list_runs(status="paused", limit=100),
                "run view": lambda: page(f"/runs/{LONG}"),
                "run checkpoint": latest,
            }
            for round_ in range(repeat + 1):
                for name, job in jobs.items():
                    started = time.perf_counter()
                    await job()
                    if round_:  # the first round warms the caches
                        samples.setdefault(name, []).append(time.perf_counter() - started)
    return samples


def measure_console(
    work: Path, repeat: int, runs: int = RUNS, cycles: int = CYCLES
) -> list[Figure]:
    """The three pages' server times, each against its bare read (see the module docstring)."""
    work.mkdir(parents=True, exist_ok=True)
    db = work / "console.sqlite"
    paused = asyncio.run(seed_console_store(db, runs, cycles))
    samples = asyncio.run(_timings(db, repeat))
    how = f"median of {repeat} rounds, interleaved with the baseline, after one warm-up round"
    specs = [
        ("runs page", "runs rows", f"runs page: 50 of {runs:,} runs", "list_runs(limit=50)"),
        (
            "inbox",
            "inbox rows",
            f"inbox: {min(paused, 100)} of {paused:,} paused runs",
            "list_runs(paused)",
        ),
        ("run view", "run checkpoint", f"run view: a {cycles}-cycle run", "its latest checkpoint"),
    ]
    figures = []
    for ours_name, base_name, title, base_title in specs:
        ours, base = median(samples[ours_name]), median(samples[base_name])
        target = VIEW_TARGET if ours_name == "run view" else PAGE_TARGET
        figures.append(
            Figure(
                "console",
                f"{title}: server time",
                ours * 1000,
                "ms",
                base * 1000,
                base_title,
                ours / base,
                "ours / baseline",
                f"< {target * 1000:.0f} ms",
                ours < target,
                f"the console's ASGI app in process, request to response; {how}",
                {"ours": samples[ours_name], "baseline": samples[base_name]},
            )
        )
    return figures


if __name__ == "__main__":  # python -m bench.console DIR [RUNS CYCLES REPEAT]: this section alone
    from bench.report import table

    args = [int(a) for a in sys.argv[2:]]
    runs, cycles, repeat = (*args, *(RUNS, CYCLES, 5)[len(args) :])[:3]
    print(table(measure_console(Path(sys.argv[1]), repeat, runs, cycles)))
