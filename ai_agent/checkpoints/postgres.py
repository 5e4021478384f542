"""PostgreSQL: the run store, the connections and the set-ups; the checkpointer beside it.

For engines that outgrow one machine: several worker processes, on several hosts, share one
PostgreSQL database. Checkpoints go through ``langgraph-checkpoint-postgres`` (its own tables,
strict serialization as with SQLite; ``ai_agent.checkpoints.postgres_saver``); the run store
(runs, leases, journal, recorded calls, plan queue) has the same tables and schema version as
the SQLite one (``ai_agent.checkpoints.schema``), behind the same interface
(``ai_agent.checkpoints.store.RunStoreProtocol``).

Leases across machines (the logic is the SQLite store's, ``SqlRunStore.acquire``). Acquiring
one turns on a single statement:

    INSERT ... ON CONFLICT (thread_id) DO UPDATE ... WHERE <the held lease has expired>

PostgreSQL locks the conflicting row, so of any number of processes acquiring one thread at once,
exactly one inserts or takes over; the others see the live lease and get ThreadBusyError. Expiry is
measured on the database server's clock (``clock_timestamp()``), never the callers', so machines
with skewed clocks agree on when a lease has run out. A lease held by a process that is gone on
*this* host (pid dead) is taken over at once, with a compare-and-set on its owner so two takers
cannot both win; a lease held on another host is only taken over when it expires (its holder
renews it every minute while it works).

Schema set-up runs under a transaction-scoped advisory lock, so processes opening a new database
at once create the tables once.

The URL may hold a password: it is used to connect and nowhere else. Errors name the database by
``describe_location`` (no password) and scrub the password from any text the driver produced.

Requires the ``postgres`` extra (``pip install 'ai-agent[postgres]'``); importing ``ai_agent``
does not import this module.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import parse_qs, quote, unquote, urlsplit

import psycopg
from psycopg_pool import ConnectionPool

from ai_agent.checkpoints._pgpool import IdleCheck
from ai_agent.checkpoints._sql import LATER, Later, Session
from ai_agent.checkpoints.fencing import LEASE_ROW_SQL
from ai_agent.checkpoints.pins import PINS_DDL
from ai_agent.checkpoints.rules import POSTGRES_TYPES, RULES_DDL
from ai_agent.checkpoints.runstore import SqlRunStore
from ai_agent.checkpoints.schema import (
    JOURNAL_RECORDED_OUTCOMES,
    RUN_SUMMARIES_TABLE,
    SCHEMA_VERSION,
    V6_CHILD_COLUMNS,
    created_objects,
    stored_number,
)
from ai_agent.checkpoints.store import describe_location
from ai_agent.errors import StorageFullError, StoreError

T = TypeVar("T")

__all__ = [
    "PG_MIGRATIONS",
    "SAVER_SETUP_LOCK",
    "STORE_SETUP_LOCK",
    "PostgresRunStore",
    "connect_error",
    "connect_kwargs",
    "scrub",
    "set_up_one_at_a_time",
]

CONNECT_TIMEOUT_SECONDS = 10
# Any fixed 64-bit number: the advisory lock that serializes schema set-up between processes.
_SCHEMA_LOCK = 0x61692D6167656E74  # "ai-agent"
SAVER_SETUP_LOCK = _SCHEMA_LOCK + 1  # LangGraph's checkpoint tables (postgres_saver)
STORE_SETUP_LOCK = _SCHEMA_LOCK + 2  # LangGraph's store tables (the memory_store setting)

_TABLES = (
    "CREATE TABLE IF NOT EXISTS agent_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS agent_runs (
        thread_id TEXT PRIMARY KEY,
        task TEXT NOT NULL,
        status TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL,
        final_text TEXT,
        gate TEXT,
        error TEXT,
        parent_thread_id TEXT,
        origin TEXT NOT NULL DEFAULT 'run',
        fork_checkpoint_id TEXT
    )""",
    "CREATE INDEX IF NOT EXISTS agent_runs_updated ON agent_runs (updated_at)",
    "CREATE INDEX IF NOT EXISTS agent_runs_parent ON agent_runs (parent_thread_id)",
    """CREATE TABLE IF NOT EXISTS agent_leases (
        thread_id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        acquired_at DOUBLE PRECISION NOT NULL,
        expires_at DOUBLE PRECISION NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS agent_journal (
        thread_id TEXT NOT NULL,
        iteration INTEGER NOT NULL,
        call_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        args TEXT NOT NULL,
        status TEXT NOT NULL,
        result TEXT,
        intent_at DOUBLE PRECISION NOT NULL,
        outcome_at DOUBLE PRECISION,
        PRIMARY KEY (thread_id, iteration, call_id)
    )""",
    "CREATE TABLE IF NOT EXISTS agent_blobs (hash TEXT PRIMARY KEY, body TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS agent_model_calls (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        thread_id TEXT NOT NULL,
        step INTEGER,
        stage TEXT,
        checkpoint_id TEXT,
        request_hash TEXT NOT NULL,
        request TEXT NOT NULL,
        response TEXT,
        usage TEXT NOT NULL,
        error TEXT,
        latency_ms DOUBLE PRECISION NOT NULL,
        replayed INTEGER NOT NULL,
        created_at DOUBLE PRECISION NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS agent_model_calls_thread ON agent_model_calls (thread_id, seq)",
    """CREATE TABLE IF NOT EXISTS agent_tool_calls (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        thread_id TEXT NOT NULL,
        step INTEGER,
        stage TEXT,
        checkpoint_id TEXT,
        iteration INTEGER,
        call_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        args_hash TEXT NOT NULL,
        args TEXT NOT NULL,
        result TEXT NOT NULL,
        duration_ms DOUBLE PRECISION NOT NULL,
        replayed INTEGER NOT NULL,
        created_at DOUBLE PRECISION NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS agent_tool_calls_thread ON agent_tool_calls (thread_id, seq)",
    """CREATE TABLE IF NOT EXISTS agent_plans (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        thread_id TEXT NOT NULL,
        plan TEXT NOT NULL,
        status TEXT NOT NULL,
        gate_checkpoint_id TEXT,
        submitted_at DOUBLE PRECISION NOT NULL,
        claimed_by TEXT,
        claimed_at DOUBLE PRECISION,
        attempts INTEGER NOT NULL DEFAULT 0,
        finished_at DOUBLE PRECISION,
        outcome TEXT,
        error TEXT
    )""",
    # One open plan per thread, as in SQLite.
    "CREATE UNIQUE INDEX IF NOT EXISTS agent_plans_open ON agent_plans (thread_id) "
    "WHERE status IN ('queued', 'claimed')",
    "CREATE INDEX IF NOT EXISTS agent_plans_status ON agent_plans (status, id)",
    # Additive, as in SQLite's _ADDITIVE: created when missing at any version.
    *(statement.format(**POSTGRES_TYPES) for statement in RULES_DDL),
    *(statement.format(**POSTGRES_TYPES) for statement in PINS_DDL),
    """CREATE TABLE IF NOT EXISTS agent_outputs (
        thread_id TEXT NOT NULL,
        ref TEXT NOT NULL,
        iteration INTEGER NOT NULL,
        call_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        chars INTEGER NOT NULL,
        content TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (thread_id, ref)
    )""",
    RUN_SUMMARIES_TABLE.format(real="DOUBLE PRECISION"),
)

# PG_MIGRATIONS[n] takes a PostgreSQL run store from version n to n + 1. The PostgreSQL store
# began at version 3 (its tables above are that version); later versions add their steps here and
# to the SQLite MIGRATIONS alike.
PG_MIGRATIONS: dict[int, tuple[str, ...]] = {
    # 4: large texts in message bodies stored once (ai_agent.checkpoints._texts). The index
    # holds the key, not the list of hashes: a btree entry has a size limit here.
    3: (
        "CREATE TABLE IF NOT EXISTS agent_texts (hash TEXT PRIMARY KEY, body BYTEA NOT NULL)",
        "ALTER TABLE agent_blobs ADD COLUMN IF NOT EXISTS texts TEXT",
        "CREATE INDEX IF NOT EXISTS agent_blobs_texts ON agent_blobs (hash) "
        "WHERE texts IS NOT NULL",
    ),
    # 5: a tool call's outcome stored once, in the journal; the recorded call keeps its key.
    4: (
        JOURNAL_RECORDED_OUTCOMES,
        "UPDATE agent_tool_calls SET iteration = 0 WHERE iteration IS NULL",
        "ALTER TABLE agent_tool_calls ALTER COLUMN iteration SET NOT NULL, DROP COLUMN tool, "
        "DROP COLUMN args, DROP COLUMN result",
    ),
    # 6: a child run (a subagent's) names its parent's step.
    5: V6_CHILD_COLUMNS,
}
_FIRST_PG_VERSION = 3


# Connecting, and saying why it failed -------------------------------------------------------
def _passwords(url: str) -> set[str]:
    """The password a URL holds, in its user info or as a ``password=`` query parameter."""
    try:
        parts = urlsplit(url)
        found = [parts.password or "", *parse_qs(parts.query).get("password", [])]
    except ValueError:
        return set()
    return {form for p in found if p for form in (p, unquote(p), quote(p, safe=""))}


def scrub(text: str, url: str) -> str:
    """``text`` with the URL's password (as written, and percent-decoded) replaced by ``***``."""
    for form in sorted(_passwords(url), key=len, reverse=True):
        text = text.replace(form, "***")
    return text


def connect_error(url: str, exc: BaseException) -> StoreError:
    """One line for a failed connection: where, why (without the password), what to do."""
    text = scrub(str(exc), url).strip()
    # psycopg says 'connection failed: connection to server at "h", port p failed: REASON\n...'
    reason = text.rsplit(" failed: ", 1)[-1].splitlines()[0] if text else type(exc).__name__
    reason = reason.removeprefix("FATAL:").strip()
    return StoreError(
        f"cannot connect to PostgreSQL at {describe_location(url)} ({reason}); check that the "
        "server is running and the URL is right, or point --db / MAMBA_CHECKPOINT_URL at "
        "another database"
    )


def connect_kwargs(url: str) -> dict[str, Any]:
    """The driver's keyword arguments for ``url``: the application's name and a connect timeout."""
    # A URL that sets connect_timeout keeps it; otherwise a dead host fails in seconds, not minutes.
    kwargs: dict[str, Any] = {"application_name": "ai-agent"}
    if "connect_timeout" not in url:
        kwargs["connect_timeout"] = CONNECT_TIMEOUT_SECONDS
    return kwargs


def _connect(url: str, **kwargs: Any) -> psycopg.Connection[Any]:
    try:
        return psycopg.connect(url, **connect_kwargs(url), **kwargs)
    except psycopg.Error as exc:
        raise connect_error(url, exc) from None


# The schema --------------------------------------------------------------------------------
# Every table and index `_TABLES` creates where missing, by name.
_TABLE_OBJECTS = created_objects(_TABLES)


def _up_to_date(conn: psycopg.Connection[Any]) -> bool:
    """Whether the run store is at `SCHEMA_VERSION` with every object of `_TABLES`."""
    present = conn.execute(
        "SELECT count(*) FROM unnest(%s::text[]) AS name WHERE to_regclass(name) IS NOT NULL",
        (list(_TABLE_OBJECTS),),
    ).fetchone()
    if present is None or present[0] != len(_TABLE_OBJECTS):
        return False
    row = conn.execute("SELECT value FROM agent_meta WHERE key = 'schema_version'").fetchone()
    return row is not None and row[0] == str(SCHEMA_VERSION)


def _ensure_schema(conn: psycopg.Connection[Any], where: str) -> int | None:
    """Create or migrate the run store's tables; return the version found (None: new).

    A store already at `SCHEMA_VERSION` is left as it is, read without the set-up lock or a
    write: a command that reads it (``ai-agent runs --db postgresql://...``) and a worker
    starting beside others change nothing.
    """
    with conn.transaction():
        if _up_to_date(conn):
            return SCHEMA_VERSION
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        exists = conn.execute("SELECT to_regclass('agent_meta') IS NOT NULL").fetchone()
        found: int | None = None
        if exists and exists[0]:
            row = conn.execute(
                "SELECT value FROM agent_meta WHERE key = 'schema_version'"
            ).fetchone()
            found = (
                stored_number(
                    row[0],
                    what=f"the run store at {where} names its schema version",
                    fix="agent_meta was changed by hand; restore the database from a backup",
                )
                if row
                else None
            )
        version = _FIRST_PG_VERSION if found is None else found
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"the run store at {where} has schema version {version}, newer than this "
                f"ai-agent understands ({SCHEMA_VERSION}); upgrade ai-agent"
            )
        for statement in _TABLES:
            conn.execute(statement)  # fixed text, no user input
        while version < SCHEMA_VERSION:
            for statement in PG_MIGRATIONS[version]:
                conn.execute(statement)  # fixed text
            version += 1
        conn.execute(
            "INSERT INTO agent_meta VALUES ('schema_version', %s) "
            "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            (str(version),),
        )
    return found


# Set-ups ------------------------------------------------------------------------------------
@contextmanager
def set_up_one_at_a_time(url: str, lock: int) -> Iterator[None]:
    """Hold a session-level advisory lock, on a connection of its own, around a set-up.

    For LangGraph's ``PostgresStore.setup()``: its migrations race like the checkpointer's (four
    workers starting on a new database: 20 of 60 failed with duplicate keys), and one of them is
    a ``CREATE INDEX CONCURRENTLY``, so the lock is tried in a loop (see `_setup_saver`).
    """
    with _connect(url, autocommit=True) as conn:
        while not _try_lock(conn, lock):
            time.sleep(0.05)
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (lock,))


def _try_lock(conn: psycopg.Connection[Any], lock: int) -> bool:
    row = conn.execute("SELECT pg_try_advisory_lock(%s)", (lock,)).fetchone()
    return bool(row and row[0])


# The run store -----------------------------------------------------------------------------
class PostgresSession(Session):
    """The store's SQL on PostgreSQL: ``%s`` placeholders, keys from ``RETURNING``."""

    # The server's clock, never the callers': machines with skewed clocks agree on expiry.
    now = "extract(epoch from clock_timestamp())::float8"
    blobs_in_use = (
        "SELECT jsonb_array_elements_text(request::jsonb -> 'messages') FROM agent_model_calls "
        "UNION SELECT request::jsonb ->> 'tools' FROM agent_model_calls"
    )

    # The row stays locked until this transaction ends: a takeover (an UPDATE of it) waits.
    lease_row = LEASE_ROW_SQL + " FOR SHARE"

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> psycopg.Cursor[Any]:
        """Run one statement (written with ``?`` placeholders)."""
        # psycopg reads %s as a placeholder, so a literal % is doubled first.
        return self.conn.execute(sql.replace("%", "%%").replace("?", "%s"), params)

    def insert(self, sql: str, params: Sequence[Any], key: str) -> int:
        """Run one INSERT and return the generated ``key`` column of the new row."""
        row = self.execute(f"{sql} RETURNING {key}", params).fetchone()
        return int(row[0]) if row else 0


class PostgresDatabase:
    """A small pool of connections; each session is one of them inside a transaction.

    Args:
        url: A ``postgresql://`` URL.
        max_connections: Pool size.
    """

    unique_violation = psycopg.errors.UniqueViolation

    def __init__(self, url: str, *, max_connections: int) -> None:
        self.url = url
        self._pool: ConnectionPool[Any] = ConnectionPool(
            url,
            min_size=1,
            max_size=max_connections,
            open=False,
            kwargs=connect_kwargs(url),
            check=IdleCheck().check,
            name="ai-agent-run-store",
        )
        self._pool.open()

    def close(self) -> None:
        """Close the pool."""
        self._pool.close()

    @contextmanager
    def transaction(self) -> Iterator[PostgresSession]:
        """A pooled connection in a transaction: committed at the end, rolled back on an error."""
        try:
            with self._pool.connection() as conn:
                yield PostgresSession(conn)
        except psycopg.errors.DiskFull:
            raise StorageFullError(describe_location(self.url)) from None

    read = transaction

    def at_once(self, call: Callable[[], T]) -> Later:
        """Never here: every statement is a round trip to the server (`quick` then threads it)."""
        return LATER

    def vacuum(self) -> None:
        """``VACUUM``, on a connection of its own: it cannot run inside a transaction."""
        conn = _connect(self.url, autocommit=True)
        try:
            conn.execute("VACUUM")
        finally:
            conn.close()


class PostgresRunStore(SqlRunStore):
    """Runs, leases, the journal, the recorded calls and the plan queue, in PostgreSQL.

    Same interface and logic as the SQLite ``RunStore`` (``ai_agent.checkpoints.runstore``):
    every method but ``close`` is async and does its database work on a worker thread, through a
    small connection pool.

    Args:
        url: A ``postgresql://`` URL.
        host: The name this process's leases carry (default: the host name). Pid liveness is only
            checked for leases with the same name, since a pid means nothing on another machine.
        max_connections: Pool size.

    Raises:
        StoreError: the database cannot be reached, or was written by a newer ai-agent.
    """

    def __init__(self, url: str, *, host: str | None = None, max_connections: int = 8) -> None:
        self.url = url
        self.where = describe_location(url)
        self.host = host or socket.gethostname()
        conn = _connect(url)
        try:
            self.migrated_from = _ensure_schema(conn, self.where)
        except psycopg.Error as exc:
            raise StoreError(
                f"cannot set up the run store at {self.where}: {scrub(str(exc), url)}"
            ) from None
        finally:
            conn.close()
        self._db = PostgresDatabase(url, max_connections=max_connections)
