"""Many runs in one process: throughput against the ideal, and memory per extra run.

Each run is the real engine (``Agent.run``: run store, lease, journal, delta checkpoints) on a
scripted chat model that takes 20 ms per call (an async sleep, like waiting for a server): three
tool calls, then an answer. One run alone gives T1 (wall) and C1 (CPU the process spent on it).
``n`` runs at once would ideally finish in ``max(T1, n * C1)``: the waits overlap perfectly and
the CPU work, one interpreter lock, runs back to back. Throughput is reported as that ideal over
the measured time (1.0 = perfect). Memory is the growth of the process's peak RSS from one run
to ``n`` concurrent runs (sampled every 5 ms), divided by ``n - 1``.

Run in a fresh interpreter (``python -m bench.concurrency N DIR``), away from other sections.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, TypeVar

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from ai_agent import Agent, ToolCategory, ToolSpec
from ai_agent.config import AgentSettings
from ai_agent.testing import ScriptedModel

T = TypeVar("T")

__all__ = ["measure_concurrency"]

LATENCY = 0.02
SCRIPT = [
    {"tool_calls": [{"name": "lookup", "args": {"q": "a"}}]},
    {"tool_calls": [{"name": "lookup", "args": {"q": "b"}}]},
    {"tool_calls": [{"name": "lookup", "args": {"q": "c"}}]},
    {"text": "done"},
]


class SlowModel(ScriptedModel):
    """The scripted model, answering after an async 20 ms (a server's latency)."""

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.asked()
        await asyncio.sleep(LATENCY)
        reply = self._reply(messages, list(kwargs.get("tools") or []))
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def asked(self) -> None:
        """Called as each request arrives (a bench that times the first request notes it)."""


async def lookup(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
    return {"status": "ok", "content": f"result for {args.get('q')}"}


def agent(db: Path) -> Agent:
    tool = ToolSpec(
        "lookup", lookup, description="Look something up.", category=ToolCategory.READ_ONLY
    )
    return Agent(
        model=SlowModel(turns=SCRIPT),
        tools=[tool],
        checkpoint_path=db,
        memory_path=None,
        settings=AgentSettings(),
    )


def rss() -> int:
    """Resident set size of this process now, in bytes (``ru_maxrss`` would include the memory
    of the process that started this one: on Linux the peak survives ``exec``)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize()


async def peak_rss(work: Awaitable[T]) -> tuple[T, int]:
    """What ``work`` returns, and the highest RSS seen while it ran (sampled every 5 ms)."""
    peak = rss()
    done = False

    async def sample() -> None:
        nonlocal peak
        while not done:
            peak = max(peak, rss())
            await asyncio.sleep(0.005)

    sampler = asyncio.create_task(sample())
    try:
        result = await work
    finally:
        done = True
        await sampler
    return result, max(peak, rss())


async def _runs(a: Agent, count: int, tag: str) -> tuple[float, float, int]:
    """Wall and CPU seconds of ``count`` concurrent runs, and the highest RSS seen meanwhile."""
    wall, cpu = time.perf_counter(), time.process_time()
    runs = (a.run("look three things up", thread_id=f"{tag}{i}") for i in range(count))
    results, peak = await peak_rss(asyncio.gather(*runs))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert all(r.status == "completed" for r in results), [r.status for r in results]
    return wall, cpu, peak


async def measure_concurrency(n: int, workdir: Path) -> dict[str, Any]:
    """T1, C1, the n-run time, the ideal, and memory per extra run."""
    async with agent(workdir / "concurrency.sqlite") as a:
        await _runs(a, 1, "warm")
        # The fastest of ten: one run is short (about 0.1 s), so a single disturbed one would
        # inflate C1, and with it the ideal (a figure above 1 was seen with three).
        singles = [await _runs(a, 1, f"one{i}-") for i in range(10)]
        t1 = min(s[0] for s in singles)
        c1 = min(s[1] for s in singles)
        rss_one = max(s[2] for s in singles)
        tn, cn, rss_many = await _runs(a, n, "many")
    ideal = max(t1, n * c1)
    return {
        "n": n,
        "t1": t1,
        "c1": c1,
        "tn": tn,
        "cn": cn,
        "ideal": ideal,
        "naive_ideal": t1,
        "efficiency": ideal / tn,
        "runs_per_second": n / tn,
        "model_calls_per_run": len(SCRIPT),
        "rss_one": rss_one,
        "rss_many": rss_many,
        "bytes_per_run": max(0, rss_many - rss_one) / (n - 1),
    }


if __name__ == "__main__":
    result = asyncio.run(measure_concurrency(int(sys.argv[1]), Path(sys.argv[2])))
    print(json.dumps(result))
