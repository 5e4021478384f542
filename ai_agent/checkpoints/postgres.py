"""PostgreSQL: LangGraph's PostgreSQL checkpointer and the run store, in one database.

For engines that outgrow one machine: several worker processes, on several hosts, share one
PostgreSQL database. Checkpoints go through ``langgraph-checkpoint-postgres`` (its own tables,
strict serialization as with SQLite); the run store (runs, leases, journal, recorded calls, plan
queue) has the same tables and schema version as the SQLite one (``ai_agent.checkpoints.schema``),
behind the same interface (``ai_agent.checkpoints.store.RunStoreProtocol``).

Leases across machines. Acquiring one is a single statement:

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

import asyncio
import json
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, Literal, cast
from urllib.parse import parse_qs, quote, unquote, urlsplit

import psycopg
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from ai_agent.checkpoints._sqlite import threaded
from ai_agent.checkpoints.plans import PLAN_COLUMNS, PlanRecord, already_queued, plan_record
from ai_agent.checkpoints.recorded import (
    CallPosition,
    ModelCallRecord,
    ModelRequest,
    ToolCallRecord,
    _dumps,
    _model_record,
    _tool_record,
)
from ai_agent.checkpoints.runstore import (
    DEFAULT_LEASE_SECONDS,
    Lease,
    OutputRecord,
    RunOrigin,
    RunRecord,
    _run,
    pid_alive,
)
from ai_agent.checkpoints.saver import strict_serializer
from ai_agent.checkpoints.schema import SCHEMA_VERSION
from ai_agent.checkpoints.store import describe_location
from ai_agent.context import JournalEntry
from ai_agent.errors import StoreError, ThreadBusyError
from ai_agent.state import Message, ToolCall, ToolResult

__all__ = [
    "PG_MIGRATIONS",
    "PostgresRunStore",
    "connect_error",
    "open_postgres_checkpointer",
    "scrub",
]

CONNECT_TIMEOUT_SECONDS = 10
# Any fixed 64-bit number: the advisory lock that serializes schema set-up between processes.
_SCHEMA_LOCK = 0x61692D6167656E74  # "ai-agent"
_SETUP_LOCK = _SCHEMA_LOCK + 1  # LangGraph's checkpoint tables
_NOW = "extract(epoch from clock_timestamp())::float8"

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
)

# PG_MIGRATIONS[n] takes a PostgreSQL run store from version n to n + 1. The PostgreSQL store
# began at version 3 (its tables above are that version); later versions add their steps here and
# to the SQLite MIGRATIONS alike.
PG_MIGRATIONS: dict[int, tuple[str, ...]] = {}
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


def _connect_kwargs(url: str) -> dict[str, Any]:
    # A URL that sets connect_timeout keeps it; otherwise a dead host fails in seconds, not minutes.
    kwargs: dict[str, Any] = {"application_name": "ai-agent"}
    if "connect_timeout" not in url:
        kwargs["connect_timeout"] = CONNECT_TIMEOUT_SECONDS
    return kwargs


def _connect(url: str, **kwargs: Any) -> psycopg.Connection[Any]:
    try:
        return psycopg.connect(url, **_connect_kwargs(url), **kwargs)
    except psycopg.Error as exc:
        raise connect_error(url, exc) from None


# The schema --------------------------------------------------------------------------------
def _ensure_schema(conn: psycopg.Connection[Any], where: str) -> int | None:
    """Create or migrate the run store's tables; return the version found (None: new)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        exists = conn.execute("SELECT to_regclass('agent_meta') IS NOT NULL").fetchone()
        found: int | None = None
        if exists and exists[0]:
            row = conn.execute(
                "SELECT value FROM agent_meta WHERE key = 'schema_version'"
            ).fetchone()
            found = int(row[0]) if row else None
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


# The checkpointer --------------------------------------------------------------------------
async def _setup_saver(conn: psycopg.AsyncConnection[Any]) -> None:
    """LangGraph's ``setup()``, one process at a time.

    Its migrations are not safe against a concurrent ``setup()``, so a session-level advisory
    lock serializes them. The lock is *tried* in a loop, not waited for in a statement: a
    statement waiting for it is an open transaction, and the ``CREATE INDEX CONCURRENTLY`` of
    the holder's migrations waits for every open transaction, which would deadlock.
    """
    while True:
        cur = await conn.execute("SELECT pg_try_advisory_lock(%s) AS ok", (_SETUP_LOCK,))
        row = await cur.fetchone()
        if row and row["ok"]:
            break
        await asyncio.sleep(0.05)
    try:
        await AsyncPostgresSaver(conn, serde=strict_serializer()).setup()
    finally:
        await conn.execute("SELECT pg_advisory_unlock(%s)", (_SETUP_LOCK,))


@asynccontextmanager
async def open_postgres_checkpointer(
    url: str, *, max_connections: int = 4
) -> AsyncIterator[AsyncPostgresSaver]:
    """Open LangGraph's PostgreSQL checkpointer on ``url``, creating its tables if needed.

    Strict serialization, as with SQLite. A pool of up to ``max_connections`` lets one process
    drive several runs at once (a worker's ``--concurrency``).

    Raises:
        StoreError: the database cannot be reached (the message has no password).
    """
    kwargs = _connect_kwargs(url)
    try:
        conn = await psycopg.AsyncConnection.connect(
            url, autocommit=True, prepare_threshold=0, row_factory=dict_row, **kwargs
        )
    except psycopg.Error as exc:
        raise connect_error(url, exc) from None
    try:
        await _setup_saver(conn)
    finally:
        await conn.close()
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        url,
        min_size=1,
        max_size=max_connections,
        open=False,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row, **kwargs},
        check=AsyncConnectionPool.check_connection,
        name="ai-agent-checkpoints",
    )
    await pool.open()
    try:
        yield AsyncPostgresSaver(pool, serde=strict_serializer())
    finally:
        await pool.close()


# The run store -----------------------------------------------------------------------------
class PostgresRunStore:
    """Runs, leases, the journal, the recorded calls and the plan queue, in PostgreSQL.

    Same interface as the SQLite ``RunStore``: every method but ``close`` is async and does its
    database work on a worker thread, through a small connection pool.

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
        self._pool: ConnectionPool[Any] = ConnectionPool(
            url,
            min_size=1,
            max_size=max_connections,
            open=False,
            kwargs=_connect_kwargs(url),
            check=ConnectionPool.check_connection,
            name="ai-agent-run-store",
        )
        self._pool.open()

    def close(self) -> None:
        """Close the pool."""
        self._pool.close()

    @contextmanager
    def _tx(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection in a transaction: committed at the end, rolled back on an error."""
        with self._pool.connection() as conn:
            yield conn

    # Runs ------------------------------------------------------------------------------------
    @threaded
    def create_run(
        self,
        thread_id: str,
        task: str,
        *,
        parent_thread_id: str | None = None,
        origin: RunOrigin = "run",
        fork_checkpoint_id: str | None = None,
        status: str = "running",
    ) -> None:
        """Record a new run (by default as running)."""
        now = time.time()
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO agent_runs (thread_id, task, status, created_at, updated_at, "
                "parent_thread_id, origin, fork_checkpoint_id) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                (thread_id, task, status, now, now, parent_thread_id, origin, fork_checkpoint_id),
            )

    @threaded
    def update_run(
        self,
        thread_id: str,
        *,
        status: str,
        final_text: str | None = None,
        gate: dict[str, Any] | None = None,
        error: str | None = None,
    ) -> None:
        """Set a run's status and outcome."""
        with self._tx() as conn:
            conn.execute(
                "UPDATE agent_runs SET status = %s, final_text = %s, gate = %s, error = %s, "
                "updated_at = %s WHERE thread_id = %s",
                (
                    status,
                    final_text,
                    json.dumps(gate) if gate else None,
                    error,
                    time.time(),
                    thread_id,
                ),
            )

    @threaded
    def get_run(self, thread_id: str) -> RunRecord | None:
        """The run with this thread id, or None."""
        with self._tx() as conn:
            row = (
                conn.cursor(row_factory=dict_row)
                .execute("SELECT * FROM agent_runs WHERE thread_id = %s", (thread_id,))
                .fetchone()
            )
        return _run(row) if row else None

    @threaded
    def list_runs(
        self,
        *,
        limit: int | None = 50,
        status: str | None = None,
        parent_thread_id: str | None = None,
    ) -> list[RunRecord]:
        """Runs, most recently updated first (all of them with ``limit=None``)."""
        clauses, params = [], []
        if status:
            clauses.append("status = %s")
            params.append(status)
        if parent_thread_id:
            clauses.append("parent_thread_id = %s")
            params.append(parent_thread_id)
        where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
        sql = f"SELECT * FROM agent_runs {where} ORDER BY updated_at DESC LIMIT %s"  # noqa: S608 - fixed text
        with self._tx() as conn:
            rows = conn.cursor(row_factory=dict_row).execute(sql, [*params, limit]).fetchall()
        return [_run(r) for r in rows]

    # Leases ----------------------------------------------------------------------------------
    @threaded
    def acquire(self, thread_id: str, *, seconds: float = DEFAULT_LEASE_SECONDS) -> Lease:
        """Take the thread's lease, or raise ThreadBusyError when another live holder has it."""
        owner, pid = uuid.uuid4().hex, os.getpid()
        with self._tx() as conn:
            won = conn.execute(
                "INSERT INTO agent_leases AS l (thread_id, owner, host, pid, acquired_at, "  # noqa: S608 - fixed text
                f"expires_at) VALUES (%s, %s, %s, %s, {_NOW}, {_NOW} + %s) "
                "ON CONFLICT (thread_id) DO UPDATE SET owner = EXCLUDED.owner, "
                "host = EXCLUDED.host, pid = EXCLUDED.pid, acquired_at = EXCLUDED.acquired_at, "
                "expires_at = EXCLUDED.expires_at WHERE l.expires_at <= EXCLUDED.acquired_at "
                "RETURNING expires_at",
                (thread_id, owner, self.host, pid, seconds),
            ).fetchone()
            if won is not None:
                return Lease(thread_id, owner, float(won[0]))
            # A live lease by the clock. Its holder may still be gone: on this host we can tell.
            held = conn.execute(
                f"SELECT owner, host, pid, expires_at - {_NOW} FROM agent_leases "  # noqa: S608 - fixed text
                "WHERE thread_id = %s",
                (thread_id,),
            ).fetchone()
            if held is None:  # pragma: no cover - ON CONFLICT locked the row until we commit
                raise StoreError(f"the lease of thread {thread_id} vanished while being read")
            if held[1] == self.host and not pid_alive(held[2]):
                took = conn.execute(
                    f"UPDATE agent_leases SET owner = %s, pid = %s, acquired_at = {_NOW}, "  # noqa: S608 - fixed text
                    f"expires_at = {_NOW} + %s WHERE thread_id = %s AND owner = %s "
                    "RETURNING expires_at",
                    (owner, pid, seconds, thread_id, held[0]),
                ).fetchone()
                if took is not None:
                    return Lease(thread_id, owner, float(took[0]))
        raise ThreadBusyError(
            f"thread {thread_id} is being worked on by process {held[2]} on {held[1]}; wait for "
            f"it to finish (its lease runs out in {max(held[3], 0):.0f}s if that process is gone)"
        )

    @threaded
    def renew(self, lease: Lease, *, seconds: float = DEFAULT_LEASE_SECONDS) -> Lease:
        """Extend a lease this process holds."""
        with self._tx() as conn:
            row = conn.execute(
                f"UPDATE agent_leases SET expires_at = {_NOW} + %s "  # noqa: S608 - fixed text
                "WHERE thread_id = %s AND owner = %s RETURNING expires_at",
                (seconds, lease.thread_id, lease.owner),
            ).fetchone()
        expires = float(row[0]) if row else time.time() + seconds
        return Lease(lease.thread_id, lease.owner, expires)

    @threaded
    def release(self, lease: Lease) -> None:
        """Give the lease back (only if this holder still has it)."""
        with self._tx() as conn:
            conn.execute(
                "DELETE FROM agent_leases WHERE thread_id = %s AND owner = %s",
                (lease.thread_id, lease.owner),
            )

    # Journal ---------------------------------------------------------------------------------
    @threaded
    def lookup(self, thread_id: str, iteration: int, call_id: str) -> JournalEntry | None:
        """The journal entry of one call, or None when it was never started."""
        with self._tx() as conn:
            row = conn.execute(
                "SELECT tool, status, result, intent_at FROM agent_journal "
                "WHERE thread_id = %s AND iteration = %s AND call_id = %s",
                (thread_id, iteration, call_id),
            ).fetchone()
        if row is None:
            return None
        status: Literal["intent", "done"] = "done" if row[1] == "done" else "intent"
        result = json.loads(row[2]) if row[2] else None
        return JournalEntry(
            call_id=call_id, tool=row[0], status=status, result=result, attempt=float(row[3])
        )

    @threaded
    def intent(self, thread_id: str, iteration: int, call: ToolCall) -> None:
        """Record that a call is about to run (committed before the tool starts)."""
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO agent_journal (thread_id, iteration, call_id, tool, args, status, "
                "intent_at) VALUES (%s, %s, %s, %s, %s, 'intent', %s) "
                "ON CONFLICT (thread_id, iteration, call_id) DO UPDATE SET tool = EXCLUDED.tool, "
                "args = EXCLUDED.args, status = 'intent', result = NULL, "
                "intent_at = EXCLUDED.intent_at, outcome_at = NULL",
                (
                    thread_id,
                    iteration,
                    call["id"],
                    call["name"],
                    json.dumps(call["args"], sort_keys=True, default=str),
                    time.time(),
                ),
            )

    @threaded
    def outcome(self, thread_id: str, iteration: int, call: ToolCall, result: ToolResult) -> None:
        """Record a call's result."""
        with self._tx() as conn:
            conn.execute(
                "UPDATE agent_journal SET status = 'done', result = %s, outcome_at = %s "
                "WHERE thread_id = %s AND iteration = %s AND call_id = %s",
                (json.dumps(result, default=str), time.time(), thread_id, iteration, call["id"]),
            )

    @threaded
    def forget(self, thread_id: str, iteration: int, call_id: str) -> None:
        """Drop a journal entry whose call is known not to have run (a replay stopped at it)."""
        with self._tx() as conn:
            conn.execute(
                "DELETE FROM agent_journal WHERE thread_id = %s AND iteration = %s "
                "AND call_id = %s AND status = 'intent'",
                (thread_id, iteration, call_id),
            )

    @threaded
    def delete_journal(self, thread_id: str) -> int:
        """Delete a finished run's journal."""
        with self._tx() as conn:
            cur = conn.execute("DELETE FROM agent_journal WHERE thread_id = %s", (thread_id,))
        return int(cur.rowcount)

    # Recorded calls --------------------------------------------------------------------------
    @staticmethod
    def _blob(conn: psycopg.Connection[Any], value: Any) -> str:
        import hashlib

        body = _dumps(value)
        digest = hashlib.sha256(body.encode()).hexdigest()
        conn.execute(
            "INSERT INTO agent_blobs (hash, body) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            (digest, body),
        )
        return digest

    @threaded
    def record_model_call(
        self,
        thread_id: str,
        position: CallPosition,
        request_hash: str,
        request: ModelRequest,
        *,
        message: Message | None,
        usage: dict[str, Any],
        error: dict[str, str] | None,
        latency_ms: float,
        replayed: bool = False,
    ) -> int:
        """Record one model call: its reply, or the model error it ended with. Returns its seq."""
        with self._tx() as conn:
            stored = {
                "messages": [self._blob(conn, m) for m in request["messages"]],
                "tools": self._blob(conn, request["tools"]),
                "params": request["params"],
            }
            row = conn.execute(
                "INSERT INTO agent_model_calls (thread_id, step, stage, checkpoint_id, "
                "request_hash, request, response, usage, error, latency_ms, replayed, created_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING seq",
                (
                    thread_id,
                    position["step"],
                    position["stage"],
                    position["checkpoint_id"],
                    request_hash,
                    _dumps(stored),
                    _dumps(message) if message is not None else None,
                    _dumps(usage),
                    _dumps(error) if error is not None else None,
                    latency_ms,
                    int(replayed),
                    time.time(),
                ),
            ).fetchone()
        return int(row[0]) if row else 0

    @threaded
    def record_tool_call(
        self,
        thread_id: str,
        position: CallPosition,
        call: ToolCall,
        args_hash: str,
        result: ToolResult,
        *,
        iteration: int | None,
        duration_ms: float,
        replayed: bool = False,
    ) -> int:
        """Record one tool call and its result. Returns its seq."""
        with self._tx() as conn:
            row = conn.execute(
                "INSERT INTO agent_tool_calls (thread_id, step, stage, checkpoint_id, iteration, "
                "call_id, tool, args_hash, args, result, duration_ms, replayed, created_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING seq",
                (
                    thread_id,
                    position["step"],
                    position["stage"],
                    position["checkpoint_id"],
                    iteration,
                    call["id"],
                    call["name"],
                    args_hash,
                    _dumps(call["args"]),
                    _dumps(result),
                    duration_ms,
                    int(replayed),
                    time.time(),
                ),
            ).fetchone()
        return int(row[0]) if row else 0

    @threaded
    def model_calls(self, thread_id: str) -> list[ModelCallRecord]:
        """The thread's recorded model calls, in the order they were made."""
        with self._tx() as conn:
            rows = conn.execute(
                "SELECT seq, thread_id, step, stage, checkpoint_id, request_hash, response, "
                "usage, error, latency_ms, replayed, created_at FROM agent_model_calls "
                "WHERE thread_id = %s ORDER BY seq",
                (thread_id,),
            ).fetchall()
        return [_model_record(r) for r in rows]

    @threaded
    def model_request(self, seq: int) -> ModelRequest:
        """The full request of one recorded model call.

        Raises:
            KeyError: no recorded call has this seq.
        """
        with self._tx() as conn:
            row = conn.execute(
                "SELECT request FROM agent_model_calls WHERE seq = %s", (seq,)
            ).fetchone()
            if row is None:
                raise KeyError(seq)
            stored = json.loads(row[0])
            wanted = [*stored["messages"], stored["tools"]]
            bodies = dict(
                conn.execute(
                    "SELECT hash, body FROM agent_blobs WHERE hash = ANY(%s)", (wanted,)
                ).fetchall()
            )
        return ModelRequest(
            messages=[json.loads(bodies[h]) for h in stored["messages"]],
            tools=json.loads(bodies[stored["tools"]]),
            params=stored["params"],
        )

    @threaded
    def tool_calls(self, thread_id: str) -> list[ToolCallRecord]:
        """The thread's recorded tool calls, in the order they were made."""
        with self._tx() as conn:
            rows = conn.execute(
                "SELECT seq, thread_id, step, stage, checkpoint_id, iteration, call_id, tool, "
                "args_hash, args, result, duration_ms, replayed, created_at FROM agent_tool_calls "
                "WHERE thread_id = %s ORDER BY seq",
                (thread_id,),
            ).fetchall()
        return [_tool_record(r) for r in rows]

    @threaded
    def delete_calls(self, thread_id: str) -> int:
        """Delete a thread's recorded calls (and bodies nothing else uses); returns how many."""
        with self._tx() as conn:
            models = conn.execute(
                "DELETE FROM agent_model_calls WHERE thread_id = %s", (thread_id,)
            )
            tools = conn.execute("DELETE FROM agent_tool_calls WHERE thread_id = %s", (thread_id,))
            # Bodies may be shared with other threads' requests (forks, replays): keep those.
            conn.execute(
                "DELETE FROM agent_blobs WHERE hash NOT IN ("
                "SELECT jsonb_array_elements_text(request::jsonb -> 'messages') "
                "FROM agent_model_calls "
                "UNION SELECT request::jsonb ->> 'tools' FROM agent_model_calls)"
            )
        return int(models.rowcount) + int(tools.rowcount)

    # Outputs (the OutputStore protocol) ------------------------------------------------------
    @threaded
    def save_output(self, thread_id: str, iteration: int, call: ToolCall, text: str) -> str:
        """Keep the full text of a clipped output; returns its reference (``out-<iter>-<id>``)."""
        ref = f"out-{iteration}-{call['id']}"
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO agent_outputs (thread_id, ref, iteration, call_id, tool, chars, "
                "content, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (thread_id, ref) DO UPDATE SET iteration = EXCLUDED.iteration, "
                "call_id = EXCLUDED.call_id, tool = EXCLUDED.tool, chars = EXCLUDED.chars, "
                "content = EXCLUDED.content, created_at = EXCLUDED.created_at",
                (thread_id, ref, iteration, call["id"], call["name"], len(text), text, time.time()),
            )
        return ref

    @threaded
    def get_output(self, thread_id: str, ref: str) -> OutputRecord | None:
        """A kept output by its reference, or None."""
        with self._tx() as conn:
            row = conn.execute(
                "SELECT ref, iteration, call_id, tool, chars, content, created_at "
                "FROM agent_outputs WHERE thread_id = %s AND ref = %s",
                (thread_id, ref),
            ).fetchone()
        if row is None:
            return None
        return OutputRecord(
            ref=row[0],
            iteration=row[1],
            call_id=row[2],
            tool=row[3],
            chars=row[4],
            content=row[5],
            created_at=row[6],
        )

    @threaded
    def list_outputs(self, thread_id: str) -> list[str]:
        """References of the outputs kept for a run, oldest first."""
        with self._tx() as conn:
            rows = conn.execute(
                "SELECT ref FROM agent_outputs WHERE thread_id = %s ORDER BY created_at, ref",
                (thread_id,),
            ).fetchall()
        return [r[0] for r in rows]

    # The plan queue --------------------------------------------------------------------------
    @threaded
    def submit_plan(
        self, thread_id: str, plan: dict[str, Any], *, gate_checkpoint_id: str | None
    ) -> PlanRecord:
        """Queue a plan for a paused run.

        Raises:
            RunError: a plan for this thread is already queued or being applied.
        """
        try:
            with self._tx() as conn:
                row = conn.execute(
                    "INSERT INTO agent_plans (thread_id, plan, status, gate_checkpoint_id, "  # noqa: S608 - fixed text
                    "submitted_at, attempts) VALUES (%s, %s, 'queued', %s, %s, 0) "
                    f"RETURNING {PLAN_COLUMNS}",
                    (thread_id, json.dumps(plan, sort_keys=True), gate_checkpoint_id, time.time()),
                ).fetchone()
        except psycopg.errors.UniqueViolation:
            with self._tx() as conn:
                open_row = conn.execute(
                    "SELECT id FROM agent_plans WHERE thread_id = %s "
                    "AND status IN ('queued', 'claimed')",
                    (thread_id,),
                ).fetchone()
            raise already_queued(thread_id, open_row[0] if open_row else None) from None
        return plan_record(cast(tuple[Any, ...], row))

    @threaded
    def get_plan(self, plan_id: int) -> PlanRecord | None:
        """The plan with this id, or None."""
        with self._tx() as conn:
            row = conn.execute(
                f"SELECT {PLAN_COLUMNS} FROM agent_plans WHERE id = %s",  # noqa: S608 - fixed text
                (plan_id,),
            ).fetchone()
        return plan_record(row) if row else None

    @threaded
    def list_plans(
        self, *, status: str | None = None, thread_id: str | None = None, limit: int | None = 50
    ) -> list[PlanRecord]:
        """Plans, oldest first (the order workers take them in)."""
        clauses, params = [], []
        if status:
            clauses.append("status = %s")
            params.append(status)
        if thread_id:
            clauses.append("thread_id = %s")
            params.append(thread_id)
        where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
        sql = f"SELECT {PLAN_COLUMNS} FROM agent_plans {where} ORDER BY id LIMIT %s"  # noqa: S608 - fixed text
        with self._tx() as conn:
            rows = conn.execute(sql, [*params, limit]).fetchall()
        return [plan_record(r) for r in rows]

    @threaded
    def claim_plan(self, plan_id: int, worker: str, *, reclaim: bool = False) -> bool:
        """Mark a queued plan as taken by ``worker``; False when it is no longer queued."""
        wanted = ["queued", "claimed"] if reclaim else ["queued"]
        with self._tx() as conn:
            cur = conn.execute(
                "UPDATE agent_plans SET status = 'claimed', claimed_by = %s, claimed_at = %s, "
                "attempts = attempts + 1 WHERE id = %s AND status = ANY(%s)",
                (worker, time.time(), plan_id, wanted),
            )
        return cur.rowcount == 1

    @threaded
    def finish_plan(
        self, plan_id: int, *, status: str, outcome: str | None = None, error: str | None = None
    ) -> None:
        """Record how applying a plan went: ``done`` (with the run's status) or ``failed``."""
        with self._tx() as conn:
            conn.execute(
                "UPDATE agent_plans SET status = %s, outcome = %s, error = %s, finished_at = %s "
                "WHERE id = %s",
                (status, outcome, error, time.time(), plan_id),
            )

    # Maintenance -----------------------------------------------------------------------------
    @threaded
    def vacuum(self) -> None:
        """Reclaim the space of deleted rows (``VACUUM`` runs outside a transaction)."""
        conn = _connect(self.url, autocommit=True)
        try:
            conn.execute("VACUUM")
        finally:
            conn.close()
