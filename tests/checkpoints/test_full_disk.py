"""A full disk: SQLite's real SQLITE_FULL, from a database that may not grow any more.

``PRAGMA max_page_count`` caps a connection's database at its current size, so the next write
that needs a new page fails exactly as on a full disk ("database or disk is full"). Each store
must turn it into a StorageFullError that names the database, keep everything committed before,
and work again once there is space.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from ai_agent.checkpoints import _store
from ai_agent.checkpoints.delta import DeltaSaver
from ai_agent.checkpoints.runstore import RunStore
from ai_agent.cli import EXIT, main
from ai_agent.errors import StorageFullError

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
