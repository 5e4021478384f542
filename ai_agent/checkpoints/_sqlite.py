"""The SQLite plumbing the run store's parts share: one connection, a lock, transactions, threads.

Every public store method is async and does its SQLite work on a worker thread (``threaded``).
That is not style: the checkpointer commits through the event loop, so a synchronous write on the
loop's thread could wait for a lock that only the blocked loop can release.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

__all__ = ["SqliteBase", "threaded"]

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")  # any store class: the PostgreSQL store uses it too


def threaded(
    fn: Callable[Concatenate[S, P], R],
) -> Callable[Concatenate[S, P], Coroutine[Any, Any, R]]:
    """Run a blocking store method on a worker thread, keeping the event loop free."""

    async def run(store: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(fn, store, *args, **kwargs)

    run.__name__, run.__qualname__, run.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    return run


class SqliteBase:
    """One autocommit connection shared by threads, guarded by a lock.

    Subclasses open it with `_connect` and use `_tx` for writes (``BEGIN
    IMMEDIATE``: the write lock is taken up front, so two processes never deadlock on upgrade)
    and `_read` for reads.
    """

    path: Path
    _conn: sqlite3.Connection
    _lock: threading.Lock

    def _connect(self, path: Path) -> sqlite3.Connection:
        self.path = path
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(
            path, timeout=30, check_same_thread=False, isolation_level=None
        )
        self._conn.execute("PRAGMA journal_mode=WAL")
        # As for the checkpoints: a commit reaches the WAL before it returns (a crash of this
        # process loses nothing, and commits stay in order) without an fsync each; FULL would
        # cost about a millisecond per journal entry, twice per tool call.
        self._conn.execute("PRAGMA synchronous=NORMAL")
        return self._conn

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            yield self._conn
