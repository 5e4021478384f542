"""Opt-in long-term memory: past runs' tasks and answers in SQLite with full-text search.

persist adds each finished run; recall searches it for the new task. A thread is stored once
(re-persisting the same thread replaces its row), so a resumed or retried run does not duplicate.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from pathlib import Path
from typing import Any

__all__ = ["SqliteMemory"]

_WORD = re.compile(r"\w{2,}", re.UNICODE)


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
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), timeout=30, check_same_thread=False)
        import sqlite_utils  # on first use: importing it costs more than the rest of ai_agent

        self.db = sqlite_utils.Database(conn)
        self._lock = threading.Lock()
        table = self.db.table("memories")
        if not table.exists():
            table.create(
                {
                    "thread_id": str,
                    "task": str,
                    "final_text": str,
                    "status": str,
                    "finished_at": float,
                },
                pk="thread_id",
            )
            table.enable_fts(["task", "final_text"], create_triggers=True)
        self._table = table

    def add(self, record: dict[str, Any]) -> None:
        """Store (or replace) one finished run."""
        row = {
            k: record.get(k) for k in ("thread_id", "task", "final_text", "status", "finished_at")
        }
        with self._lock:
            self._table.upsert(row, pk="thread_id")

    def search(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        """The runs that best match any word of ``query``, best first."""
        words = dict.fromkeys(w.lower() for w in _WORD.findall(query))
        if not words:
            return []
        fts = " OR ".join('"' + w.replace('"', "") + '"' for w in words)
        with self._lock:
            rows = list(self._table.search(fts, limit=limit))
        return [{k: r[k] for k in ("thread_id", "task", "final_text", "status")} for r in rows]

    def close(self) -> None:
        """Close the database."""
        self.db.conn.close()
