"""The SQLite memory (FTS) and the strict checkpointer."""

from __future__ import annotations

import asyncio
import decimal
import sqlite3
from pathlib import Path

import pytest

from ai_agent.checkpoints import SqliteMemory, open_checkpointer, strict_serializer
from ai_agent.errors import StoreError


def test_memory_search_ranks_and_replaces(tmp_path: Path) -> None:
    memory = SqliteMemory(tmp_path / "m" / "memory.sqlite")
    memory.add(
        {"thread_id": "a", "task": "sum the invoices", "final_text": "42", "status": "completed"}
    )
    memory.add(
        {"thread_id": "b", "task": "weather in Paris", "final_text": "rain", "status": "completed"}
    )
    assert [r["thread_id"] for r in memory.search("invoices please")] == ["a"]
    assert memory.search("?!") == []
    memory.add(
        {"thread_id": "a", "task": "sum the invoices", "final_text": "43", "status": "completed"}
    )
    assert [r["final_text"] for r in memory.search("invoices")] == ["43"]
    assert memory.search('quote"s and (parens) AND OR') == []
    memory.close()
    reopened = SqliteMemory(tmp_path / "m" / "memory.sqlite")
    assert [r["thread_id"] for r in reopened.search("paris")] == ["b"]


def test_strict_serializer_refuses_unlisted_types() -> None:
    serde = strict_serializer()

    class Custom:
        pass

    kind, blob = serde.dumps_typed({"safe": [1, "x", decimal.Decimal("1.5")]})
    assert serde.loads_typed((kind, blob)) == {"safe": [1, "x", decimal.Decimal("1.5")]}
    with pytest.raises(TypeError):
        serde.dumps_typed(Custom())


def test_open_checkpointer_rejects_a_non_database(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"not a database at all" * 200)

    async def open_it() -> None:
        async with open_checkpointer(path):
            pass

    with pytest.raises(StoreError, match="is not a usable checkpoint database"):
        asyncio.run(open_it())


def test_a_memory_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite"
    path.write_text("notes, not a database\n" * 100)
    with pytest.raises(StoreError, match=r"memory\.sqlite .*move it aside to start a new one"):
        SqliteMemory(path)
    assert path.read_text().startswith("notes, not a database")  # left as it was


def test_a_memory_table_of_another_shape_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE memories (thread_id TEXT PRIMARY KEY, body TEXT)")
        conn.execute("INSERT INTO memories VALUES ('t1', 'kept')")
    with pytest.raises(StoreError, match=r"memory\.sqlite .*not a memory ai-agent wrote"):
        SqliteMemory(path)
    with sqlite3.connect(path) as conn:  # nothing was changed: no index, no triggers
        assert conn.execute("SELECT name FROM sqlite_master WHERE type != 'index'").fetchall() == [
            ("memories",)
        ]
        assert conn.execute("SELECT * FROM memories").fetchall() == [("t1", "kept")]
