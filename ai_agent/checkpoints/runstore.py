"""The run store: runs, per-thread leases and the act journal, in SQLite beside the checkpoints.

Checkpoints say where a run *is*; the run store says what it *is about* (task, status, final text,
the pending gate), who is working on it right now (leases) and which tool calls were started and
finished (the journal). It lives in the same database file as the checkpoints, in its own tables,
so one file holds a whole run.

Leases make a resume safe across processes: acquiring one is a single ``BEGIN IMMEDIATE``
transaction, so of two processes resuming one thread exactly one wins; the other gets
ThreadBusyError. A lease whose owner process is gone (same host, pid dead) or whose time ran out
can be taken over, so a crash never locks a thread forever.

Every public method is async and does its SQLite work on a worker thread. That is not style: the
checkpointer commits through the event loop, so a synchronous write here, on the loop's thread,
would wait for a lock that only the blocked loop can release.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Concatenate, Literal, ParamSpec, TypedDict, TypeVar, cast

import sqlite_utils

from ai_agent.context import JournalEntry
from ai_agent.errors import StoreError, ThreadBusyError
from ai_agent.state import ToolCall, ToolResult

__all__ = ["SCHEMA_VERSION", "Lease", "RunRecord", "RunStore"]

SCHEMA_VERSION = 1
DEFAULT_LEASE_SECONDS = 300.0

_DDL = """
CREATE TABLE IF NOT EXISTS agent_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS agent_runs (
    thread_id TEXT PRIMARY KEY,
    task TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    final_text TEXT,
    gate TEXT,
    error TEXT,
    parent_thread_id TEXT
);
CREATE INDEX IF NOT EXISTS agent_runs_updated ON agent_runs (updated_at);
CREATE TABLE IF NOT EXISTS agent_leases (
    thread_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    acquired_at REAL NOT NULL,
    expires_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS agent_journal (
    thread_id TEXT NOT NULL,
    iteration INTEGER NOT NULL,
    call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    args TEXT NOT NULL,
    status TEXT NOT NULL,
    result TEXT,
    intent_at REAL NOT NULL,
    outcome_at REAL,
    PRIMARY KEY (thread_id, iteration, call_id)
);
"""


P = ParamSpec("P")
R = TypeVar("R")


def _threaded(
    fn: Callable[Concatenate[RunStore, P], R],
) -> Callable[Concatenate[RunStore, P], Coroutine[Any, Any, R]]:
    """Run a blocking store method on a worker thread, keeping the event loop free."""

    async def run(store: RunStore, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(fn, store, *args, **kwargs)

    run.__name__, run.__qualname__, run.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    return run


class RunRecord(TypedDict):
    """One run as the store knows it."""

    thread_id: str
    task: str
    status: str
    created_at: float
    updated_at: float
    final_text: str | None
    gate: dict[str, Any] | None
    error: str | None
    parent_thread_id: str | None


@dataclass(frozen=True, slots=True)
class Lease:
    """Proof that this process may work on a thread until ``expires_at``."""

    thread_id: str
    owner: str
    expires_at: float


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - someone else's live process
        return True
    try:  # a zombie has exited; only its parent has not reaped it yet
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):  # pragma: no cover - no procfs
        return True
    return state != "Z"


class RunStore:
    """Runs, leases and the journal, in SQLite (through sqlite-utils).

    Args:
        path: The database file (the checkpoint database; created if missing).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = sqlite3.connect(
                self.path, timeout=30, check_same_thread=False, isolation_level=None
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(_DDL)
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"cannot open the run store at {self.path}: {exc}. "
                "Is it a SQLite database written by ai-agent?"
            ) from None
        self._conn = conn
        self.db = sqlite_utils.Database(conn)
        self._lock = threading.Lock()
        self._check_version()

    def _check_version(self) -> None:
        row = self._conn.execute(
            "SELECT value FROM agent_meta WHERE key = 'schema_version'"
        ).fetchone()
        if row is None:
            self._conn.execute(
                "INSERT OR IGNORE INTO agent_meta VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )
        elif int(row[0]) > SCHEMA_VERSION:
            raise StoreError(
                f"the run store at {self.path} has schema version {row[0]}, newer than this "
                f"ai-agent understands ({SCHEMA_VERSION}); upgrade ai-agent"
            )

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

    # Runs ------------------------------------------------------------------------------------
    @_threaded
    def create_run(self, thread_id: str, task: str, *, parent_thread_id: str | None = None) -> None:
        """Record a new run as running."""
        now = time.time()
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO agent_runs (thread_id, task, status, created_at, updated_at, "
                "parent_thread_id) VALUES (?, ?, 'running', ?, ?, ?)",
                (thread_id, task, now, now, parent_thread_id),
            )

    @_threaded
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
                "UPDATE agent_runs SET status = ?, final_text = ?, gate = ?, error = ?, "
                "updated_at = ? WHERE thread_id = ?",
                (
                    status,
                    final_text,
                    json.dumps(gate) if gate else None,
                    error,
                    time.time(),
                    thread_id,
                ),
            )

    @_threaded
    def get_run(self, thread_id: str) -> RunRecord | None:
        """The run with this thread id, or None."""
        with self._lock:
            cur = self._conn.execute("SELECT * FROM agent_runs WHERE thread_id = ?", (thread_id,))
            row = cur.fetchone()
            names = [d[0] for d in cur.description]
        return _run(dict(zip(names, row, strict=True))) if row else None

    @_threaded
    def list_runs(self, *, limit: int = 50, status: str | None = None) -> list[RunRecord]:
        """Runs, most recently updated first."""
        where, params = ("WHERE status = ?", [status]) if status else ("", [])
        with self._lock:
            rows = list(
                self.db.query(
                    f"SELECT * FROM agent_runs {where} ORDER BY updated_at DESC LIMIT ?",  # noqa: S608 - fixed text
                    [*params, limit],
                )
            )
        return [_run(r) for r in rows]

    # Leases ----------------------------------------------------------------------------------
    @_threaded
    def acquire(self, thread_id: str, *, seconds: float = DEFAULT_LEASE_SECONDS) -> Lease:
        """Take the thread's lease, or raise ThreadBusyError when another live process holds it."""
        now, host, pid = time.time(), socket.gethostname(), os.getpid()
        lease = Lease(thread_id, uuid.uuid4().hex, now + seconds)
        with self._tx() as conn:
            row = conn.execute(
                "SELECT host, pid, expires_at FROM agent_leases WHERE thread_id = ?", (thread_id,)
            ).fetchone()
            if row is not None and row[2] > now and (row[0] != host or _pid_alive(row[1])):
                where = f"process {row[1]} on {row[0]}"
                raise ThreadBusyError(
                    f"thread {thread_id} is being worked on by {where}; wait for it to finish "
                    f"(its lease runs out in {row[2] - now:.0f}s if that process is gone)"
                )
            conn.execute(
                "INSERT OR REPLACE INTO agent_leases VALUES (?, ?, ?, ?, ?, ?)",
                (thread_id, lease.owner, host, pid, now, lease.expires_at),
            )
        return lease

    @_threaded
    def renew(self, lease: Lease, *, seconds: float = DEFAULT_LEASE_SECONDS) -> Lease:
        """Extend a lease this process holds."""
        renewed = Lease(lease.thread_id, lease.owner, time.time() + seconds)
        with self._tx() as conn:
            conn.execute(
                "UPDATE agent_leases SET expires_at = ? WHERE thread_id = ? AND owner = ?",
                (renewed.expires_at, lease.thread_id, lease.owner),
            )
        return renewed

    @_threaded
    def release(self, lease: Lease) -> None:
        """Give the lease back (only if this holder still has it)."""
        with self._tx() as conn:
            conn.execute(
                "DELETE FROM agent_leases WHERE thread_id = ? AND owner = ?",
                (lease.thread_id, lease.owner),
            )

    # Journal (the Journal protocol) ----------------------------------------------------------
    @_threaded
    def lookup(self, thread_id: str, iteration: int, call_id: str) -> JournalEntry | None:
        """The journal entry of one call, or None when it was never started."""
        with self._lock:
            row = self._conn.execute(
                "SELECT tool, status, result FROM agent_journal "
                "WHERE thread_id = ? AND iteration = ? AND call_id = ?",
                (thread_id, iteration, call_id),
            ).fetchone()
        if row is None:
            return None
        status: Literal["intent", "done"] = "done" if row[1] == "done" else "intent"
        result = json.loads(row[2]) if row[2] else None
        return JournalEntry(call_id=call_id, tool=row[0], status=status, result=result)

    @_threaded
    def intent(self, thread_id: str, iteration: int, call: ToolCall) -> None:
        """Record that a call is about to run (committed before the tool starts)."""
        with self._tx() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO agent_journal (thread_id, iteration, call_id, tool, args, "
                "status, intent_at) VALUES (?, ?, ?, ?, ?, 'intent', ?)",
                (
                    thread_id,
                    iteration,
                    call["id"],
                    call["name"],
                    json.dumps(call["args"], sort_keys=True, default=str),
                    time.time(),
                ),
            )

    @_threaded
    def outcome(self, thread_id: str, iteration: int, call: ToolCall, result: ToolResult) -> None:
        """Record a call's result."""
        with self._tx() as conn:
            conn.execute(
                "UPDATE agent_journal SET status = 'done', result = ?, outcome_at = ? "
                "WHERE thread_id = ? AND iteration = ? AND call_id = ?",
                (json.dumps(result, default=str), time.time(), thread_id, iteration, call["id"]),
            )


def _run(row: dict[str, Any]) -> RunRecord:
    row["gate"] = json.loads(row["gate"]) if row.get("gate") else None
    return cast(RunRecord, row)
