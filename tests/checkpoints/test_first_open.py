"""Opening a database another connection is writing: the switch to WAL waits for it.

SQLite answers a change of journal mode with "database is locked" at once, without the busy
timeout, when another connection holds a write lock on the file: what two processes starting
their first run on one new database at once run into (tests/graph/test_crash.py races that for
real). Here the lock is held on purpose, by a second connection in this process.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from ai_agent.checkpoints import _sqlite, _store, memory
from ai_agent.checkpoints.delta import DeltaSaver
from ai_agent.checkpoints.memory import SqliteMemory
from ai_agent.checkpoints.reader import DeltaReader
from ai_agent.checkpoints.runstore import RunStore
from ai_agent.errors import StoreError

OPENERS: dict[str, Callable[[Path], Any]] = {
    "run store": RunStore,
    "saver": DeltaSaver,
    "memory": SqliteMemory,
}


@contextmanager
def written_by_another(path: Path, for_seconds: float) -> Iterator[None]:
    """A rollback-journal file whose write lock another connection holds for a while."""
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE other (x)")  # a file in rollback mode, as a first open finds it
    holder.execute("BEGIN IMMEDIATE")
    release = threading.Timer(for_seconds, lambda: holder.execute("COMMIT"))
    release.start()
    try:
        yield
    finally:
        release.cancel()
        if holder.in_transaction:
            holder.execute("COMMIT")
        holder.close()


@pytest.fixture
def short_busy_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 0.2 s busy timeout for every opener, so a wait for a lock fails fast."""
    for module in (_sqlite, _store, memory):
        monkeypatch.setattr(module, "BUSY_TIMEOUT_SECONDS", 0.2)


def journal_mode(path: Path) -> str:
    with sqlite3.connect(path) as conn:
        return str(conn.execute("PRAGMA journal_mode").fetchone()[0])


def test_sqlite_fails_the_switch_at_once_without_the_wait(tmp_path: Path) -> None:
    # What the wait is for: without it the switch fails at once, busy timeout or not.
    path = tmp_path / "bare.sqlite"
    with (
        written_by_another(path, for_seconds=5),
        pytest.raises(sqlite3.OperationalError, match="locked") as raised,
    ):
        sqlite3.connect(path, timeout=5, isolation_level=None).execute("PRAGMA journal_mode=WAL")
    assert _sqlite.is_busy(raised.value)


@pytest.mark.parametrize("opener", list(OPENERS), ids=str)
def test_a_database_being_written_opens_once_the_writer_commits(
    tmp_path: Path, opener: str
) -> None:
    path = tmp_path / "c.sqlite"
    with written_by_another(path, for_seconds=0.3):
        opened = OPENERS[opener](path)
    opened.close()
    assert journal_mode(path) == "wal"
    with sqlite3.connect(path) as conn:  # the other connection's table is kept
        assert conn.execute("SELECT count(*) FROM other").fetchone() == (0,)


@pytest.mark.parametrize("opener", list(OPENERS), ids=str)
@pytest.mark.usefixtures("short_busy_timeout")
def test_a_lock_held_past_the_busy_timeout_is_a_clear_error(tmp_path: Path, opener: str) -> None:
    path = tmp_path / "c.sqlite"
    with (
        written_by_another(path, for_seconds=3),
        pytest.raises(StoreError, match=r"another process has held it locked for over 0.2 s"),
    ):
        OPENERS[opener](path)


def test_other_errors_of_the_switch_are_not_retried(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "c.sqlite", isolation_level=None)
    conn.close()
    with pytest.raises(sqlite3.ProgrammingError):  # a closed connection: raised as it is
        _sqlite.enter_wal(conn, within=5)


# Openers of a database that is already set up, for reading it: none of them writes.
READERS: dict[str, Callable[[Path], Any]] = {
    "run store": RunStore,
    "saver": DeltaSaver,
    "reader": DeltaReader,
    "memory": SqliteMemory,
}


def _set_up(path: Path) -> None:
    """A database with the run store's tables and the checkpoints', at the current versions."""
    RunStore(path).close()
    DeltaSaver(path).close()
    SqliteMemory(path).close()


@pytest.mark.parametrize("opener", list(READERS), ids=str)
def test_opening_an_up_to_date_database_writes_nothing(tmp_path: Path, opener: str) -> None:
    path = tmp_path / "c.sqlite"
    _set_up(path)
    opened = READERS[opener](path)
    try:
        wal = path.with_name(path.name + "-wal")
        # A write while opening (the format or version stored again) would be a frame here.
        assert not wal.exists() or wal.stat().st_size == 0
    finally:
        opened.close()


@pytest.mark.parametrize("opener", list(READERS), ids=str)
@pytest.mark.usefixtures("short_busy_timeout")
def test_an_up_to_date_database_opens_while_another_connection_writes(
    tmp_path: Path, opener: str
) -> None:
    # Without taking the write lock: before, each open took it (BEGIN IMMEDIATE) to store its
    # version again, and waited out the writer (here a 0.2 s busy timeout: "locked").
    path = tmp_path / "c.sqlite"
    _set_up(path)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("CREATE TABLE other (x)")
    try:
        READERS[opener](path).close()
    finally:
        holder.execute("ROLLBACK")
        holder.close()


@pytest.mark.parametrize(
    ("edit", "opener", "error"),
    [
        (
            "UPDATE delta_meta SET value = 'five' WHERE key = 'format'",
            DeltaSaver,
            r"format 'five', not a number.*changed by hand",
        ),
        (
            "UPDATE agent_meta SET value = '6; x' WHERE key = 'schema_version'",
            RunStore,
            r"schema version '6; x', not a number.*by hand",
        ),
    ],
    ids=["format", "schema version"],
)
def test_a_version_changed_by_hand_is_refused_with_what_to_do(
    tmp_path: Path, edit: str, opener: Callable[[Path], Any], error: str
) -> None:
    path = tmp_path / "c.sqlite"
    _set_up(path)
    with sqlite3.connect(path) as conn:
        conn.execute(edit)
    with pytest.raises(StoreError, match=error):
        opener(path)


def test_a_missing_additive_table_is_created_at_the_current_version(tmp_path: Path) -> None:
    # The fast path leaves a database alone only when the tables added without a version bump
    # are there too: one dropped (or never made by an older ai-agent) is created again.
    path = tmp_path / "c.sqlite"
    _set_up(path)
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE agent_outputs")
    RunStore(path).close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM agent_outputs").fetchone() == (0,)


def test_a_file_without_the_unmerged_segments_index_gets_it_when_opened(tmp_path: Path) -> None:
    # Written by an ai-agent before the index (same format 5): the open adds it, and the merge
    # queries, which name it (INDEXED BY), work on the file.
    path = tmp_path / "c.sqlite"
    _set_up(path)
    with sqlite3.connect(path) as conn:
        conn.execute("DROP INDEX delta_segments_unmerged")
    DeltaSaver(path).close()
    assert "delta_segments_unmerged (lineage=?)" in _unmerged_segments_plan(path)


def test_an_unmerged_segments_index_changed_by_hand_is_made_again(tmp_path: Path) -> None:
    # An index of that name on other columns (or without the partial WHERE) would make every
    # merge query fail ("no query solution"): it carries no data, so the open makes it again.
    path = tmp_path / "c.sqlite"
    _set_up(path)
    with sqlite3.connect(path) as conn:
        conn.execute("DROP INDEX delta_segments_unmerged")
        conn.execute(
            "CREATE INDEX delta_segments_unmerged ON delta_segments (start) WHERE merged = 1"
        )
    DeltaSaver(path).close()
    assert "delta_segments_unmerged (lineage=?)" in _unmerged_segments_plan(path)


def _unmerged_segments_plan(path: Path) -> str:
    """How SQLite runs the merge's count of a lineage's small segments (it names the index)."""
    with sqlite3.connect(path) as conn:
        plan = conn.execute(
            "EXPLAIN QUERY PLAN SELECT count(*) FROM delta_segments "
            "INDEXED BY delta_segments_unmerged WHERE lineage = 1 AND merged = 0"
        ).fetchall()
    return str(plan)


def test_a_table_in_the_unmerged_segments_index_place_is_a_clear_error(tmp_path: Path) -> None:
    # Not an index: it may hold someone's data, so the open refuses and says what to do.
    path = tmp_path / "c.sqlite"
    _set_up(path)
    with sqlite3.connect(path) as conn:
        conn.execute("DROP INDEX delta_segments_unmerged")
        conn.execute("CREATE TABLE delta_segments_unmerged (x)")
    with pytest.raises(StoreError, match=r"already a table named delta_segments_unmerged.*--db"):
        DeltaSaver(path)
