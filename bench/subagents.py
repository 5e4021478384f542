"""Spawning a subagent: time from the call to the child's first model request, and memory each.

The spawn is the parent's child tool doing its work (``ai_agent.graph.subagents``): look the
child's thread up, write its linked run row, take its lease, open its tools, build its run
context, and run its pipeline up to the first model request (recall, then draft). It is timed
from the call of the bound tool to the moment the child's scripted model is asked, on a warm
parent (its database open, its child built on it: what every spawn after the first costs).
The baseline, measured in the same process and interleaved with it, is the same agent's plain
``run`` of the same task, from the call to its first model request: the pipeline's own start.
Both take the median of ``repeat`` rounds.

Memory per child: ``n`` children spawned at once (each child's model waits 20 ms, like a
server), the growth of the process's peak RSS from one child to ``n``, divided by ``n - 1``.

Run in a fresh interpreter (``python -m bench.subagents N REPEAT DIR``), away from the other
sections; it prints one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from ai_agent import Agent
from ai_agent.config import AgentSettings
from ai_agent.testing import ScriptedModel
from ai_agent.tools.toolsets import ChildToolset
from bench.common import median
from bench.concurrency import SlowModel, peak_rss

__all__ = ["measure_subagents"]


class FirstRequest(SlowModel):
    """The slow scripted model, noting when it is asked (the spawn's end)."""

    def asked(self) -> None:
        """Note the time of the request."""
        ASKED.append(time.perf_counter())


ASKED: list[float] = []  # when the child's model was asked, in order (this process only)


def _agents(db: Path) -> tuple[Agent, Agent, ChildToolset]:
    child = Agent(
        model=FirstRequest(turns=[{"text": "done"}]),
        system_prompt="You help.",
        memory_path=None,
        settings=AgentSettings(),
    )
    tool = child.as_tool("helper", "Helps.")
    parent = Agent(
        model=ScriptedModel([{"text": "parent"}]),
        tools=[tool],
        checkpoint_path=db,
        memory_path=None,
        settings=AgentSettings(),
    )
    return parent, child, tool


async def _first_request(work: Any) -> float:
    """Seconds from starting ``work`` to the child's first model request."""
    ASKED.clear()
    started = time.perf_counter()
    await work
    return ASKED[0] - started


async def measure_subagents(n: int, repeat: int, workdir: Path) -> dict[str, Any]:
    """The spawn time and its baseline (medians), and memory per concurrent child."""
    parent, child, tool = _agents(workdir / "subagents.sqlite")
    spec = tool.tools()[0]
    async with parent:
        await parent.run("warm up", thread_id="parent")
        shared = parent._subagents.shared(child)  # the child on the parent's database

        def spawn(i: int) -> Any:
            ctx = {"thread_id": "parent", "iteration": 1, "call_id": f"c{i}.0"}
            return spec.fn({"task": "help"}, ctx)

        await spawn(0)  # the first spawn builds nothing more, but warms the child's path
        await shared._runner.run("help", thread_id="plain-warm")
        spawns: list[float] = []
        plains: list[float] = []
        for i in range(repeat):
            spawns.append(await _first_request(spawn(i + 1)))
            plains.append(await _first_request(shared._runner.run("help", thread_id=f"p{i}")))

        async def many(count: int, tag: str) -> int:
            calls = [f"{tag}{i}.0" for i in range(count)]
            ctxs = [{"thread_id": "parent", "iteration": 2, "call_id": c} for c in calls]
            work = asyncio.gather(*(spec.fn({"task": "help"}, c) for c in ctxs))
            results, peak = await peak_rss(work)
            assert all(r["status"] == "ok" for r in results), results
            return peak

        one = max([await many(1, f"one{i}-") for i in range(3)])
        all_at_once = await many(n, "many")
    return {
        "n": n,
        "repeat": repeat,
        "spawn": median(spawns),
        "plain": median(plains),
        "spawns": spawns,
        "plains": plains,
        "rss_one": one,
        "rss_many": all_at_once,
        "bytes_per_child": max(0, all_at_once - one) / (n - 1),
    }


if __name__ == "__main__":
    result = asyncio.run(measure_subagents(int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])))
    print(json.dumps(result))
