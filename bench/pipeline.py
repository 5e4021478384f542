"""The nine-stage pipeline, run for many cycles on three checkpointers side by side.

Every cycle the scripted model asks for one ``fetch`` call with a new argument and the tool
returns 1,000 bytes of incompressible text (the payload). The graph, nodes, context and tool are
the engine's own (``build_graph``); only the checkpointer changes: none at all, a saver that
stores nothing (what LangGraph's own checkpointing costs), LangGraph's SqliteSaver (through
aiosqlite, as the engine used it), and the delta saver. Both SQLite savers
run with WAL and ``synchronous=NORMAL``, so neither pays an fsync per step and the comparison is
about what they store. Runs use ``durability="sync"``, as the engine does.

Per cycle the run records wall and CPU time from one ``draft`` start to the next (so the last
cycle, which finalizes instead, is left out) and, every ``sample`` cycles, the bytes the
database holds (pages in use, WAL included, free pages not). The time taken to measure those
bytes is left out of the cycle it falls in: it is the benchmark's cost, not the saver's.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import random
import sqlite3
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)

from ai_agent.checkpoints import strict_serializer
from ai_agent.checkpoints.backends import engine_saver
from ai_agent.context import (
    CallerBase,
    JournalEntry,
    ModelCall,
    ModelReply,
    RunContext,
    RunPolicy,
)
from ai_agent.events import ProgressEvent, StageStarted
from ai_agent.graph.build import build_graph, recursion_limit
from ai_agent.state import Message, RunState, ToolCall, ToolResult, new_run_state
from ai_agent.tools.registry import ToolRegistry
from ai_agent.tools.spec import ToolCategory, ToolSpec
from bench.common import GcPauses

__all__ = ["PAYLOAD_BYTES", "PipelineRun", "read_latest", "run_pipeline"]

PAYLOAD_BYTES = 1000
KINDS = ("none", "null", "sqlitesaver", "delta")


class NullSaver(BaseCheckpointSaver[int]):
    """A saver that stores nothing: what LangGraph's own checkpoint machinery costs a step."""

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return None

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return {"configurable": {**config["configurable"], "checkpoint_id": checkpoint["id"]}}

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        return None


class ScriptedCaller(CallerBase):
    """The benchmark's scripted model: every turn asks for one ``fetch`` of a new page.

    It is a ``ModelCaller`` (the engine's model seam), so the figures measure the engine and the
    checkpointer rather than LangChain's message conversion.
    """

    def __init__(self) -> None:
        self.turn = 0

    async def answer(self, call: ModelCall) -> ModelReply:
        self.turn += 1
        fetch = ToolCall(id=f"call_{self.turn}", name="fetch", args={"page": self.turn})
        return ModelReply(
            message=Message(role="assistant", content="", tool_calls=[fetch]),
            usage={},
            latency_ms=0.0,
        )


async def fetch(args: dict[str, Any], ctx: dict[str, Any]) -> ToolResult:
    """1,000 bytes of incompressible text, different for every page."""
    raw = random.Random(int(args["page"])).randbytes(PAYLOAD_BYTES * 3 // 4)
    return ToolResult(status="ok", content=base64.b64encode(raw).decode())


class MemoryJournal:
    """A journal in memory: the run store's cost is measured in the tool section instead."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, int, str], JournalEntry] = {}

    async def lookup(self, thread_id: str, iteration: int, call_id: str) -> JournalEntry | None:
        return self.entries.get((thread_id, iteration, call_id))

    async def intent(self, thread_id: str, iteration: int, call: ToolCall) -> None:
        return None

    async def outcome(
        self, thread_id: str, iteration: int, call: ToolCall, result: ToolResult
    ) -> None:
        return None

    async def forget(self, thread_id: str, iteration: int, call_id: str) -> None:
        return None


def registry() -> ToolRegistry:
    spec = ToolSpec(
        "fetch", fetch, description="Fetch a page by number.", category=ToolCategory.READ_ONLY
    )
    return ToolRegistry([spec])


def initial_state() -> RunState:
    return new_run_state("read every page", ["fetch"])


def db_bytes(path: Path) -> int:
    """Bytes the database holds: pages in use as its readers see them (WAL included)."""
    if not path.exists():
        return 0
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    return int(size * (pages - free))


def remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)


@asynccontextmanager
async def open_saver(kind: str, path: Path) -> AsyncIterator[Any]:
    """The checkpointer under test (None for ``none``)."""
    if kind == "none":
        yield None
    elif kind == "null":
        yield NullSaver()
    elif kind == "delta":
        # As the engine opens it (without the in-place edit check its stages do not need).
        saver = await asyncio.to_thread(engine_saver, path)
        try:
            yield saver
        finally:
            await saver.aclose()
    else:
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async with aiosqlite.connect(path, timeout=30) as conn:
            await conn.execute("PRAGMA synchronous = NORMAL")
            legacy = AsyncSqliteSaver(conn, serde=strict_serializer())
            await legacy.setup()
            yield legacy


@dataclass(slots=True)
class PipelineRun:
    """What one run measured."""

    kind: str
    cycles: int
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    sizes: dict[int, int] = field(default_factory=dict)
    disk: int = 0
    seconds: float = 0.0

    def mean(self, which: str, first: int, last: int) -> float:
        """Mean seconds per cycle over cycles ``first`` (inclusive) to ``last`` (exclusive)."""
        values = (self.wall if which == "wall" else self.cpu)[first:last]
        return sum(values) / len(values)


async def run_pipeline(kind: str, cycles: int, path: Path, sample: int) -> PipelineRun:
    """Run the pipeline for ``cycles`` cycles on one checkpointer and record its costs."""
    remove(path)
    result = PipelineRun(kind, cycles)
    marks: list[tuple[float, float]] = []
    skew = [0.0, 0.0]  # wall and CPU seconds spent measuring sizes, taken out of the marks

    def emit(event: ProgressEvent) -> None:
        if isinstance(event, StageStarted) and event.stage == "draft":
            wall, cpu = time.perf_counter(), time.process_time()
            marks.append((wall - skew[0], cpu - skew[1]))
            done = len(marks) - 1
            if kind not in ("none", "null") and done % sample == 0:
                result.sizes[done] = db_bytes(path)
                skew[0] += time.perf_counter() - wall
                skew[1] += time.process_time() - cpu

    context = RunContext(
        thread_id="bench",
        model=ScriptedCaller(),
        tools=registry(),
        journal=MemoryJournal(),
        policy=RunPolicy(max_iterations=cycles, memory_path=None),
        emit=emit,
    )
    config: RunnableConfig = {
        "configurable": {"thread_id": "bench"},
        "recursion_limit": recursion_limit(cycles),
    }
    started = time.perf_counter()
    async with open_saver(kind, path) as saver:
        graph = build_graph(saver)
        if saver is not None:
            await graph.ainvoke(initial_state(), config, context=context, durability="sync")
        else:
            await graph.ainvoke(initial_state(), config, context=context)
        # What the files take on disk while the run is open (the WAL is emptied on close).
        files = (path, Path(str(path) + "-wal"))
        result.disk = sum(p.stat().st_size for p in files if p.exists())
    result.seconds = time.perf_counter() - started
    if kind not in ("none", "null"):
        result.sizes[cycles] = db_bytes(path)
    result.wall = [b[0] - a[0] for a, b in itertools.pairwise(marks)]
    result.cpu = [b[1] - a[1] for a, b in itertools.pairwise(marks)]
    return result


async def read_latest(
    kind: str, path: Path, repeat: int = 7
) -> tuple[list[float], int, list[float]]:
    """Seconds to read the latest state with a freshly opened checkpointer (what a resume does).

    Returns the timings, how many messages the state had (a check that it read everything),
    and the seconds of each read spent in a full garbage collection (`GcPauses`: where one
    lands is not the saver's doing; the median of seven reads is not moved by one).
    """
    timings: list[float] = []
    pauses: list[float] = []
    messages = 0
    config: RunnableConfig = {"configurable": {"thread_id": "bench"}}
    for _ in range(repeat):
        async with open_saver(kind, path) as saver:
            graph = build_graph(saver)
            with GcPauses() as gc_pauses:
                started = time.perf_counter()
                snapshot = await graph.aget_state(config)
                timings.append(time.perf_counter() - started)
            pauses.append(gc_pauses.seconds)
            messages = len(snapshot.values["messages"])
    return timings, messages, pauses
