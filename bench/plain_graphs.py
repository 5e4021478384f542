"""Plain LangGraph graphs (not the engine's) on the delta saver and on LangGraph's own savers.

Two graphs of nine nodes in a loop, run for many cycles with ``graph.invoke`` and LangGraph's
default durability, as a LangGraph user runs them:

- ``messages``: each cycle one node appends a 1 KB tool message (`ToolMessage`, incompressible
  text) to a ``list`` channel reduced with ``operator.add``; the other nodes set small fields.
- ``dict``: the state holds a ``dict`` with no reducer; each cycle one node adds a 1 KB entry to
  it *in place* and another edits an existing entry in place, and both return the same dict.

Savers, each opened as its documentation shows (defaults) unless named otherwise: none (the
baseline), ``DeltaSaver(path)``, LangGraph's ``SqliteSaver`` at its defaults and tuned (WAL,
``synchronous=NORMAL``), and LangGraph's delta mode: the same graph with its list channel
declared as a ``DeltaChannel``, on ``SqliteSaver`` (its writes are replayed instead of the
list being stored whole).

Per cycle: wall time from one cycle's first node to the next, and every ``sample`` cycles the
bytes the database holds (pages in use, WAL included). At the end: the files on disk (database
plus WAL) before the saver is closed, what a user sees in the directory.
"""

from __future__ import annotations

import base64
import gc
import itertools
import operator
import random
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, cast

from langchain_core.messages import ToolMessage
from langgraph.channels import DeltaChannel
from langgraph.graph import END, StateGraph
from typing_extensions import TypedDict

from ai_agent.checkpoints import DeltaSaver

__all__ = [
    "FILELESS",
    "GRAPHS",
    "PAYLOAD_BYTES",
    "SAVERS",
    "PlainRun",
    "read_latest",
    "run_plain",
]

PAYLOAD_BYTES = 1000
NODES = 9
SAVERS = ("none", "memory", "delta", "sqlite", "sqlite_tuned", "deltachannel")
FILELESS = ("none", "memory")
"""Savers that keep no file: no checkpointer at all, and LangGraph's ``InMemorySaver``."""
GRAPHS = ("messages", "dict")


def payload(cycle: int) -> str:
    """1,000 characters of incompressible text, different each cycle (made before the run)."""
    return _PAYLOADS[cycle] if cycle < len(_PAYLOADS) else _make(cycle)


def _make(cycle: int) -> str:
    return base64.b64encode(random.Random(cycle).randbytes(PAYLOAD_BYTES * 3 // 4)).decode()


_PAYLOADS: list[str] = []


def prepare(cycles: int) -> None:
    """Make the payloads of ``cycles`` cycles ahead, so no run times their making."""
    _PAYLOADS.extend(_make(i) for i in range(len(_PAYLOADS), cycles + 1))


def _concat(state: list[Any], writes: list[list[Any]]) -> list[Any]:
    """``operator.add`` over a batch of writes (what ``DeltaChannel`` calls its reducer with)."""
    return state + [item for write in writes for item in write]


class MessagesState(TypedDict):
    messages: Annotated[list[Any], operator.add]
    cycle: int
    stage: str


class DeltaMessagesState(TypedDict):
    messages: Annotated[list[Any], DeltaChannel(_concat)]
    cycle: int
    stage: str


class DictState(TypedDict):
    docs: dict[str, Any]
    cycle: int
    stage: str


Mark = Callable[[], None]


def _messages_graph(cycles: int, mark: Mark, delta_channel: bool) -> StateGraph[Any]:
    builder: StateGraph[Any] = StateGraph(DeltaMessagesState if delta_channel else MessagesState)

    def first(state: dict[str, Any]) -> dict[str, Any]:
        mark()
        return {"stage": "n0"}

    def tool(state: dict[str, Any]) -> dict[str, Any]:
        cycle = state["cycle"]
        message = ToolMessage(content=payload(cycle), tool_call_id=f"call_{cycle}", name="fetch")
        return {"messages": [message], "stage": "tool"}

    def last(state: dict[str, Any]) -> dict[str, Any]:
        return {"cycle": state["cycle"] + 1, "stage": "last"}

    return _loop(builder, first, tool, last, cycles)


def _dict_graph(cycles: int, mark: Mark) -> StateGraph[Any]:
    builder: StateGraph[Any] = StateGraph(DictState)

    def first(state: dict[str, Any]) -> dict[str, Any]:
        mark()
        return {"stage": "n0"}

    def add(state: dict[str, Any]) -> dict[str, Any]:
        docs = state["docs"]  # edited in place and returned: no reducer, so it replaces
        cycle = state["cycle"]
        docs[f"doc{cycle}"] = {"text": payload(cycle), "seen": 0}
        return {"docs": docs, "stage": "add"}

    def last(state: dict[str, Any]) -> dict[str, Any]:
        docs = state["docs"]
        docs[f"doc{state['cycle'] // 2}"]["seen"] += 1  # an older entry, edited in place
        return {"docs": docs, "cycle": state["cycle"] + 1, "stage": "last"}

    return _loop(builder, first, add, last, cycles)


def _loop(
    builder: StateGraph[Any],
    first: Callable[[dict[str, Any]], dict[str, Any]],
    work: Callable[[dict[str, Any]], dict[str, Any]],
    last: Callable[[dict[str, Any]], dict[str, Any]],
    cycles: int,
) -> StateGraph[Any]:
    """Nine nodes in a ring: ``first``, ``work`` in the middle, ``last``; small ones between."""

    def small(name: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
        return lambda state: {"stage": name}

    names = [f"n{i}" for i in range(NODES)]
    middle = NODES // 2
    for i, name in enumerate(names):
        fn = first if i == 0 else work if i == middle else last if i == NODES - 1 else small(name)
        builder.add_node(name, cast(Any, fn))
    builder.set_entry_point(names[0])
    for a, b in itertools.pairwise(names):
        builder.add_edge(a, b)
    builder.add_conditional_edges(
        names[-1], lambda state: END if state["cycle"] >= cycles else names[0], [names[0], END]
    )
    return builder


def initial(graph: str) -> dict[str, Any]:
    if graph == "messages":
        return {"messages": [], "cycle": 0, "stage": ""}
    return {"docs": {}, "cycle": 0, "stage": ""}


def remove(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)


def db_bytes(path: Path) -> int:
    """Bytes the database holds: pages in use as its readers see them (WAL included)."""
    if not path.exists():
        return 0
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30) as conn:
        size = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
    conn.close()
    return int(size * (pages - free))


def disk_bytes(path: Path) -> int:
    """What the files take on disk: the database and its WAL."""
    files = (path, Path(str(path) + "-wal"))
    return sum(p.stat().st_size for p in files if p.exists())


@contextmanager
def open_saver(kind: str, path: Path) -> Iterator[Any]:
    """The saver under test, opened the way its documentation shows (None for ``none``)."""
    if kind == "none":
        yield None
    elif kind == "memory":
        from langgraph.checkpoint.memory import InMemorySaver

        yield InMemorySaver()
    elif kind == "delta":
        with DeltaSaver(path) as saver:
            yield saver
    else:
        from langgraph.checkpoint.sqlite import SqliteSaver

        conn = sqlite3.connect(path, check_same_thread=False)
        try:
            theirs = SqliteSaver(conn)
            theirs.setup()  # WAL, as SqliteSaver sets it up
            if kind == "sqlite_tuned":
                conn.execute("PRAGMA synchronous = NORMAL")
            yield theirs
        finally:
            conn.close()


@dataclass(slots=True)
class PlainRun:
    """What one run measured."""

    graph: str
    saver: str
    cycles: int
    wall: list[float] = field(default_factory=list)
    sizes: dict[int, int] = field(default_factory=dict)
    disk: int = 0
    seconds: float = 0.0
    cpu: float = 0.0
    """CPU seconds of the whole process over the run (every thread): what the load hardly moves."""

    def mean(self, first: int, last: int) -> float:
        """Mean seconds per cycle over cycles ``first`` (inclusive) to ``last`` (exclusive)."""
        values = self.wall[first:last]
        return sum(values) / len(values)


def build(graph: str, saver_kind: str, cycles: int, mark: Mark, saver: Any) -> Any:
    if graph == "messages":
        builder = _messages_graph(cycles, mark, delta_channel=saver_kind == "deltachannel")
    else:
        builder = _dict_graph(cycles, mark)
    return builder.compile(checkpointer=saver)


def run_plain(
    graph: str, saver_kind: str, cycles: int, path: Path, sample: int, durability: str | None = None
) -> PlainRun:
    """Run one graph for ``cycles`` cycles on one saver and record its costs.

    ``durability`` None is LangGraph's default ("async": the saver's work overlaps the next
    steps, so the time of a cycle is not what its checkpoints cost, and sizes sampled during
    the run lag behind); "sync" puts each cost in the cycle that caused it.
    """
    remove(path)
    prepare(cycles)
    result = PlainRun(graph, saver_kind, cycles)
    marks: list[float] = []
    skew = [0.0]

    def mark() -> None:
        now = time.perf_counter()
        marks.append(now - skew[0])
        done = len(marks) - 1
        if saver_kind not in FILELESS and done % sample == 0:
            result.sizes[done] = db_bytes(path)
            skew[0] += time.perf_counter() - now

    config = {"configurable": {"thread_id": "bench"}, "recursion_limit": cycles * NODES + 10}
    gc.collect()
    started, cpu = time.perf_counter(), time.process_time()
    with open_saver(saver_kind, path) as saver:
        compiled = build(graph, saver_kind, cycles, mark, saver)
        extra = {} if durability is None or saver is None else {"durability": durability}
        compiled.invoke(initial(graph), config, **extra)
        marks.append(time.perf_counter() - skew[0])  # the end of the last cycle
        if saver_kind not in FILELESS:
            result.sizes[cycles] = db_bytes(path)
            result.disk = disk_bytes(path)
    result.seconds = time.perf_counter() - started
    result.cpu = time.process_time() - cpu
    result.wall = [b - a for a, b in itertools.pairwise(marks)]
    return result


def read_latest(graph: str, saver_kind: str, path: Path, repeat: int = 3) -> list[float]:
    """Seconds to read the latest state with a freshly opened saver (what a resume does)."""
    timings: list[float] = []
    config = {"configurable": {"thread_id": "bench"}}
    for _ in range(repeat):
        with open_saver(saver_kind, path) as saver:
            compiled = build(graph, saver_kind, 0, lambda: None, saver)
            started = time.perf_counter()
            state = compiled.get_state(config)
            timings.append(time.perf_counter() - started)
            if not state.values:
                raise RuntimeError(f"{saver_kind}: nothing read back from {path}")
    return timings
