"""A full disk: SQLite's real SQLITE_FULL, from a database that may not grow any more.

``PRAGMA max_page_count`` caps a connection's database at its current size, so the next write
that needs a new page fails exactly as on a full disk ("database or disk is full"). Each store
must turn it into a StorageFullError that names the database, keep everything committed before,
and work again once there is space.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from ai_agent import Agent, ToolCategory, ToolSpec
from ai_agent.checkpoints import _store
from ai_agent.checkpoints.delta import DeltaSaver
from ai_agent.checkpoints.runstore import RunStore
from ai_agent.cli import EXIT, main
from ai_agent.config import AgentSettings
from ai_agent.errors import StorageFullError, ThreadBusyError
from ai_agent.testing import ScriptedModel

BIG = "x" * 200_000


def cap(conn: sqlite3.Connection) -> None:
    """From now on, this connection's database may not grow by a single page."""
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")


def checkpoint(values: dict[str, Any]) -> Any:
    cp = empty_checkpoint()
    cp["channel_values"] = values
    cp["channel_versions"] = {k: 1 for k in values}
    return cp


def config(thread: str, checkpoint_id: str | None = None) -> Any:
    conf = {"thread_id": thread, "checkpoint_ns": ""}
    if checkpoint_id:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


async def test_the_run_store_names_the_full_database_and_keeps_what_it_had(
    tmp_path: Path,
) -> None:
    db = tmp_path / "c.sqlite"
    store = RunStore(db)
    await store.create_run("t", "small")
    cap(store._db.conn)  # type: ignore[attr-defined]
    with pytest.raises(StorageFullError) as caught:
        await store.create_run("big", BIG)
    assert str(caught.value) == (
        f"the database {db} is full (its disk has no space left for this write); nothing "
        "stored before is lost: free some space, then try again"
    )
    assert caught.value.where == str(db)
    assert [r["thread_id"] for r in await store.list_runs()] == ["t"]
    store.close()
    again = RunStore(db)  # space is back (no cap): the same write goes through
    await again.create_run("big", BIG)
    assert {r["thread_id"] for r in await again.list_runs()} == {"t", "big"}
    again.close()


@pytest.mark.parametrize("api", ["sync", "async"])
async def test_the_checkpointer_names_the_full_database_and_keeps_what_it_had(
    tmp_path: Path, api: str
) -> None:
    db = tmp_path / "c.sqlite"
    with DeltaSaver(db) as saver:
        first = saver.put(config("t"), checkpoint({"a": "small"}), {"step": 0}, {"a": 1})
        saver._call(cap, saver.store.conn)
        big = checkpoint({"a": BIG})

        async def put() -> None:
            if api == "sync":
                saver.put(first, big, {"step": 1}, {"a": 2})
            else:
                await saver.aput(first, big, {"step": 1}, {"a": 2})

        with pytest.raises(StorageFullError, match=f"the database {db} is full"):
            await put()
        latest = saver.get_tuple(config("t"))
        assert latest is not None and latest.checkpoint["channel_values"] == {"a": "small"}
    with DeltaSaver(db) as saver:  # space is back
        saver.put(first, checkpoint({"a": BIG}), {"step": 1}, {"a": 2})
        latest = saver.get_tuple(config("t"))
        assert latest is not None and latest.checkpoint["channel_values"] == {"a": BIG}


def test_the_cli_says_the_disk_is_full_and_how_to_continue(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "done"}]))
    db = tmp_path / "c.sqlite"
    model = f"scripted:{script}"
    connect = _store._connect

    def capped(path: str) -> sqlite3.Connection:
        conn = connect(path)
        cap(conn)
        return conn

    monkeypatch.setattr(_store, "_connect", capped)
    code = main(["run", BIG, "--db", str(db), "--model", model, "--thread-id", "t", "--quiet"])
    err = capsys.readouterr().err
    assert code == EXIT["failed"], err
    assert "internal error" not in err and "Traceback" not in err
    assert f"error: the database {db} is full" in err
    assert "free some space, then continue the run with: ai-agent resume t" in err
    monkeypatch.setattr(_store, "_connect", connect)  # space is back
    code = main(["runs", "--db", str(db)])
    assert "t  failed" in capsys.readouterr().out
    code = main(["resume", "t", "--db", str(db), "--model", model, "--quiet"])
    captured = capsys.readouterr()
    assert code == EXIT["completed"], captured.err
    assert captured.out.strip() == "done"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real file system of 4 MB (tmpfs), where a full disk is a real ENOSPC.

    Mounting needs root (or CAP_SYS_ADMIN); without it the test is skipped: the tests above
    produce SQLite's SQLITE_FULL without it.
    """
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield disk
    finally:  # lazily: a file still open must not leave the mount behind
        subprocess.run(["umount", "--lazy", str(disk)], check=True)


def fill(disk: Path) -> Path:
    """Take every free byte of ``disk``; returns the file that holds them."""
    filler = disk / "filler"
    with filler.open("wb") as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError:  # ENOSPC: the disk is full
            pass
    return filler


async def test_a_run_that_fills_the_disk_stops_and_resumes_once_there_is_space(
    small_disk: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The disk fills up right after a tool's outcome is journaled: every write fails (ENOSPC
    on the WAL), giving the lease back included; freeing space lets the run finish."""
    db, ran = small_disk / "c.sqlite", list[str]()

    def effect(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        ran.append(args["text"])
        return {"status": "ok", "content": "written"}

    def agent() -> Agent:
        tool = ToolSpec("effect", effect, description="Write.", category=ToolCategory.MODIFICATION)
        script: list[dict[str, Any]] = [
            {"tool_calls": [{"name": "effect", "args": {"text": "hi"}}]},
            {"text": "done"},
        ]
        return Agent(
            model=ScriptedModel(script),
            tools=[tool],
            checkpoint_path=db,
            memory_path=None,
            settings=AgentSettings(lease_seconds=1.0),
            unattended=True,
        )

    outcome = RunStore.outcome
    filled: list[Path] = []

    async def outcome_then_full(self: RunStore, *args: Any, **kwargs: Any) -> None:
        await outcome(self, *args, **kwargs)
        filled.append(fill(small_disk))

    monkeypatch.setattr(RunStore, "outcome", outcome_then_full)
    with caplog.at_level(logging.WARNING, logger="ai_agent"):
        async with agent() as first:
            with pytest.raises(StorageFullError, match=r"ai-agent resume t$"):
                await first.run("write", thread_id="t")
    assert "could not release the lease of thread t (the database is full)" in caplog.text
    monkeypatch.setattr(RunStore, "outcome", outcome)
    filled[0].unlink()  # space is back
    async with agent() as second:
        # The lease could not be given back: this process is alive, so it is taken over once it
        # runs out (another process would take it over at once).
        result = await resumed(second, "t")
    assert (result.status, result.final_text, ran) == ("completed", "done", ["hi"])


async def resumed(agent: Agent, thread_id: str) -> Any:
    """Resume as soon as the thread's lease lets us (within a few seconds)."""
    for _ in range(100):
        try:
            return await agent.resume(thread_id)
        except ThreadBusyError:
            await asyncio.sleep(0.1)
    raise AssertionError(f"thread {thread_id} stayed busy")
