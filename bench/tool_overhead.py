"""Tool execution overhead: the act stage's whole path for one call, minus the tool's own time.

The engine path is the ``act`` stage itself (``ai_agent.nodes.act``), run on a state with one
pending call: the stage wrapper (events, trace, timing), policy screening, the journal (lookup,
intent before, outcome after, in the real run store on SQLite), the registry (env check,
timeout, normalising the result, timing) and formatting the result. The baseline is the same
tool function called bare. Both a sync tool (run on a worker thread, as the registry does for
any sync tool) and an async one are measured.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from langgraph.runtime import Runtime

from ai_agent.checkpoints import RunStore
from ai_agent.context import CallerBase, ModelCall, ModelReply, RunContext, RunPolicy
from ai_agent.nodes.act import act
from ai_agent.state import PendingCall, RunState, ToolCall, ToolResult
from ai_agent.tools.registry import ToolRegistry
from ai_agent.tools.spec import ToolCategory, ToolSpec

__all__ = ["measure_tool_overhead"]

TEXT = "x" * 1000


def sync_tool(args: dict[str, Any], ctx: dict[str, Any]) -> ToolResult:
    """The tool: a little work, a 1 KB result."""
    return ToolResult(status="ok", content=TEXT[: int(args["n"]) % 1000 + 1] * 1)


async def async_tool(args: dict[str, Any], ctx: dict[str, Any]) -> ToolResult:
    """The same tool, async."""
    return sync_tool(args, ctx)


def _state(name: str, i: int) -> RunState:
    call = ToolCall(id=f"call_{i}", name=name, args={"n": i})
    return RunState(
        task="t",
        iteration=i,
        active_tools=[name],
        pending=[PendingCall(call=call, blocked=None, preview="")],
        grants=[],
        plans=[],
        results=[],
        messages=[],
    )


class _NoModel(CallerBase):
    async def answer(self, call: ModelCall) -> ModelReply:
        raise AssertionError("act never calls the model")


async def _engine(name: str, calls: int, db: Path) -> float:
    store = RunStore(db)
    specs = [
        ToolSpec("sync_tool", sync_tool, description="Work.", category=ToolCategory.READ_ONLY),
        ToolSpec("async_tool", async_tool, description="Work.", category=ToolCategory.READ_ONLY),
    ]

    context = RunContext(
        thread_id=f"tools-{name}",
        model=_NoModel(),
        tools=ToolRegistry(specs),
        journal=store,
        policy=RunPolicy(memory_path=None),
    )
    runtime = Runtime(context=context)
    try:
        for i in range(5):  # warm up: imports, the statement cache, the thread pool
            await act(_state(name, 10_000 + i), runtime=runtime)
        started = time.perf_counter()
        for i in range(calls):
            update = await act(_state(name, i), runtime=runtime)
            assert update["results"][0]["result"]["status"] == "ok"
        return (time.perf_counter() - started) / calls
    finally:
        store.close()


def _bare(calls: int) -> float:
    started = time.perf_counter()
    for i in range(calls):
        sync_tool({"n": i}, {})
    return (time.perf_counter() - started) / calls


async def _bare_async(calls: int) -> float:
    started = time.perf_counter()
    for i in range(calls):
        await async_tool({"n": i}, {})
    return (time.perf_counter() - started) / calls


def measure_tool_overhead(calls: int, workdir: Path) -> dict[str, float]:
    """Seconds per call: engine and bare, for the sync and the async tool (best of 3 rounds)."""
    out: dict[str, list[float]] = {"sync": [], "async": [], "bare": [], "bare_async": []}
    for round_ in range(3):
        db = workdir / f"tools{round_}.sqlite"
        out["sync"].append(asyncio.run(_engine("sync_tool", calls, db)))
        out["async"].append(asyncio.run(_engine("async_tool", calls, db)))
        out["bare"].append(_bare(calls))
        out["bare_async"].append(asyncio.run(_bare_async(calls)))
    return {k: min(v) for k, v in out.items()}
