"""The run store: runs, leases (busy, expiry, dead owners) and the journal, on real files."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ai_agent.checkpoints import SCHEMA_VERSION, RunStore
from ai_agent.errors import StoreError, ThreadBusyError


@pytest.fixture
def store(tmp_path: Path) -> RunStore:
    return RunStore(tmp_path / "deep" / "c.sqlite")


async def test_runs_round_trip(store: RunStore) -> None:
    await store.create_run("t1", "task one")
    await store.create_run("t2", "task two", parent_thread_id="t1")
    await store.update_run("t1", status="paused", gate={"severity": 0.9})
    run = await store.get_run("t1")
    assert run is not None
    assert (run["status"], run["gate"], run["task"]) == ("paused", {"severity": 0.9}, "task one")
    child = await store.get_run("t2")
    assert child is not None and child["parent_thread_id"] == "t1"
    assert await store.get_run("none") is None
    assert [r["thread_id"] for r in await store.list_runs()] == ["t1", "t2"]
    assert [r["thread_id"] for r in await store.list_runs(status="running")] == ["t2"]


async def test_a_held_lease_makes_others_busy_until_released(store: RunStore) -> None:
    lease = await store.acquire("t")
    with pytest.raises(ThreadBusyError, match=r"is being worked on by process \d+"):
        await store.acquire("t")
    renewed = await store.renew(lease)
    assert renewed.expires_at >= lease.expires_at
    await store.release(renewed)
    again = await store.acquire("t")
    await store.release(lease)  # a stale holder cannot release someone else's lease
    with pytest.raises(ThreadBusyError):
        await store.acquire("t")
    await store.release(again)


async def test_an_expired_lease_can_be_taken(store: RunStore) -> None:
    await store.acquire("t", seconds=-1)
    lease = await store.acquire("t")
    assert lease.thread_id == "t"


async def test_a_lease_of_a_dead_process_can_be_taken(store: RunStore) -> None:
    dead = subprocess.run(  # noqa: ASYNC221 - a short child whose pid we need dead
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    pid = int(dead.stdout)
    lease = await store.acquire("t")
    with sqlite3.connect(store.path) as conn:
        conn.execute("UPDATE agent_leases SET pid = ? WHERE thread_id = 't'", (pid,))
    taken = await store.acquire("t")
    assert taken.owner != lease.owner


async def test_working_says_whether_a_live_process_holds_the_lease(store: RunStore) -> None:
    assert not await store.working("t")  # nobody ever took it
    lease = await store.acquire("t")
    assert await store.working("t")
    other = RunStore(store.path)  # another connection (another process would see the same)
    assert await other.working("t")
    await store.release(lease)
    assert not await other.working("t")
    await store.acquire("t", seconds=-1)
    assert not await store.working("t")  # ran out: a crash, not a run
    other.close()


async def test_a_lease_held_by_a_dead_process_is_nobody_working(store: RunStore) -> None:
    dead = subprocess.run(  # noqa: ASYNC221 - a short child whose pid we need dead
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    await store.acquire("t")
    with sqlite3.connect(store.path) as conn:
        conn.execute("UPDATE agent_leases SET pid = ? WHERE thread_id = 't'", (int(dead.stdout),))
    assert not await store.working("t")
    with sqlite3.connect(store.path) as conn:  # on another host this one cannot look: it trusts
        conn.execute("UPDATE agent_leases SET host = 'elsewhere' WHERE thread_id = 't'")
    assert await store.working("t")
    for pid in ("'not a pid'", "0", "-1"):  # a row changed by hand: nobody's
        with sqlite3.connect(store.path) as conn:
            conn.execute(f"UPDATE agent_leases SET host = ?, pid = {pid}", (store.host,))
        assert not await store.working("t")


async def test_journal_records_intent_then_outcome(store: RunStore) -> None:
    call = {"id": "c1", "name": "write", "args": {"p": "x"}}
    assert await store.lookup("t", 1, "c1") is None
    await store.intent("t", 1, call)  # type: ignore[arg-type]
    entry = await store.lookup("t", 1, "c1")
    assert entry is not None
    assert (entry["call_id"], entry["tool"], entry["status"], entry["result"]) == (
        "c1",
        "write",
        "intent",
        None,
    )
    assert entry["attempt"] > 0
    first_attempt = entry["attempt"]
    await store.intent("t", 1, call)  # type: ignore[arg-type]
    again = await store.lookup("t", 1, "c1")
    assert again is not None and again["attempt"] >= first_attempt
    await store.outcome("t", 1, call, {"status": "ok", "content": 1})  # type: ignore[arg-type]
    entry = await store.lookup("t", 1, "c1")
    assert entry is not None and entry["status"] == "done"
    assert entry["result"] == {"status": "ok", "content": 1}
    assert await store.lookup("t", 2, "c1") is None


def test_schema_version_is_recorded_and_newer_ones_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    RunStore(path).close()
    with sqlite3.connect(path) as conn:
        version = conn.execute("SELECT value FROM agent_meta").fetchone()[0]
        assert int(version) == SCHEMA_VERSION
        conn.execute("UPDATE agent_meta SET value = ?", (str(SCHEMA_VERSION + 1),))
    with pytest.raises(StoreError, match="newer than this ai-agent understands"):
        RunStore(path)


def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"definitely not sqlite" * 100)
    with pytest.raises(StoreError, match="cannot open the run store"):
        RunStore(path)
