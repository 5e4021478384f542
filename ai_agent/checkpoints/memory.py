"""Opt-in long-term memory: past runs' tasks and answers in SQLite with full-text search.

persist adds each finished run; recall searches it for the new task. A thread is stored once
(re-persisting the same thread replaces its row), so a resumed or retried run does not duplicate.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ai_agent.checkpoints._sqlite import (
    BUSY_TIMEOUT_SECONDS,
    all_present,
    enter_wal,
    is_busy,
    locked_too_long,
)
from ai_agent.errors import StoreError

__all__ = ["SqliteMemory"]

_WORD = re.compile(r"\w{2,}", re.UNICODE)
# The words of a task a search asks for, at most (its first distinct ones): FTS5's time grows
# as the square of the words OR-ed in one query (a pasted log of 200,000 distinct words held
# the event loop for 19 s), and a task says what it is about long before that.
MAX_QUERY_WORDS = 256

_COLUMNS = ("thread_id", "task", "final_text", "status", "finished_at")

# The schema sqlite-utils' ``create`` and ``enable_fts(create_triggers=True)`` made (files
# written before stay as they are), created only where missing.
_SCHEMA = (
    'CREATE TABLE IF NOT EXISTS "memories" (\n   "thread_id" TEXT PRIMARY KEY,\n   "task" TEXT,\n'
    '   "final_text" TEXT,\n   "status" TEXT,\n   "finished_at" REAL\n)',
    'CREATE VIRTUAL TABLE IF NOT EXISTS "memories_fts" USING FTS5 (\n    "task", "final_text",\n'
    '    content="memories"\n)',
    'CREATE TRIGGER IF NOT EXISTS "memories_ai" AFTER INSERT ON "memories" BEGIN\n'
    '  INSERT INTO "memories_fts" (rowid, "task", "final_text") '
    'VALUES (new.rowid, new."task", new."final_text");\nEND',
    'CREATE TRIGGER IF NOT EXISTS "memories_ad" AFTER DELETE ON "memories" BEGIN\n'
    '  INSERT INTO "memories_fts" ("memories_fts", rowid, "task", "final_text") '
    'VALUES(\'delete\', old.rowid, old."task", old."final_text");\nEND',
    'CREATE TRIGGER IF NOT EXISTS "memories_au" AFTER UPDATE ON "memories" BEGIN\n'
    '  INSERT INTO "memories_fts" ("memories_fts", rowid, "task", "final_text") '
    'VALUES(\'delete\', old.rowid, old."task", old."final_text");\n'
    '  INSERT INTO "memories_fts" (rowid, "task", "final_text") '
    'VALUES (new.rowid, new."task", new."final_text");\nEND',
)

_UPSERT = (
    'INSERT INTO "memories" (thread_id, task, final_text, status, finished_at) '
    "VALUES (?, ?, ?, ?, ?) ON CONFLICT (thread_id) DO UPDATE SET task = excluded.task, "
    "final_text = excluded.final_text, status = excluded.status, "
    "finished_at = excluded.finished_at"
)


# Every object `_SCHEMA` creates, by name.
_OBJECTS = ("memories", "memories_fts", "memories_ai", "memories_ad", "memories_au")


def _create_schema(conn: sqlite3.Connection) -> None:
    """The memory's tables, created where missing, in WAL mode."""
    # Workers running at once share the file: in WAL mode a search does not wait for an add,
    # and the switch waits out another process opening the new file (`enter_wal`).
    enter_wal(conn, within=BUSY_TIMEOUT_SECONDS)
    if all_present(conn, _OBJECTS):
        return  # set up already: opening it takes no write lock (an agent starting mid-run)
    # The tables in one write transaction, each only if missing: processes opening a new file
    # at once create them once (sqlite-utils' check-then-create raced: "database is locked" or
    # "already exists" for 22 of 160 opens, four processes at a time).
    conn.execute("BEGIN IMMEDIATE")
    try:
        indexed = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memories_fts'").fetchone()
        for statement in _SCHEMA:
            conn.execute(statement)
        if indexed is None:  # rows stored before the index existed are indexed too
            conn.execute('INSERT INTO "memories_fts" ("memories_fts") VALUES (\'rebuild\')')
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _lenient_text(data: bytes) -> str:
    """Stored text, with U+FFFD for bytes that are not UTF-8.

    The engine writes valid text only, but a row written by another program made SQLite's
    driver refuse the whole search: every run whose task shared a word with it failed, told to
    move the whole memory aside.
    """
    return data.decode("utf-8", "replace")


class SqliteMemory:
    """Past runs, searchable by the words of a task (SQLite FTS5, ranked by bm25).

    Examples:
        >>> mem = SqliteMemory(":memory:")
        >>> mem.add({"thread_id": "t1", "task": "sum the invoices", "final_text": "42",
        ...          "status": "completed"})
        >>> [r["thread_id"] for r in mem.search("invoices total")]
        ['t1']
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_SECONDS, check_same_thread=False, isolation_level=None
        )
        conn.text_factory = _lenient_text
        try:
            with self._errors():
                _create_schema(conn)
        except BaseException:
            conn.close()
            raise
        import sqlite_utils  # on first use: importing it costs more than the rest of ai_agent

        self.db = sqlite_utils.Database(conn)
        self._lock = threading.Lock()
        self._table = self.db.table("memories")

    def add(self, record: dict[str, Any]) -> None:
        """Store (or replace) one finished run."""
        row = [record.get(k) for k in _COLUMNS]
        with self._lock, self._errors():
            # One statement, so one write transaction: the FTS triggers run inside it.
            self.db.conn.execute(_UPSERT, row)

    def search(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        """The runs that best match any word of ``query``, best first."""
        words = list(dict.fromkeys(w.lower() for w in _WORD.findall(query)))[:MAX_QUERY_WORDS]
        if not words:
            return []
        fts = " OR ".join('"' + w.replace('"', "") + '"' for w in words)
        with self._lock, self._errors():
            rows = list(self._table.search(fts, limit=limit))
        return [{k: r[k] for k in ("thread_id", "task", "final_text", "status")} for r in rows]

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """SQLite's errors as a StoreError that names the file and says what to do."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            hint = (
                locked_too_long()
                if is_busy(exc)
                else "it is not a memory ai-agent wrote: move it aside to start a new one"
            )
            raise StoreError(
                f"cannot use the SQLite memory at {self.path} ({exc}): {hint}"
            ) from None

    def close(self) -> None:
        """Close the database."""
        self.db.conn.close()
