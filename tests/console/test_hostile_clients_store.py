"""A hostile run store under the console: rows edited by hand, the file moved away and back.

Real SQLite files in tmp_path, written by a real Agent and then changed with sqlite3, as a
person or another program might; the pages are fetched in-process (conftest's ``signed_in``).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from ai_agent import Agent
from ai_agent.checkpoints._sqlite import SqliteSession
from ai_agent.console import live
from ai_agent.console.live import STATUS_CHARS, run_changes
from tests.console.conftest import MakeAgent, write_call

MB = 1_000_000


def insert(db: Path, sql_thread: str, task: str, status: str, *params: object) -> None:
    """A run row written straight into the file; ``sql_thread`` is SQL (a literal or an expr)."""
    with sqlite3.connect(db) as con:
        now = time.time()
        con.execute(
            "INSERT INTO agent_runs (thread_id, task, status, created_at, updated_at) "
            f"VALUES ({sql_thread}, {task}, {status}, ?, ?)",
            (*params, now, now + 5),
        )
    con.close()


async def test_rows_of_markup_control_characters_and_megabytes_are_inert_and_bounded(
    make_agent: MakeAgent,
    signed_in: Callable[[Agent], httpx.AsyncClient],
    tmp_path: Path,
) -> None:
    agent = make_agent([write_call()])
    async with agent:
        await agent.run("write", thread_id="fine")
        since = time.time()
        db = tmp_path / "c.sqlite"
        insert(db, "?", "?", "?", "<script>alert(1)</script>", "<b>t</b>\x1b[2K\u202e", "<i>x</i>")
        insert(db, "'huge'", "?", "?", "x" * (3 * MB), "paused" + "y" * (2 * MB))
        insert(db, "'id-' || hex(randomblob(600000))", "'t'", "'paused'")
        insert(db, "?", "'t'", "?", "ctl", "run\nning\x07")
        http = signed_in(agent)
        for path in ("/runs", "/inbox", "/runs?status=paused"):
            page = await http.get(path)
            assert page.status_code == 200, path
            # Before: every byte of every row was in the page (over 10 MB of /runs).
            assert len(page.text) < 200_000, path
            assert "<script>alert" not in page.text and "<b>t</b>" not in page.text
            assert "\x1b" not in page.text and "\u202e" not in page.text
        assert "more characters)" in (await http.get("/runs")).text  # cut, and says so

        stream = run_changes(agent.archive, interval=0, since=since)
        assert await anext(stream) == "retry: 2000\n\n"
        event = await anext(stream)
        await stream.aclose()
        sent = json.loads(event.split("data: ", 1)[1])
        # Only runs a page can open (a thread id in the grammar), and no status of megabytes.
        assert {r["thread_id"] for r in sent} == {"huge", "ctl"}
        assert all(len(r["status"]) <= STATUS_CHARS for r in sent)
        assert len(event) < 10_000


async def test_a_row_that_is_not_utf8_lists_with_the_others(
    make_agent: MakeAgent,
    signed_in: Callable[[Agent], httpx.AsyncClient],
    tmp_path: Path,
) -> None:
    agent = make_agent([write_call()])
    async with agent:
        await agent.run("write", thread_id="fine")
        # A lone surrogate, as bytes SQLite stores as text: not UTF-8. The driver refused the
        # whole listing for it (an uncaught OperationalError on every page that lists runs).
        insert(tmp_path / "c.sqlite", "'odd'", "CAST(X'41EDA08042' AS TEXT)", "'paused'")
        http = signed_in(agent)
        for path in ("/runs", "/inbox", "/storage"):
            page = await http.get(path)
            assert page.status_code == 200, path
        listed = (await http.get("/runs")).text
        assert "fine" in listed and "odd" in listed and "A\ufffd\ufffd\ufffdB" in listed


async def test_a_store_that_cannot_be_read_is_a_page_in_words_and_the_stream_goes_on(
    make_agent: MakeAgent,
    signed_in: Callable[[Agent], httpx.AsyncClient],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    agent = make_agent([write_call()])
    async with agent:
        since = time.time()
        await agent.run("write", thread_id="fine")
        http = signed_in(agent)
        reads = SqliteSession.all

        def failing(self: SqliteSession, sql: str, params: Sequence[Any] = ()) -> list[Any]:
            raise sqlite3.OperationalError("disk I/O error")

        monkeypatch.setattr(SqliteSession, "all", failing)
        for path in ("/runs", "/inbox", "/storage"):
            page = await http.get(path)
            assert page.status_code == 503, path
            assert "The run store could not be read" in page.text
        stream = run_changes(agent.archive, interval=0, since=since)
        assert await anext(stream) == "retry: 2000\n\n"  # the stream did not end
        monkeypatch.setattr(SqliteSession, "all", reads)
        # The first look the store answers is sent as a first look is: what changed since.
        event = await anext(stream)
        await stream.aclose()
        assert json.loads(event.split("data: ", 1)[1]) == [
            {"thread_id": "fine", "status": "paused"}
        ]
        assert (await http.get("/runs")).status_code == 200


async def test_a_store_file_moved_away_and_back_keeps_being_served(
    make_agent: MakeAgent,
    signed_in: Callable[[Agent], httpx.AsyncClient],
    tmp_path: Path,
) -> None:
    agent = make_agent([write_call()])
    async with agent:
        await agent.run("write", thread_id="kept")
        db = tmp_path / "c.sqlite"
        files = [p for p in tmp_path.iterdir() if p.name.startswith("c.sqlite")]
        for f in files:
            f.rename(tmp_path / f"moved-{f.name}")
        db.write_text("not a database")  # another file where the store was
        http = signed_in(agent)
        # The console reads through the connection it opened: the file it opened.
        page = await http.get("/runs")
        assert page.status_code == 200 and "kept" in page.text
        db.unlink()
        for f in files:
            (tmp_path / f"moved-{f.name}").rename(f)
        assert "kept" in (await http.get("/runs/kept")).text


async def test_a_postgresql_driver_error_is_a_page_in_words_without_the_password(
    make_agent: MakeAgent,
    signed_in: Callable[[Agent], httpx.AsyncClient],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The driver's own errors (a server gone, a statement timed out) read as the store's: a
    page in words, its message passed through the database's own scrubbing of the password."""
    import psycopg

    agent = make_agent([write_call()])
    async with agent:
        await agent.run("write", thread_id="fine")
        http = signed_in(agent)

        def away(self: SqliteSession, sql: str, params: Sequence[Any] = ()) -> list[Any]:
            raise psycopg.OperationalError("connection to postgresql://u:pw-canary@db failed")

        monkeypatch.setattr(SqliteSession, "all", away)
        monkeypatch.setattr(
            type(agent.archive.database),
            "hide",
            lambda self, text: text.replace("pw-canary", "***"),
        )
        page = await http.get("/runs")
        assert page.status_code == 503
        assert "The run store could not be read" in page.text and "failed" in page.text
        assert "pw-canary" not in page.text
        assert await live._look(agent.archive) is None  # a look the stream skips, not its end
