"""The run store: runs, per-thread leases and the act journal, in SQLite beside the checkpoints.

Checkpoints say where a run *is*; the run store says what it *is about* (task, status, final text,
the pending gate), who is working on it right now (leases), which tool calls were started and
finished (the journal) and the full text of tool outputs that were clipped before reaching the
model (outputs). It lives in the same database file as the checkpoints, in its own tables, so one
file holds a whole run.

Leases make a resume safe across processes: acquiring one is a single ``BEGIN IMMEDIATE``
transaction, so of two processes resuming one thread exactly one wins; the other gets
ThreadBusyError. A lease whose owner process is gone (same host, pid dead) or whose time ran out
can be taken over, so a crash never locks a thread forever.

The recorded model and tool calls (``ai_agent.checkpoints.recorded``) and the plan queue
(``ai_agent.checkpoints.plans``) are part of the store too, and the schema carries a version with
a migration path (``ai_agent.checkpoints.schema``). ``ai_agent.checkpoints.postgres`` has the same
store on PostgreSQL; both provide ``ai_agent.checkpoints.store.RunStoreProtocol``.

Every public method is async and does its SQLite work on a worker thread. That is not style: the
checkpointer commits through the event loop, so a synchronous write here, on the loop's thread,
would wait for a lock that only the blocked loop can release.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypedDict, cast

from ai_agent.checkpoints._sqlite import threaded
from ai_agent.checkpoints.plans import PlanQueue
from ai_agent.checkpoints.recorded import RecordedCalls
from ai_agent.checkpoints.schema import SCHEMA_VERSION, ensure_schema
from ai_agent.context import JournalEntry
from ai_agent.errors import StoreError, ThreadBusyError
from ai_agent.state import ToolCall, ToolResult

__all__ = ["SCHEMA_VERSION", "Lease", "OutputRecord", "RunOrigin", "RunRecord", "RunStore"]

RunOrigin = Literal["run", "fork", "replay"]

DEFAULT_LEASE_SECONDS = 300.0


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
    origin: RunOrigin
    fork_checkpoint_id: str | None


class OutputRecord(TypedDict):
    """The full text of one clipped tool output."""

    ref: str
    iteration: int
    call_id: str
    tool: str
    chars: int
    content: str
    created_at: float


@dataclass(frozen=True, slots=True)
class Lease:
    """Proof that this process may work on a thread until ``expires_at``."""

    thread_id: str
    owner: str
    expires_at: float


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid runs on this host (a zombie counts as gone)."""
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


class RunStore(RecordedCalls, PlanQueue):
    """Runs, leases, the journal, the recorded calls and the plan queue, in SQLite.

    Opening it creates the tables, or migrates an older file to the current schema
    (``ai_agent.checkpoints.schema``).

    Args:
        path: The database file (the checkpoint database; created if missing).
    """

    def __init__(self, path: str | Path) -> None:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = self._connect(target)
            self.migrated_from = ensure_schema(conn, target)
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"cannot open the run store at {target}: {exc}. "
                "Is it a SQLite database written by ai-agent?"
            ) from None
        import sqlite_utils  # on first use: importing it costs more than the rest of ai_agent

        self.db = sqlite_utils.Database(conn)

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
                "parent_thread_id, origin, fork_checkpoint_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
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

    @threaded
    def get_run(self, thread_id: str) -> RunRecord | None:
        """The run with this thread id, or None."""
        with self._read() as conn:
            cur = conn.execute("SELECT * FROM agent_runs WHERE thread_id = ?", (thread_id,))
            row = cur.fetchone()
            names = [d[0] for d in cur.description]
        return _run(dict(zip(names, row, strict=True))) if row else None

    @threaded
    def list_runs(
        self,
        *,
        limit: int | None = 50,
        status: str | None = None,
        parent_thread_id: str | None = None,
    ) -> list[RunRecord]:
        """Runs, most recently updated first (all of them with ``limit=None``).

        Args:
            limit: At most this many.
            status: Only runs with this status.
            parent_thread_id: Only forks and replays of this run.
        """
        clauses, params = [], []
        if status:
            clauses.append("status = ?")
            params.append(status)
        if parent_thread_id:
            clauses.append("parent_thread_id = ?")
            params.append(parent_thread_id)
        where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
        with self._read():
            rows = list(
                self.db.query(
                    f"SELECT * FROM agent_runs {where} ORDER BY updated_at DESC LIMIT ?",  # noqa: S608 - fixed text
                    [*params, -1 if limit is None else limit],
                )
            )
        return [_run(r) for r in rows]

    # Leases ----------------------------------------------------------------------------------
    @threaded
    def acquire(self, thread_id: str, *, seconds: float = DEFAULT_LEASE_SECONDS) -> Lease:
        """Take the thread's lease, or raise ThreadBusyError when another live process holds it."""
        now, host, pid = time.time(), socket.gethostname(), os.getpid()
        lease = Lease(thread_id, uuid.uuid4().hex, now + seconds)
        with self._tx() as conn:
            row = conn.execute(
                "SELECT host, pid, expires_at FROM agent_leases WHERE thread_id = ?", (thread_id,)
            ).fetchone()
            if row is not None and row[2] > now and (row[0] != host or pid_alive(row[1])):
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

    @threaded
    def renew(self, lease: Lease, *, seconds: float = DEFAULT_LEASE_SECONDS) -> Lease:
        """Extend a lease this process holds."""
        renewed = Lease(lease.thread_id, lease.owner, time.time() + seconds)
        with self._tx() as conn:
            conn.execute(
                "UPDATE agent_leases SET expires_at = ? WHERE thread_id = ? AND owner = ?",
                (renewed.expires_at, lease.thread_id, lease.owner),
            )
        return renewed

    @threaded
    def release(self, lease: Lease) -> None:
        """Give the lease back (only if this holder still has it)."""
        with self._tx() as conn:
            conn.execute(
                "DELETE FROM agent_leases WHERE thread_id = ? AND owner = ?",
                (lease.thread_id, lease.owner),
            )

    # Journal (the Journal protocol) ----------------------------------------------------------
    @threaded
    def lookup(self, thread_id: str, iteration: int, call_id: str) -> JournalEntry | None:
        """The journal entry of one call, or None when it was never started."""
        with self._read() as conn:
            row = conn.execute(
                "SELECT tool, status, result, intent_at FROM agent_journal "
                "WHERE thread_id = ? AND iteration = ? AND call_id = ?",
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

    @threaded
    def outcome(self, thread_id: str, iteration: int, call: ToolCall, result: ToolResult) -> None:
        """Record a call's result."""
        with self._tx() as conn:
            conn.execute(
                "UPDATE agent_journal SET status = 'done', result = ?, outcome_at = ? "
                "WHERE thread_id = ? AND iteration = ? AND call_id = ?",
                (json.dumps(result, default=str), time.time(), thread_id, iteration, call["id"]),
            )

    @threaded
    def forget(self, thread_id: str, iteration: int, call_id: str) -> None:
        """Drop a journal entry whose call is known not to have run (a replay stopped at it)."""
        with self._tx() as conn:
            conn.execute(
                "DELETE FROM agent_journal WHERE thread_id = ? AND iteration = ? AND call_id = ? "
                "AND status = 'intent'",
                (thread_id, iteration, call_id),
            )

    # Maintenance -----------------------------------------------------------------------------
    @threaded
    def delete_journal(self, thread_id: str) -> int:
        """Delete a finished run's journal (a paused run needs its journal to resume safely)."""
        with self._tx() as conn:
            cur = conn.execute("DELETE FROM agent_journal WHERE thread_id = ?", (thread_id,))
        return int(cur.rowcount)

    @threaded
    def vacuum(self) -> None:
        """Reclaim the space of deleted rows: fold the WAL into the file, then rebuild it."""
        with self._read() as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    # Outputs (the OutputStore protocol) ------------------------------------------------------
    @threaded
    def save_output(self, thread_id: str, iteration: int, call: ToolCall, text: str) -> str:
        """Keep the full text of a clipped output; returns its reference (``out-<iter>-<id>``)."""
        ref = f"out-{iteration}-{call['id']}"
        with self._tx() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO agent_outputs (thread_id, ref, iteration, call_id, tool, "
                "chars, content, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (thread_id, ref, iteration, call["id"], call["name"], len(text), text, time.time()),
            )
        return ref

    @threaded
    def get_output(self, thread_id: str, ref: str) -> OutputRecord | None:
        """A kept output by its reference, or None."""
        with self._read() as conn:
            row = conn.execute(
                "SELECT ref, iteration, call_id, tool, chars, content, created_at "
                "FROM agent_outputs WHERE thread_id = ? AND ref = ?",
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
        with self._read() as conn:
            rows = conn.execute(
                "SELECT ref FROM agent_outputs WHERE thread_id = ? ORDER BY created_at, ref",
                (thread_id,),
            ).fetchall()
        return [r[0] for r in rows]


def _run(row: dict[str, Any]) -> RunRecord:
    row["gate"] = json.loads(row["gate"]) if row.get("gate") else None
    row.setdefault("origin", "run")
    row.setdefault("fork_checkpoint_id", None)
    return cast(RunRecord, row)
