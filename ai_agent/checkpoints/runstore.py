"""The run store: runs, per-thread leases and the act journal, beside the checkpoints.

Checkpoints say where a run *is*; the run store says what it *is about* (task, status, final text,
the pending gate), who is working on it right now (leases), which tool calls were started and
finished and what they returned (the journal: the one record of a call's outcome, which the
recorded calls name) and the full text of tool outputs that were clipped before reaching the
model (outputs). It lives in the same database as the checkpoints, in its own tables, so one
file (or one PostgreSQL database) holds a whole run.

Leases make a resume safe across processes: acquiring one is a single transaction that inserts
the lease or takes over one that has run out, so of two processes resuming one thread exactly one
wins; the other gets ThreadBusyError. A lease whose owner process is gone (same host, pid dead)
or whose time ran out can be taken over, so a crash never locks a thread forever.

The recorded calls, plan queue, rules and pinned MCP tools (``recorded``, ``plans``, ``rules``,
``pins``) are part of it, and its schema has a version and migrations (``schema``). All of it is
written once, in `SqlRunStore`, over the database seam of ``_sql``: `RunStore` runs it on SQLite,
``ai_agent.checkpoints.postgres.PostgresRunStore`` on PostgreSQL, and both provide
``ai_agent.checkpoints.store.RunStoreProtocol``.

Every public method is async and does its database work on a worker thread. For SQLite that is
not style: the checkpointer commits through the event loop, so a synchronous write here, on the
loop's thread, could wait for a lock that only the blocked loop can release. The journal's
entries are the exception (``_sql.quick``): on SQLite they run on the loop's thread when nothing
can make them wait, and on a worker thread otherwise.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict, cast

from ai_agent.checkpoints._rows import checked_run, corrupt_row, stored_json, stored_text
from ai_agent.checkpoints._sql import Session, page, quick, threaded
from ai_agent.checkpoints._sqlite import SqliteDatabase, full_disk_raises, is_busy, locked_too_long
from ai_agent.checkpoints.fencing import lease_lost
from ai_agent.checkpoints.pins import PinStore
from ai_agent.checkpoints.plans import FinishedPlan, PlanQueue
from ai_agent.checkpoints.recorded import RecordedCalls
from ai_agent.checkpoints.rules import RuleStore
from ai_agent.checkpoints.schema import SCHEMA_VERSION, ensure_schema
from ai_agent.checkpoints.summaries import RunSummaries, RunSummary, write_summary
from ai_agent.errors import CorruptRunError, RunError, StoreError, ThreadBusyError
from ai_agent.state import ToolCall, ToolResult

if TYPE_CHECKING:
    from ai_agent.journal import JournalEntry

__all__ = [
    "SCHEMA_VERSION",
    "Lease",
    "OutputRecord",
    "RunOrigin",
    "RunRecord",
    "RunStore",
    "RunSummary",
    "SqlRunStore",
]

RunOrigin = Literal["run", "fork", "replay", "child"]


def _warn(exc: Exception) -> None:
    """Log a damaged row the store reads past, on the ``ai_agent.store`` logger.

    The logging machinery is imported here, when a row is damaged: listing runs (the command
    line's ``runs``) must not load it to read sound rows.
    """
    from ai_agent.observability.logs import engine_logger

    engine_logger("ai_agent.store").warning("%s", exc)


DEFAULT_LEASE_SECONDS = 300.0
_NEVER = 1e300  # past any time a lease can run out at: an expiry beyond it is no time at all


class RunRecord(TypedDict):
    """One run as the store knows it.

    A value of a damaged row that is not of its type (a time or a cycle edited by hand to text)
    reads as None, unknown, and ``error`` says which and why (`_run`).
    """

    thread_id: str
    task: str
    status: str
    created_at: float | None
    updated_at: float | None
    final_text: str | None
    gate: dict[str, Any] | None
    error: str | None
    parent_thread_id: str | None
    origin: RunOrigin
    fork_checkpoint_id: str | None
    parent_iteration: int | None
    parent_call_id: str | None


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
    if not isinstance(pid, int) or pid <= 0:  # edited by hand (kill reads 0, -1 as groups)
        return False
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


class SqlRunStore(RecordedCalls, PlanQueue, RunSummaries, RuleStore, PinStore):
    """Runs, leases, journal, recorded calls, plans, summaries, rules and pins, over a `Database`.

    The logic of both backends: `RunStore` opens it on a SQLite file, ``PostgresRunStore`` on a
    PostgreSQL database. Every method but ``close`` is async and does its database work on a
    worker thread.

    Leases expire by the database's clock (``Session.now``). A lease held under this store's
    ``host`` name by a pid that is gone is taken over at once, with a compare-and-set on its
    owner so two takers cannot both win; a lease held under another name is only taken over when
    it expires (a pid means nothing on another machine).
    """

    host: str
    migrated_from: int | None
    lease_seconds: float = DEFAULT_LEASE_SECONDS
    """How long a lease lasts unless renewed (the Agent sets its ``lease_seconds`` setting)."""

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
        parent_iteration: int | None = None,
        parent_call_id: str | None = None,
    ) -> None:
        """Record a new run (by default as running).

        A child run (``origin="child"``, a subagent's) names its parent (``parent_thread_id``)
        and the parent's step that spawned it: its cycle (``parent_iteration``) and the engine
        id of the tool call that delegated to it (``parent_call_id``).

        Raises:
            RunError: a run with this thread id exists (another process may have created it
                a moment ago: of two processes starting one new thread, one gets this).
        """
        now = time.time()
        try:
            with self._tx() as session:
                session.execute(
                    "INSERT INTO agent_runs (thread_id, task, status, created_at, updated_at, "
                    "parent_thread_id, origin, fork_checkpoint_id, parent_iteration, "
                    "parent_call_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        thread_id,
                        task,
                        status,
                        now,
                        now,
                        parent_thread_id,
                        origin,
                        fork_checkpoint_id,
                        parent_iteration,
                        parent_call_id,
                    ),
                )
        except self._db.unique_violation:
            raise RunError(
                f"thread {thread_id} already exists; resume it instead of running it"
            ) from None

    @threaded
    def update_run(
        self,
        thread_id: str,
        *,
        status: str,
        final_text: str | None = None,
        gate: dict[str, Any] | None = None,
        error: str | None = None,
        summary: RunSummary | None = None,
        finishing: FinishedPlan | None = None,
    ) -> None:
        """Set a run's status and outcome, and what a list of runs shows about it (``summary``).

        The summary is written in the same transaction and belongs to this version of the row
        (``ai_agent.checkpoints.summaries``); an update without one leaves the run to be read
        from its checkpoint. So is the plan ``finishing`` names, recorded as done (a plan of
        this thread that its worker still holds claimed).
        """
        now = time.time()
        with self._tx() as session:
            self._fence(session, thread_id)
            session.execute(
                "UPDATE agent_runs SET status = ?, final_text = ?, gate = ?, error = ?, "
                "updated_at = ? WHERE thread_id = ?",
                (status, final_text, json.dumps(gate) if gate else None, error, now, thread_id),
            )
            if summary is not None:
                write_summary(session, thread_id, now, summary)
            if finishing is not None:
                session.execute(
                    "UPDATE agent_plans SET status = 'done', outcome = ?, error = ?, "
                    "finished_at = ? WHERE id = ? AND thread_id = ? AND status = 'claimed'",
                    (status, finishing.error, now, finishing.plan_id, thread_id),
                )

    @threaded
    def get_run(self, thread_id: str) -> RunRecord | None:
        """The run with this thread id, or None."""
        row = self._one(
            f"SELECT {_RUN_COLUMNS} FROM agent_runs WHERE thread_id = ?",  # noqa: S608 - fixed text
            (thread_id,),
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
        """Runs, most recently updated first (all of them with ``limit=None``).

        Args:
            limit: At most this many.
            status: Only runs with this status.
            parent_thread_id: Only forks, replays and children of this run.
        """
        select = f"SELECT {_RUN_COLUMNS} FROM agent_runs"  # noqa: S608 - fixed text
        rows = self._all(
            *page(
                select,
                order="updated_at DESC",
                limit=limit,
                status=status,
                parent_thread_id=parent_thread_id,
            )
        )
        return [_run(r) for r in rows]

    # Leases ----------------------------------------------------------------------------------
    @threaded
    def acquire(self, thread_id: str, *, seconds: float | None = None) -> Lease:
        """Take the thread's lease, or raise ThreadBusyError when another live process holds it.

        It lasts ``seconds`` (default: ``lease_seconds``) unless renewed.
        """
        seconds = self.lease_seconds if seconds is None else seconds
        import uuid  # a lease's token; reading runs never takes a lease

        owner, pid = uuid.uuid4().hex, os.getpid()
        with self._tx() as session:
            now = session.now
            # Insert, or take over a lease that has run out; either way the row is now locked
            # until this transaction ends (SQLite: the whole file, by BEGIN IMMEDIATE).
            session.execute(
                "INSERT INTO agent_leases (thread_id, owner, host, pid, acquired_at, expires_at) "  # noqa: S608 - fixed text
                f"VALUES (?, ?, ?, ?, {now}, {now} + ?) ON CONFLICT (thread_id) DO UPDATE SET "
                "owner = excluded.owner, host = excluded.host, pid = excluded.pid, "
                "acquired_at = excluded.acquired_at, expires_at = excluded.expires_at "
                # An expiry that is no time (NaN, infinity, text, NULL: edited by hand) has run
                # out (NOT of NULL is NULL: a NULL expiry held the lease for ever).
                f"WHERE (agent_leases.expires_at > excluded.acquired_at "
                f"AND agent_leases.expires_at < {_NEVER}) IS NOT TRUE",
                (thread_id, owner, self.host, pid, seconds),
            )
            held = _lease_row(session, thread_id)
            # A live lease by the clock. Its holder may still be gone: on this host we can tell.
            if held[0] != owner and held[1] == self.host and not pid_alive(held[2]):
                session.execute(
                    f"UPDATE agent_leases SET owner = ?, pid = ?, acquired_at = {now}, "  # noqa: S608 - fixed text
                    f"expires_at = {now} + ? WHERE thread_id = ? AND owner = ?",
                    (owner, pid, seconds, thread_id, held[0]),
                )
                held = _lease_row(session, thread_id)
        if held[0] == owner:
            self._held[thread_id] = owner
            return Lease(thread_id, owner, float(held[3]))
        raise ThreadBusyError(
            f"thread {thread_id} is being worked on by process {held[2]} on {held[1]}; wait for "
            f"it to finish (its lease runs out in {max(held[4], 0):.0f}s if that process is gone)"
        )

    @threaded
    def renew(self, lease: Lease, *, seconds: float | None = None) -> Lease:
        """Extend a lease this process holds.

        Raises:
            LeaseLostError: the lease ran out and another process took the thread over (or
                released it): it is not this holder's to extend any more.
        """
        seconds = self.lease_seconds if seconds is None else seconds
        with self._tx() as session:
            session.execute(
                f"UPDATE agent_leases SET expires_at = {session.now} + ? "  # noqa: S608 - fixed text
                "WHERE thread_id = ? AND owner = ?",
                (seconds, lease.thread_id, lease.owner),
            )
            row = session.one(session.lease_row, (lease.thread_id,))
            expires = session.one(
                "SELECT expires_at FROM agent_leases WHERE thread_id = ? AND owner = ?",
                (lease.thread_id, lease.owner),
            )
        if expires is None:
            # Still listed as held: this store's writes for the thread stay fenced (and fail)
            # until the holder releases it.
            raise lease_lost(lease.thread_id, row)
        return Lease(lease.thread_id, lease.owner, float(expires[0]))

    @threaded
    def release(self, lease: Lease) -> None:
        """Give the lease back (only if this holder still has it)."""
        self._drop(lease)
        with self._tx() as session:
            session.execute(
                "DELETE FROM agent_leases WHERE thread_id = ? AND owner = ?",
                (lease.thread_id, lease.owner),
            )

    def held(self, thread_id: str) -> str | None:
        """The owner (fencing token) of this store's lease on the thread, or None."""
        return self._held.get(thread_id)

    @threaded
    def working(self, thread_id: str) -> bool:
        """Whether some process holds the thread's lease now (by any store, on any host).

        A lease that ran out, or whose holder on this host is gone, is nobody's: a run whose
        row says running but that nobody works on stopped before finishing (a crash).
        """
        with self._read() as session:
            row = session.one(
                f"SELECT host, pid, expires_at - {session.now} FROM agent_leases "  # noqa: S608 - fixed text
                "WHERE thread_id = ?",
                (thread_id,),
            )
        try:
            left, pid = float(row[2]), int(row[1])
        except (TypeError, ValueError):  # no row, or one changed by hand: nobody's run
            return False
        if not 0 < left < _NEVER:  # run out, or no time at all (NaN, infinity): as acquire
            return False
        return bool(row[0] != self.host or pid_alive(pid))

    def _drop(self, lease: Lease) -> None:
        if self._held.get(lease.thread_id) == lease.owner:
            del self._held[lease.thread_id]

    # Journal (the Journal protocol) ----------------------------------------------------------
    @quick
    def lookup(self, thread_id: str, iteration: int, call_id: str) -> JournalEntry | None:
        """The journal entry of one call, or None when it was never started."""
        row = self._one(
            "SELECT tool, status, result, intent_at FROM agent_journal "
            "WHERE thread_id = ? AND iteration = ? AND call_id = ?",
            (thread_id, iteration, call_id),
        )
        if row is None:
            return None
        status: Literal["intent", "done"] = "done" if row[1] == "done" else "intent"
        try:
            result = _journal_result(row[2], thread_id, iteration, call_id, done=status == "done")
        except CorruptRunError as exc:
            # An outcome that cannot be read is an unknown outcome: the call is never re-run
            # silently, a side-effecting one goes to the gate (UNKNOWN_OUTCOME) for a person.
            _warn(exc)
            status, result = "intent", None
        entry: JournalEntry = {
            "call_id": call_id,
            "tool": row[0],
            "status": status,
            "result": result,
            "attempt": float(row[3]),
        }
        return entry

    @quick
    def intent(self, thread_id: str, iteration: int, call: ToolCall) -> None:
        """Record that a call is about to run (committed before the tool starts)."""
        with self._tx() as session:
            # A re-run after a crash replaces the entry whole: no result of an earlier attempt.
            self._fence(session, thread_id)
            session.execute(
                "INSERT INTO agent_journal (thread_id, iteration, call_id, tool, args, status, "
                "intent_at) VALUES (?, ?, ?, ?, ?, 'intent', ?) "
                "ON CONFLICT (thread_id, iteration, call_id) DO UPDATE SET tool = excluded.tool, "
                "args = excluded.args, status = 'intent', result = NULL, "
                "intent_at = excluded.intent_at, outcome_at = NULL",
                (
                    thread_id,
                    iteration,
                    call["id"],
                    call["name"],
                    json.dumps(call["args"], sort_keys=True, default=str),
                    time.time(),
                ),
            )

    @quick
    def outcome(self, thread_id: str, iteration: int, call: ToolCall, result: ToolResult) -> None:
        """Record a call's result."""
        with self._tx() as session:
            self._fence(session, thread_id)
            session.execute(
                "UPDATE agent_journal SET status = 'done', result = ?, outcome_at = ? "
                "WHERE thread_id = ? AND iteration = ? AND call_id = ?",
                (json.dumps(result, default=str), time.time(), thread_id, iteration, call["id"]),
            )

    @quick
    def forget(self, thread_id: str, iteration: int, call_id: str) -> None:
        """Drop a journal entry whose call is known not to have run (a replay stopped at it)."""
        with self._tx() as session:
            self._fence(session, thread_id)
            session.execute(
                "DELETE FROM agent_journal WHERE thread_id = ? AND iteration = ? AND call_id = ? "
                "AND status = 'intent'",
                (thread_id, iteration, call_id),
            )

    # Maintenance -----------------------------------------------------------------------------
    @threaded
    def delete_journal(self, thread_id: str) -> int:
        """Delete a finished run's journal (a paused run needs its journal to resume safely).

        An entry a recorded call still names stays: it is that call's outcome, which the
        replays of the run's forks read (``delete_calls`` first, to delete it too).
        """
        with self._tx() as session:
            deleted = session.execute(
                "DELETE FROM agent_journal WHERE thread_id = ? AND NOT EXISTS ("
                "SELECT 1 FROM agent_tool_calls t WHERE t.thread_id = agent_journal.thread_id "
                "AND t.iteration = agent_journal.iteration AND t.call_id = agent_journal.call_id)",
                (thread_id,),
            ).rowcount
        return int(deleted)

    @threaded
    def vacuum(self) -> None:
        """Reclaim the space of deleted rows (SQLite: fold the WAL into the file, rebuild it)."""
        self._db.vacuum()

    # Outputs (the OutputStore protocol) ------------------------------------------------------
    @threaded
    def save_output(self, thread_id: str, iteration: int, call: ToolCall, text: str) -> str:
        """Keep the full text of a clipped output; returns its reference (``out-<iter>-<id>``)."""
        ref = f"out-{iteration}-{call['id']}"
        with self._tx() as session:
            self._fence(session, thread_id)
            session.execute(
                "INSERT INTO agent_outputs (thread_id, ref, iteration, call_id, tool, chars, "
                "content, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (thread_id, ref) DO UPDATE SET iteration = excluded.iteration, "
                "call_id = excluded.call_id, tool = excluded.tool, chars = excluded.chars, "
                "content = excluded.content, created_at = excluded.created_at",
                (thread_id, ref, iteration, call["id"], call["name"], len(text), text, time.time()),
            )
        return ref

    @threaded
    def get_output(self, thread_id: str, ref: str) -> OutputRecord | None:
        """A kept output by its reference, or None."""
        row = self._one(
            f"SELECT {_OUTPUT_COLUMNS} FROM agent_outputs WHERE thread_id = ? AND ref = ?",  # noqa: S608 - fixed text
            (thread_id, ref),
        )
        if row is None:
            return None
        output = dict(zip(_OUTPUT_FIELDS, row, strict=True))
        what = f"the clipped output {ref} (agent_outputs.content)"  # text bound as bytes: shown
        output["content"], problem = stored_text(output["content"], what=what, thread_id=thread_id)
        if problem is not None:
            _warn(problem)
        return cast(OutputRecord, output)

    @threaded
    def list_outputs(self, thread_id: str) -> list[str]:
        """References of the outputs kept for a run, oldest first."""
        rows = self._all(
            "SELECT ref FROM agent_outputs WHERE thread_id = ? ORDER BY created_at, ref",
            (thread_id,),
        )
        return [r[0] for r in rows]


class RunStore(SqlRunStore):
    """Runs, leases, the journal, the recorded calls and the plan queue, in SQLite.

    Opening it creates the tables, or migrates an older file to the current schema
    (``ai_agent.checkpoints.schema``). Its methods are those of `RunStoreProtocol`, written once
    for both databases in `SqlRunStore`.

    Args:
        path: The database file (the checkpoint database; created if missing).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.host = socket.gethostname()
        try:
            with full_disk_raises(self.path):
                db = SqliteDatabase(self.path)
                try:
                    self.migrated_from = ensure_schema(db.conn, self.path)
                except BaseException:
                    db.close()
                    raise
        except sqlite3.DatabaseError as exc:
            hint = (
                locked_too_long()
                if is_busy(exc)
                else "Is it a SQLite database written by ai-agent?"
            )
            raise StoreError(f"cannot open the run store at {self.path}: {exc}. {hint}") from None
        self._db = db


# The records' fields, in the order they are selected: each is a column of the same name.
_RUN_FIELDS = tuple(RunRecord.__annotations__)
_RUN_COLUMNS = ", ".join(_RUN_FIELDS)
_OUTPUT_FIELDS = tuple(OutputRecord.__annotations__)
_OUTPUT_COLUMNS = ", ".join(_OUTPUT_FIELDS)


def _run(row: Sequence[Any]) -> RunRecord:
    """A run row; a value that cannot be read is None, logged, and named in its ``error``."""
    run = dict(zip(_RUN_FIELDS, row, strict=True))
    for problem in checked_run(run):
        # Listing and showing runs must go on: the record says what is wrong instead.
        _warn(problem)
        run["error"] = f"{run['error']}; {problem}" if run["error"] else str(problem)
    return cast(RunRecord, run)


def _journal_result(
    text: str | None, thread_id: str, iteration: int, call_id: str, *, done: bool
) -> ToolResult | None:
    """A journal entry's result: None for an intent, a checked ToolResult for an outcome."""
    what = f"the journal entry of call {call_id} (iteration {iteration})"
    hint = "its call's outcome counts as unknown, so the gate asks a person before it runs again"
    result = stored_json(text, what=what, thread_id=thread_id, hint=hint, optional=not done)
    if result is not None and not isinstance(result.get("status"), str):
        raise corrupt_row(what, thread_id, "its result has no status", hint)
    return cast(ToolResult | None, result)


def _lease_row(session: Session, thread_id: str) -> Any:
    """The thread's lease: owner, host, pid, expires_at, and the seconds it has left."""
    row = session.one(
        "SELECT owner, host, pid, expires_at, "  # noqa: S608 - fixed text
        f"expires_at - {session.now} FROM agent_leases WHERE thread_id = ?",
        (thread_id,),
    )
    if row is None:  # pragma: no cover - the caller's transaction wrote it and holds its lock
        raise StoreError(f"the lease of thread {thread_id} vanished while being read")
    return row
