"""Long-term memory in LangGraph's ``BaseStore``: past runs for recall, written by persist.

Beside the JSONL file and `ai_agent.checkpoints.memory.SqliteMemory`, the ``memory_store``
setting puts the memory in a LangGraph store: ``langgraph.store.sqlite.SqliteStore`` for a file,
``langgraph.store.postgres.PostgresStore`` for a ``postgresql://`` URL (the ``postgres`` extra).
Each finished run is one item (key: its thread id, so a resumed run replaces its own) under the
namespace ``("ai_agent", "runs")``. Recall ranks the items by the words they share with the
task (the newest first among equals; up to 1,000 items are read); a store configured with an
embedding index (a store of your own, `StoreMemory(store)`) is searched by meaning instead.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langgraph.store.base import BaseStore

from ai_agent.checkpoints._sqlite import BUSY_TIMEOUT_SECONDS, is_busy, retried
from ai_agent.checkpoints.store import resolve_location
from ai_agent.errors import ConfigError, StoreError

if TYPE_CHECKING:
    from langgraph.store.sqlite import SqliteStore

__all__ = ["NAMESPACE", "StoreMemory", "open_store_memory"]

NAMESPACE = ("ai_agent", "runs")
# Items read to rank by words when the store has no embedding index: the newest ones.
_SCAN = 1000
_WORD = re.compile(r"\w{2,}", re.UNICODE)


class StoreMemory:
    """The engine's `ai_agent.context.Memory` over a LangGraph ``BaseStore``.

    Args:
        store: Any ``BaseStore`` (SQLite, PostgreSQL, in memory...).
        namespace: Where the runs' items live.
        closing: Closes what was opened for the store (`open_store_memory`); None: its owner does.

    Examples:
        >>> from langgraph.store.memory import InMemoryStore
        >>> memory = StoreMemory(InMemoryStore())
        >>> memory.add({"thread_id": "t1", "task": "sum the invoices", "final_text": "42"})
        >>> [r["thread_id"] for r in memory.search("invoices total")]
        ['t1']
    """

    def __init__(
        self,
        store: BaseStore,
        namespace: tuple[str, ...] = NAMESPACE,
        *,
        closing: contextlib.ExitStack | None = None,
    ) -> None:
        self.store = store
        self.namespace = namespace
        self._closing = closing
        if closing is not None:
            # An Agent used without ``async with`` keeps its memory for its life and is never
            # closed: the connection is closed when this object goes, not left to the driver's
            # finalizer (which warns of a connection deleted while open).
            weakref.finalize(self, closing.close)

    def add(self, record: dict[str, Any]) -> None:
        """Keep a finished run (its thread's earlier item, if any, is replaced)."""
        self.store.put(self.namespace, str(record["thread_id"]), dict(record))

    def search(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        """The past runs most like ``query``, best first."""
        if getattr(self.store, "index_config", None):
            found = self.store.search(self.namespace, query=query, limit=limit)
            return [dict(item.value) for item in found]
        words = set(_WORD.findall(query.lower()))
        scored = []
        for item in self.store.search(self.namespace, limit=_SCAN):
            text = f"{item.value.get('task', '')} {item.value.get('final_text', '')}"
            shared = len(words & set(_WORD.findall(text.lower())))
            if shared:  # more words in common first; of as many, the newest
                scored.append((-shared, -item.updated_at.timestamp(), item.key, dict(item.value)))
        return [value for *_, value in sorted(scored, key=lambda s: s[:3])[:limit]]

    def close(self) -> None:
        """Close the store's connection when this object opened it."""
        if self._closing is not None:
            self._closing.close()
            self._closing = None


def open_store_memory(location: str) -> StoreMemory:
    """The memory in the LangGraph store at ``location``: a SQLite file or a postgresql:// URL.

    Raises:
        ConfigError: a PostgreSQL URL without the ``postgres`` extra installed.
    """
    where = resolve_location(location)
    stack = contextlib.ExitStack()
    store: BaseStore
    if isinstance(where, str):  # a postgresql:// URL
        try:
            from langgraph.store.postgres import PostgresStore
        except ImportError:  # pragma: no cover - the extra is installed where tests run
            raise ConfigError(
                "memory_store is a PostgreSQL URL: install the postgres extra "
                "(pip install 'ai-agent[postgres]')"
            ) from None
        from ai_agent.checkpoints.postgres import STORE_SETUP_LOCK, set_up_one_at_a_time

        store = stack.enter_context(PostgresStore.from_conn_string(where))
        with set_up_one_at_a_time(where, STORE_SETUP_LOCK):
            store.setup()
    else:
        from langgraph.store.sqlite import SqliteStore

        if str(where) != ":memory:":
            Path(where).parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(where), timeout=BUSY_TIMEOUT_SECONDS, check_same_thread=False)
        conn.isolation_level = None  # SqliteStore runs its own transactions
        stack.callback(conn.close)
        store = SqliteStore(conn)
        try:
            _set_up_sqlite(store, where)
        except BaseException:
            stack.close()
            raise
    return StoreMemory(store, closing=stack)


def _set_up_sqlite(store: SqliteStore, where: Path) -> None:
    """``SqliteStore.setup()``, retried while another process sets up the same new file.

    Its migrations check the version, then apply what is missing, outside one transaction: four
    processes opening a new file at once failed 1 time in 100 ("UNIQUE constraint failed:
    store_migrations.v", or a duplicate column). A retry finds the other process's migrations
    applied and goes on from there.
    """
    try:
        retried(store.setup, when=_raced, within=BUSY_TIMEOUT_SECONDS)
    except sqlite3.DatabaseError as exc:
        raise StoreError(
            f"cannot set up the memory store at {where} ({exc}): it is not a "
            "LangGraph store ai-agent wrote; move it aside or point memory_store at another file"
        ) from None


def _raced(exc: BaseException) -> bool:
    """Whether ``setup()`` failed on what another process's set-up just did."""
    if isinstance(exc, sqlite3.IntegrityError) or is_busy(exc):
        return True
    text = str(exc)
    return isinstance(exc, sqlite3.OperationalError) and (
        "duplicate column" in text or "already exists" in text
    )
