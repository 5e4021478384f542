"""The journal's entries are written on the event loop's thread when nothing can make them wait.

A tool call writes three journal entries (lookup, intent, outcome); each hop to a worker thread
and back costs more than the entry (``ai_agent.checkpoints._sql.quick``). These tests pin what
makes that safe: an entry that would wait for a lock (another process's write, another thread
of the store) goes to a worker thread and the loop keeps running; no entry written at once
starts a WAL checkpoint (an fsync) on the loop, and the WAL stays bounded all the same.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ai_agent.checkpoints import _sqlite
from ai_agent.checkpoints._sql import LATER
from ai_agent.checkpoints.runstore import RunStore
from ai_agent.state import ToolCall, ToolResult
from tests.writer_process import writing

CALL = ToolCall(id="call_1", name="lookup", args={"q": "a"})


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    opened = RunStore(tmp_path / "agent.sqlite")
    yield opened
    opened.close()


@pytest.fixture
def hops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the calls sent to a worker thread (``asyncio.to_thread``), in order."""
    sent: list[str] = []
    real = asyncio.to_thread

    async def counted(fn: Callable[..., Any], /, *args: Any) -> Any:
        sent.append(getattr(getattr(fn, "func", fn), "__name__", "?"))
        return await real(fn, *args)

    monkeypatch.setattr(asyncio, "to_thread", counted)
    return sent


async def test_a_tool_calls_entries_need_no_worker_thread(store: RunStore, hops: list[str]) -> None:
    assert await store.lookup("t1", 0, CALL["id"]) is None
    await store.intent("t1", 0, CALL)
    await store.outcome("t1", 0, CALL, {"status": "ok", "content": "42"})
    entry = await store.lookup("t1", 0, CALL["id"])
    await store.forget("t1", 0, CALL["id"])  # done: the entry stays
    assert hops == []
    assert entry is not None
    assert (entry["status"], entry["result"]) == ("done", {"status": "ok", "content": "42"})
    assert await store.lookup("t1", 0, CALL["id"]) is not None


async def test_an_entry_waits_on_a_worker_thread_while_another_process_writes(
    tmp_path: Path, hops: list[str]
) -> None:
    path = tmp_path / "agent.sqlite"
    store = RunStore(path)
    try:
        with writing(path) as writer:
            ticks = 0

            async def tick() -> None:
                nonlocal ticks
                while True:
                    ticks += 1
                    await asyncio.sleep(0.01)

            ticker = asyncio.create_task(tick())
            intent = asyncio.create_task(store.intent("t1", 0, CALL))
            await asyncio.sleep(0.5)
            assert not intent.done()  # it waits for the lock, on a worker thread ...
            assert ticks >= 20  # ... while the loop goes on (blocked, it would not have ticked)
            writer.let_go()
            await asyncio.wait_for(intent, 20)
            ticker.cancel()
    finally:
        store.close()
    assert hops == ["intent"]
    reopened = RunStore(path)
    try:
        assert await reopened.lookup("t1", 0, CALL["id"]) is not None
    finally:
        reopened.close()


def test_the_connection_in_use_by_another_thread_is_not_waited_for(store: RunStore) -> None:
    db = store._db
    assert isinstance(db, _sqlite.SqliteDatabase)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with db.read():
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(10)
    try:
        started = time.monotonic()
        assert db.at_once(lambda: "ran") is LATER
        assert time.monotonic() - started < 1
    finally:
        release.set()
        holder.join()
    assert db.at_once(lambda: "ran") == "ran"


def test_an_error_other_than_locked_is_raised_where_it_happened(store: RunStore) -> None:
    db = store._db
    assert isinstance(db, _sqlite.SqliteDatabase)
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        db.at_once(lambda: db.conn.execute("SELECT * FROM no_such_table"))
    # The connection is as before: it waits for locks again, and checkpoints as it commits.
    assert db.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 30_000
    assert db.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000


async def test_the_wal_stays_bounded_with_the_journal_as_its_only_writer(
    store: RunStore, hops: list[str]
) -> None:
    # No entry written at once starts a checkpoint; one in every 32 calls is written on a
    # worker thread, whose commit copies the WAL into the file once it is 1,000 pages long (the
    # 31 calls before it may add up to about three pages each). Without those, these entries
    # leave a WAL of about 9,200 pages (38 MB).
    wal = Path(f"{store.path}-wal")
    result = ToolResult(status="ok", content="x" * 2000)
    for i in range(1500):
        call = ToolCall(id=f"call_{i}", name="lookup", args={"q": i})
        await store.intent("t1", i, call)
        await store.outcome("t1", i, call, result)
    assert len(hops) == 3000 // 32
    pages = wal.stat().st_size // (4096 + 24)
    assert pages < 1200
    assert (await store.lookup("t1", 1499, "call_1499")) is not None


async def test_no_entry_written_at_once_copies_the_wal_into_the_file(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # That copy ends with an fsync (7-51 ms measured): on the loop's thread it would hold up
    # every other run of the process. With none sent to a worker thread, the WAL only grows.
    monkeypatch.setattr(_sqlite, "CHECKPOINT_ON_A_THREAD_EVERY", 10**9)
    result = ToolResult(status="ok", content="x" * 2000)
    for i in range(400):
        call = ToolCall(id=f"call_{i}", name="lookup", args={"q": i})
        await store.intent("t1", i, call)
        await store.outcome("t1", i, call, result)
    with sqlite3.connect(store.path) as other:
        _busy, frames, _copied = other.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert frames > 1000  # SQLite's automatic checkpoint would have started over at 1,000
