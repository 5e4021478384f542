"""A caller's sync-only LangGraph saver, made usable by the async engine (checkpoints.foreign)."""

from __future__ import annotations

import operator
import sqlite3
from pathlib import Path
from typing import Annotated, Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from ai_agent.checkpoints.foreign import ThreadedSaver, async_ready
from tests.checkpoints.conftest import config


class Counter(TypedDict):
    n: int
    log: Annotated[list[int], operator.add]


def _graph(saver: ThreadedSaver) -> Any:
    builder: StateGraph[Counter, None, Counter, Counter] = StateGraph(Counter)
    builder.add_node("inc", lambda s: {"n": s["n"] + 1, "log": [s["n"]]})
    builder.add_edge(START, "inc")
    builder.add_edge("inc", END)
    return builder.compile(checkpointer=saver)


async def test_a_saver_with_async_methods_is_used_as_it_is() -> None:
    saver = InMemorySaver()
    assert await async_ready(saver) is saver


async def test_a_sync_only_saver_runs_through_threads(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "lg.sqlite", check_same_thread=False)
    inner = SqliteSaver(conn)
    saver = await async_ready(inner)
    assert isinstance(saver, ThreadedSaver)
    assert saver.inner is inner
    graph = _graph(saver)
    # The async half (what the engine uses) and the sync half (what a script may use).
    assert await graph.ainvoke({"n": 1, "log": []}, config("a")) == {"n": 2, "log": [1]}
    assert graph.invoke({"n": 5, "log": []}, config("b")) == {"n": 6, "log": [5]}
    assert [s.values.get("n") async for s in graph.aget_state_history(config("a"))] == [2, 1, None]
    assert [s.values.get("n") for s in graph.get_state_history(config("b"))] == [6, 5, None]
    await saver.adelete_thread("a")
    saver.delete_thread("b")
    assert inner.get_tuple(config("a")) is None
    assert inner.get_tuple(config("b")) is None
    conn.close()
