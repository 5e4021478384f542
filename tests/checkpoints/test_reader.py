"""The light reader: the delta saver's reads, without LangGraph's checkpoint package or LangChain.

`DeltaReader` reads through the saver's own read functions with a loader of plain data; what it
reads must be what `DeltaSaver` reads, and what it cannot load as LangGraph would must be
refused (`NotPlain`), never loaded differently.
"""

from __future__ import annotations

import datetime
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import WRITES_IDX_MAP
from langgraph.checkpoint.base import writes_sort_key as langgraph_sort_key
from langgraph.types import Interrupt

from ai_agent.checkpoints import DeltaSaver, strict_serializer
from ai_agent.checkpoints._plain import PlainLoader
from ai_agent.checkpoints._writes import WRITES_IDX_MAP as RESTATED
from ai_agent.checkpoints._writes import writes_sort_key
from ai_agent.checkpoints.reader import DeltaReader, NotPlain, StoredInterrupt
from ai_agent.graph.database import checkpoint_config


def test_the_restated_write_order_is_langgraphs() -> None:
    assert RESTATED == WRITES_IDX_MAP
    for key in [("a", "t1", 0), ("", "", -3), ("~x", "t", 5)]:
        assert writes_sort_key(*key) == langgraph_sort_key(*key)


@pytest.mark.parametrize(
    "value",
    [
        None,
        {"messages": [{"role": "user", "content": "hé", "n": 1.5}], "ok": True},
        [1, "two", None, {"3": [4]}],
        b"raw bytes",
        "x" * 10_000,
    ],
)
def test_plain_data_loads_as_the_strict_serializer_loads_it(value: Any) -> None:
    stored = strict_serializer().dumps_typed(value)
    assert PlainLoader().loads_typed(stored) == strict_serializer().loads_typed(stored)


def test_an_interrupt_loads_with_its_value_and_id() -> None:
    stored = strict_serializer().dumps_typed([Interrupt(value={"prompt": "ok?"}, id="i1")])
    (theirs,) = strict_serializer().loads_typed(stored)
    (ours,) = PlainLoader().loads_typed(stored)
    assert isinstance(ours, StoredInterrupt)
    assert (ours.value, ours.id) == (theirs.value, theirs.id) == ({"prompt": "ok?"}, "i1")


@pytest.mark.parametrize(
    "value",
    [
        AIMessage(content="a LangChain message"),  # extension 5: pydantic v2
        {"at": datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)},  # a method call
        {1, 2},  # a constructor with one argument
    ],
    ids=["langchain-message", "datetime", "set"],
)
def test_what_is_not_plain_data_is_refused_not_loaded_differently(value: Any) -> None:
    stored = strict_serializer().dumps_typed(value)
    with pytest.raises(NotPlain):
        PlainLoader().loads_typed(stored)


def test_json_and_pickle_values_are_refused() -> None:
    with pytest.raises(NotPlain):
        PlainLoader().loads_typed(("json", b"{}"))
    with pytest.raises(NotImplementedError):
        PlainLoader().dumps_typed({})


def _config(thread: str, checkpoint_id: str | None = None) -> RunnableConfig:
    return checkpoint_config(thread, checkpoint_id)


def test_the_reader_reads_what_the_saver_reads(tmp_path: Path) -> None:
    from langgraph.graph import StateGraph
    from typing_extensions import TypedDict

    class State(TypedDict):
        n: int

    builder = StateGraph(State)
    builder.add_node("inc", lambda s: {"n": s["n"] + 1})
    builder.set_entry_point("inc")
    builder.set_finish_point("inc")
    db = tmp_path / "c.sqlite"
    with DeltaSaver(db) as saver:
        graph = builder.compile(checkpointer=saver)
        for thread in ("a", "b"):
            graph.invoke({"n": 1}, _config(thread))
            graph.invoke({"n": 5}, _config(thread))
        theirs = {t: list(saver.list(_config(t))) for t in ("a", "b")}
    with DeltaReader(db) as reader:
        for thread, tuples in theirs.items():
            ours = list(reader.list(_config(thread)))
            assert [tuple(t) for t in ours] == [tuple(t) for t in tuples]
            assert list(reader.list(_config(thread), limit=2)) == ours[:2]
            before = _config(thread, tuples[1].checkpoint["id"])
            assert list(reader.list(_config(thread), before=before)) == ours[2:]
            latest = reader.get_tuple(_config(thread))
            assert latest is not None and tuple(latest) == tuple(tuples[0])
            one = reader.get_tuple(_config(thread, tuples[2].checkpoint["id"]))
            assert one is not None and tuple(one) == tuple(tuples[2])
        assert reader.get_tuple(_config("nobody")) is None


def test_an_old_sqlitesaver_database_is_left_to_the_saver(tmp_path: Path) -> None:
    db = tmp_path / "old.sqlite"
    with sqlite3.connect(db) as conn:  # the two tables of LangGraph's SqliteSaver, one row
        conn.execute("CREATE TABLE checkpoints (thread_id TEXT, checkpoint BLOB)")
        conn.execute("CREATE TABLE writes (thread_id TEXT)")
        conn.execute("INSERT INTO checkpoints VALUES ('t', x'00')")
    conn.close()
    with pytest.raises(NotPlain):
        DeltaReader(db)


def test_the_reader_loads_neither_langgraph_nor_langchain() -> None:
    script = (
        "import sys\n"
        "from ai_agent.checkpoints.reader import DeltaReader\n"
        "print(*sorted(m for m in sys.modules if m.split('.')[0] in "
        "('langgraph', 'langchain_core', 'pydantic', 'langsmith')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == []
