"""The run store's SQLite plumbing: one connection, a lock, transactions.

Every public store method is async and does its SQLite work on a worker thread (``threaded``).
That is not style: the checkpointer commits through the event loop, so a synchronous write on the
loop's thread could wait for a lock that only the blocked loop can release. The worker threads
share this one connection, and the lock lets one of them use it at a time. A journal entry may
use it from the loop's thread instead, when nothing can make it wait (`SqliteDatabase.at_once`).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from ai_agent.checkpoints import _texts
from ai_agent.checkpoints._sql import LATER, Later, Session
from ai_agent.checkpoints.fencing import LEASE_ROW_SQL
from ai_agent.errors import StorageFullError

T = TypeVar("T")

# How long a statement waits for another connection's lock before "database is locked".
BUSY_TIMEOUT_SECONDS = 30
# SQLite's default: a commit that leaves the WAL this many pages long copies them into the file.
_AUTOCHECKPOINT_PAGES = 1000
# A call run at once never starts that copy (it fsyncs: 7-51 ms measured, too long to keep an
# event loop waiting); every this many, one runs on a worker thread instead, and its commit
# copies what the others left. So the WAL stays bounded with no other writer to checkpoint it.
CHECKPOINT_ON_A_THREAD_EVERY = 32

__all__ = [
    "SqliteDatabase",
    "SqliteSession",
    "enter_wal",
    "full_disk_raises",
    "is_busy",
    "locked_too_long",
    "retried",
]


@contextmanager
def full_disk_raises(where: object) -> Iterator[None]:
    """Turn SQLite's "database or disk is full" into a StorageFullError naming the database.

    SQLite reports a full disk (ENOSPC on the file or its WAL) and a reached size limit
    (``max_page_count``) alike, as SQLITE_FULL; the transaction that hit it is rolled back
    whole, so what was committed before is intact.
    """
    try:
        yield
    except sqlite3.Error as exc:
        if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
            raise StorageFullError(str(where)) from exc
        raise


def is_busy(exc: BaseException) -> bool:
    """Whether SQLite said the database is locked by another connection (SQLITE_BUSY)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF == sqlite3.SQLITE_BUSY


def locked_too_long() -> str:
    """What to say when a database stayed locked through the whole busy timeout."""
    return (
        f"another process has held it locked for over {BUSY_TIMEOUT_SECONDS} s; "
        "try again when it is done"
    )


def all_present(conn: sqlite3.Connection, names: Sequence[str]) -> bool:
    """Whether every table, index or trigger ``names`` lists is in the database's schema."""
    marks = ", ".join("?" * len(names))
    row = conn.execute(
        f"SELECT count(DISTINCT name) FROM sqlite_master WHERE name IN ({marks})",  # noqa: S608 - placeholders only
        tuple(names),
    ).fetchone()
    return bool(row[0] == len(set(names)))


def enter_wal(conn: sqlite3.Connection, within: float) -> None:
    """Put the database in WAL mode, waiting up to ``within`` seconds for other connections.

    SQLite answers a change of journal mode that races another process's first open of the
    same new file with "database is locked" at once, without waiting through the connection's
    busy timeout (measured: 15 of 400 opens of fresh files, four processes at a time). Two
    processes starting their first run on one new database would fail, so the change is
    retried until it goes through or ``within`` has passed.
    """
    retried(lambda: conn.execute("PRAGMA journal_mode=WAL"), when=is_busy, within=within)


def retried(action: Callable[[], T], *, when: Callable[[BaseException], bool], within: float) -> T:
    """``action()``, run again while it fails with what ``when`` accepts, for up to ``within`` s.

    For what another process's set-up of the same new file makes fail for a moment. tenacity is
    imported on the first such failure only: its ~70 modules stay out of the reads' start-up.
    """
    try:
        return action()
    except Exception as exc:
        if not when(exc):
            raise
    from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_random

    retrying = Retrying(
        retry=retry_if_exception(when),
        stop=stop_after_delay(within),
        wait=wait_random(0.005, 0.05),
        reraise=True,
    )
    return retrying(action)


def _lenient_text(data: bytes) -> str | bytes:
    """Text as text; bytes that are not UTF-8 as the bytes, as a BLOB column's would be."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data


class SqliteSession(Session):
    """The store's SQL on SQLite: ``?`` placeholders as they are, keys from ``lastrowid``."""

    # The machine's clock: a SQLite file is shared only by the processes of one machine.
    now = "((julianday('now') - 2440587.5) * 86400.0)"
    blobs_in_use = (
        "SELECT j.value FROM agent_model_calls AS c, json_each(c.request, '$.messages') AS j "
        "UNION SELECT json_extract(request, '$.tools') FROM agent_model_calls"
    )

    # The transaction holds the file's write lock already (BEGIN IMMEDIATE): no takeover can
    # commit before it.
    lease_row = LEASE_ROW_SQL

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        """Run one statement."""
        return self.conn.execute(sql, params)

    def insert(self, sql: str, params: Sequence[Any], key: str) -> int:
        """Run one INSERT and return the generated ``key`` (the rowid alias) of the new row."""
        return int(self.conn.execute(sql, params).lastrowid or 0)

    def one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """The first row of a query, or None (text that is not UTF-8 read as `all` says)."""
        rows = self._rows(sql, params, lambda cursor: [cursor.fetchone()])
        return rows[0]

    def all(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """All rows of a query.

        A row whose text is not UTF-8 (written by another program: the engine writes valid
        text only) made SQLite's driver refuse the whole query, so one damaged run hid every
        other from the listings. Such a query is read again with that text as its bytes, as a
        BLOB's would be: the row's checks then show it with U+FFFD for what cannot be read and
        say what is wrong with it (`ai_agent.checkpoints._rows.stored_text`).
        """
        return self._rows(sql, params, lambda cursor: cursor.fetchall())

    def _rows(
        self, sql: str, params: Sequence[Any], fetch: Callable[[sqlite3.Cursor], list[Any]]
    ) -> list[Any]:
        try:
            return fetch(self.conn.execute(sql, params))
        except sqlite3.OperationalError as exc:
            if "decode to UTF-8" not in str(exc):
                raise
        self.conn.text_factory = _lenient_text  # the session holds the connection's lock
        try:
            return fetch(self.conn.execute(sql, params))
        finally:
            self.conn.text_factory = str

    def text_owners(self) -> list[str]:
        """The run store's bodies, and the checkpoints' rows when they share this file."""
        return _texts.sqlite_owners(self.conn.execute)


class SqliteDatabase:
    """One autocommit connection shared by threads, guarded by a lock.

    `transaction` opens with ``BEGIN IMMEDIATE``: the write lock is taken up front, so two
    processes never deadlock on upgrading a read to a write.

    Args:
        path: The database file.

    Raises:
        sqlite3.DatabaseError: the file is not a SQLite database.
    """

    unique_violation = sqlite3.IntegrityError

    def __init__(self, path: Path) -> None:
        self.path = path
        # Re-entrant: `at_once` holds it while the call it runs opens its transaction.
        self._lock = threading.RLock()
        self._calls_at_once = 0
        self.conn = sqlite3.connect(
            path, timeout=BUSY_TIMEOUT_SECONDS, check_same_thread=False, isolation_level=None
        )
        enter_wal(self.conn, within=BUSY_TIMEOUT_SECONDS)
        # As for the checkpoints: a commit reaches the WAL before it returns (a crash of this
        # process loses nothing, and commits stay in order) without an fsync each; FULL would
        # cost about a millisecond per journal entry, twice per tool call.
        self.conn.execute("PRAGMA synchronous=NORMAL")

    def close(self) -> None:
        """Close the connection, once no other thread is inside a transaction or a read.

        A close from another thread in the middle of one rolled it back under its owner (its
        commit then failed on a closed database), and could crash the SQLite driver: a run
        still marking its row while its Agent closed was seen to end the process (exit 139).
        """
        with self._lock:
            self.conn.close()

    @contextmanager
    def transaction(self) -> Iterator[SqliteSession]:
        """A session in a ``BEGIN IMMEDIATE`` transaction: committed at the end, or rolled back."""
        with self._lock, full_disk_raises(self.path):
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield SqliteSession(self.conn)
                # A full disk may show only here, when the WAL grows by the transaction's pages.
                self.conn.execute("COMMIT")
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise

    @contextmanager
    def read(self) -> Iterator[SqliteSession]:
        """A session for reading (each statement sees the database as committed)."""
        with self._lock, full_disk_raises(self.path):
            yield SqliteSession(self.conn)

    def at_once(self, call: Callable[[], T]) -> T | Later:
        """``call()`` on this thread if it need not wait: else `LATER`, having changed nothing.

        It would wait for the connection (another thread of this store uses it: the lock is not
        free) or for the file's write lock (another connection holds it: with a busy timeout of
        0 for the attempt, SQLite says "locked" at once and the transaction is rolled back).
        What else a commit does is bounded: to the WAL, without an fsync (``synchronous=NORMAL``).
        """
        self._calls_at_once += 1
        if self._calls_at_once % CHECKPOINT_ON_A_THREAD_EVERY == 0:
            return LATER  # this one commits on a thread: a checkpoint it starts waits there
        if not self._lock.acquire(blocking=False):
            return LATER
        try:
            self.conn.execute("PRAGMA busy_timeout = 0")
            self.conn.execute("PRAGMA wal_autocheckpoint = 0")
            try:
                return call()
            except sqlite3.OperationalError as exc:
                if is_busy(exc):
                    return LATER
                raise
            finally:
                self.conn.execute(f"PRAGMA wal_autocheckpoint = {_AUTOCHECKPOINT_PAGES}")
                self.conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_SECONDS * 1000}")
        finally:
            self._lock.release()

    def vacuum(self) -> None:
        """Fold the WAL into the file, then rebuild it."""
        with self._lock:
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self.conn.execute("VACUUM")
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
