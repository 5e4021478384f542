"""The seam between the run store's logic and its two databases, SQLite and PostgreSQL.

The run store's methods (runs, leases, journal, recorded calls, kept outputs, plan queue) are
written once, in SQL that both databases run, with ``?`` placeholders. What still differs sits
behind two small types that each backend provides:

- a `Session`, one connection inside a transaction: the placeholder style, how the key of an
  inserted row comes back, and the two bits of SQL with no common spelling (the clock, and the
  JSON query over recorded requests);
- a `Database`: how a transaction or a read is opened (SQLite: one shared connection, a lock and
  ``BEGIN IMMEDIATE``; PostgreSQL: a pooled connection), the error a unique index raises, and how
  the space of deleted rows is reclaimed.

Upserts are spelled ``INSERT ... ON CONFLICT (...) DO UPDATE``, which SQLite (since 3.24) and
PostgreSQL both run. ``RETURNING`` is left to the sessions: SQLite has it only since 3.35, and a
Python linked against an older SQLite must still open its run store. Rows come back as tuples
from both drivers, read by position from fixed column lists.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine, Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar, Concatenate, ParamSpec, Protocol, TypeVar

from ai_agent._loopless import loop_running, off_loop
from ai_agent.checkpoints.fencing import check_lease

__all__ = [
    "LATER",
    "Cursor",
    "Database",
    "Later",
    "Session",
    "SqlStore",
    "page",
    "quick",
    "threaded",
]

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")
Store = TypeVar("Store", bound="SqlStore")


class Later:
    """What `Database.at_once` answers when the call would have to wait: run it elsewhere."""


LATER = Later()


def threaded(
    fn: Callable[Concatenate[S, P], R],
) -> Callable[Concatenate[S, P], Coroutine[Any, Any, R]]:
    """Run a blocking store method on a worker thread, keeping the event loop free.

    For SQLite that is not style: the checkpointer commits through the event loop, so a
    synchronous write on the loop's thread could wait for a lock that only the blocked loop can
    release (see ``ai_agent.checkpoints._sqlite``).
    """

    async def run(store: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        # Run by hand, without a loop (a command-line read, `ai_agent._loopless`), it runs
        # here: there is no loop to keep free, nor a checkpointer committing through one.
        return await off_loop(functools.partial(fn, store, *args, **kwargs))

    run.__name__, run.__qualname__, run.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    return run


def quick(
    fn: Callable[Concatenate[Store, P], R],
) -> Callable[Concatenate[Store, P], Coroutine[Any, Any, R]]:
    """Like `threaded`, for a method of one short statement or transaction: the journal's.

    A hop to a worker thread and back costs the event loop 100-200 us here (measured: an empty
    ``asyncio.to_thread``), more than a journal entry's own work (15-55 us: a commit goes to the
    WAL, without an fsync), and a tool call makes three of them (issue 20: tool overhead under a
    millisecond). So the database is first asked to run the call at once, on the loop's thread;
    it does only when nothing can make it wait (`Database.at_once`: SQLite's connection free and
    no other connection holding the write lock), and otherwise the call runs on a worker thread
    and waits there, as with `threaded`. The loop is never kept waiting for a lock.
    """

    async def run(store: Store, /, *args: P.args, **kwargs: P.kwargs) -> R:
        call = functools.partial(fn, store, *args, **kwargs)
        if loop_running():
            done = store._db.at_once(call)
            if not isinstance(done, Later):
                return done
        return await off_loop(call)

    run.__name__, run.__qualname__, run.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    return run


class Cursor(Protocol):
    """What the store reads from a DB-API cursor (``sqlite3`` and ``psycopg`` have it alike)."""

    @property
    def rowcount(self) -> int:
        """Rows the statement changed."""

    def fetchone(self) -> Any:
        """The next row (a tuple), or None."""

    def fetchall(self) -> list[Any]:
        """The remaining rows (tuples)."""


class Session(ABC):
    """One connection inside a transaction (or a read), running the store's SQL.

    Statements are written with ``?`` placeholders; a session for another style translates them.
    """

    now: ClassVar[str]
    """SQL for the database's clock, in seconds since the epoch (leases expire by it)."""

    blobs_in_use: ClassVar[str]
    """SQL selecting every body hash the recorded model requests still list."""

    lease_row: ClassVar[str]
    """SQL reading a thread's lease row (owner, host, pid) so that no takeover can commit
    before this transaction does (see ``ai_agent.checkpoints.fencing``)."""

    @abstractmethod
    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        """Run one statement."""

    @abstractmethod
    def insert(self, sql: str, params: Sequence[Any], key: str) -> int:
        """Run one INSERT and return the generated ``key`` column of the new row."""

    def text_owners(self) -> list[str]:
        """The tables whose ``texts`` column names large texts (``_texts.sweep`` reads them)."""
        return ["agent_blobs"]

    def one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """The first row of a query, or None."""
        return self.execute(sql, params).fetchone()

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """All rows of a query."""
        return self.execute(sql, params).fetchall()


class Database(Protocol):
    """Where the run store's sessions come from."""

    @property
    def unique_violation(self) -> type[Exception]:
        """What a write that breaks a unique index raises."""

    def transaction(self) -> AbstractContextManager[Session]:
        """A session whose writes are committed together at the end, or not at all."""

    def read(self) -> AbstractContextManager[Session]:
        """A session for reading."""

    def at_once(self, call: Callable[[], R]) -> R | Later:
        """``call()`` here and now if it cannot be made to wait for a lock, else `LATER`.

        ``call`` opens its own transaction or read; it is run at most once to its end (a call
        refused part-way was rolled back whole, and runs again elsewhere).
        """

    def vacuum(self) -> None:
        """Reclaim the space of deleted rows."""

    def close(self) -> None:
        """Close the connections."""


class SqlStore:
    """The base of the run store's parts: a database and its sessions.

    It knows which leases it holds, so that every write it makes for one of those threads is
    fenced: checked, in its own transaction, against the lease (``_fence``).
    """

    _db: Database

    def close(self) -> None:
        """Close the connection."""
        self._db.close()

    @functools.cached_property
    def _held(self) -> dict[str, str]:
        """Thread id -> the owner (fencing token) of each lease this store holds."""
        return {}

    def _fence(self, session: Session, thread_id: str) -> None:
        """Raise LeaseLostError if this store held the thread's lease and no longer does."""
        owner = self._held.get(thread_id)
        if owner is not None:
            check_lease(session.one(session.lease_row, (thread_id,)), thread_id, owner)

    def _tx(self) -> AbstractContextManager[Session]:
        return self._db.transaction()

    def _read(self) -> AbstractContextManager[Session]:
        return self._db.read()

    def _one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """The first row of one query, read on its own."""
        with self._read() as session:
            return session.one(sql, params)

    def _all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """All rows of one query, read on its own."""
        with self._read() as session:
            return session.all(sql, params)


def page(select: str, *, order: str, limit: int | None, **equal: Any) -> tuple[str, list[Any]]:
    """``select`` narrowed to the rows whose columns equal the given values, ordered and limited.

    A filter that is None or empty is left out; ``limit=None`` means every row.

    Examples:
        >>> page("SELECT id FROM t", order="id", limit=5, status="queued", thread_id=None)
        ('SELECT id FROM t WHERE status = ? ORDER BY id LIMIT ?', ['queued', 5])
    """
    given = {column: value for column, value in equal.items() if value}
    where = " AND ".join(f"{column} = ?" for column in given)
    sql = f"{select}{' WHERE ' if where else ''}{where} ORDER BY {order}"
    params = list(given.values())
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    return sql, params
