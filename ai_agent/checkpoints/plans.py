"""The plan queue: plans that arrived for paused runs, waiting for a worker to resume them.

A person answers a paused run without keeping a process waiting: ``Agent.submit_plan`` (or
``ai-agent resume THREAD --plan ... --queue``) checks the plan against the pending gate and adds
it here as ``queued``. A worker (``ai-agent worker``) takes the thread's lease, then claims the
plan (``queued`` -> ``claimed``, a compare-and-set, so one worker wins), resumes the run with it
and records how that went (``done`` with the run's new status, or ``failed`` with the reason: the
run then stays paused).

A plan remembers the checkpoint of the gate it answers (``gate_checkpoint_id``), and carries that
gate's token (``plan["gate_token"]``, from the gate report): if the run has moved on by the time a
worker gets to it (someone resumed it directly), the plan is not applied to a different question,
and a row whose token is not the paused gate's (written into the table by anything but
``submit_plan``) is not applied at all. Both are ``refused``, with the reason.

At most one plan per thread is open (queued or claimed) at a time: a unique index says so, so two
people answering one gate cannot both be queued.

Statuses: ``queued`` -> ``claimed`` -> ``done`` | ``failed`` | ``refused``. A ``claimed`` plan
whose thread's lease is free again lost its worker (a crash); the next worker reclaims it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any, Literal, NamedTuple, TypedDict, TypeVar

from ai_agent.checkpoints._rows import corrupt_row, stored_json
from ai_agent.checkpoints._sql import Session, SqlStore, page, threaded
from ai_agent.errors import CorruptRunError, RunError

__all__ = [
    "PLAN_COLUMNS",
    "FinishedPlan",
    "PlanQueue",
    "PlanRecord",
    "PlanStatus",
    "already_queued",
    "plan_record",
]

T = TypeVar("T", int, float)

PlanStatus = Literal["queued", "claimed", "done", "failed", "refused"]

PLAN_COLUMNS = (
    "id, thread_id, plan, status, gate_checkpoint_id, submitted_at, claimed_by, claimed_at, "
    "attempts, finished_at, outcome, error"
)


class FinishedPlan(NamedTuple):
    """A plan recorded as applied in the same transaction as its run's outcome (`update_run`).

    A worker killed between the two writes left the run recorded and the plan claimed, and the
    worker that reclaimed the plan could not tell that from a run someone else had resumed by
    hand (seen 9 times in a 10,000-run drain with 388 kills: those plans were marked failed).
    """

    plan_id: int
    error: str | None = None
    """The error recorded with the plan (the run's outcome is the run's new status)."""


class PlanRecord(TypedDict):
    """One plan in the queue.

    ``outcome`` is the run's status after the worker resumed it (completed, paused, failed,
    cancelled); ``error`` says why a plan failed or was refused, or how the run failed.
    """

    id: int
    thread_id: str
    plan: dict[str, Any]
    status: PlanStatus
    gate_checkpoint_id: str | None
    submitted_at: float
    claimed_by: str | None
    claimed_at: float | None
    attempts: int
    finished_at: float | None
    outcome: str | None
    error: str | None


def plan_record(row: Sequence[Any]) -> PlanRecord:
    """A PlanRecord from a row of `PLAN_COLUMNS`.

    Raises:
        CorruptRunError: the stored plan, or one of the row's numbers, cannot be read back.
    """
    thread_id = str(row[1])
    hint = (
        f"it is not applied; queue the plan again (`ai-agent resume {thread_id} --plan ... "
        "--queue`)"
    )
    what = f"plan {row[0]} in the queue"
    return PlanRecord(
        id=int(row[0]),
        thread_id=row[1],
        plan=stored_json(row[2], what=what, thread_id=thread_id, hint=hint, strict=True),
        status=row[3],
        gate_checkpoint_id=row[4],
        submitted_at=_number(row[5], float, what, "submitted_at", thread_id, hint),
        claimed_by=row[6],
        claimed_at=None
        if row[7] is None
        else _number(row[7], float, what, "claimed_at", thread_id, hint),
        attempts=_number(row[8], int, what, "attempts", thread_id, hint),
        finished_at=None
        if row[9] is None
        else _number(row[9], float, what, "finished_at", thread_id, hint),
        outcome=row[10],
        error=row[11],
    )


def _number(value: Any, kind: type[T], what: str, column: str, thread_id: str, hint: str) -> T:
    """A number column's value; SQLite keeps text written into one as text."""
    number = _as_number(value, kind)
    if number is None:
        reason = f"its {column} is not a number ({str(value)[:40]!r})"
        raise corrupt_row(what, thread_id, reason, hint)
    return number


def _as_number(value: Any, kind: type[T]) -> T | None:
    """``value`` read as ``kind``, or None when it does not read as one."""
    try:
        return kind(value)
    except (TypeError, ValueError, OverflowError):
        return None


# The number columns of PLAN_COLUMNS, by position, and what a damaged one reads as in the record
# of a failed plan: submitted_at, claimed_at, attempts, finished_at.
_NUMBERS: dict[int, tuple[type[int] | type[float], float | None]] = {
    5: (float, 0.0),
    7: (float, None),
    8: (int, 0),
    9: (float, None),
}


def already_queued(thread_id: str, plan_id: int | None) -> RunError:
    """The error for a second open plan on one thread."""
    which = f" (plan {plan_id})" if plan_id is not None else ""
    return RunError(
        f"a plan for thread {thread_id} is already queued{which}; wait for a worker to take it "
        "(`ai-agent plans` lists the queue)"
    )


class PlanQueue(SqlStore):
    """The plan-queue part of the run store (see the module docstring)."""

    @threaded
    def submit_plan(
        self, thread_id: str, plan: dict[str, Any], *, gate_checkpoint_id: str | None
    ) -> PlanRecord:
        """Queue a plan for a paused run.

        Raises:
            RunError: a plan for this thread is already queued or being applied.
        """
        try:
            with self._tx() as session:
                plan_id = session.insert(
                    "INSERT INTO agent_plans (thread_id, plan, status, gate_checkpoint_id, "
                    "submitted_at, attempts) VALUES (?, ?, 'queued', ?, ?, 0)",
                    (thread_id, json.dumps(plan, sort_keys=True), gate_checkpoint_id, time.time()),
                    key="id",
                )
                row = session.one(
                    f"SELECT {PLAN_COLUMNS} FROM agent_plans WHERE id = ?",  # noqa: S608 - fixed text
                    (plan_id,),
                )
        except self._db.unique_violation:
            open_row = self._one(
                "SELECT id FROM agent_plans WHERE thread_id = ? "
                "AND status IN ('queued', 'claimed')",
                (thread_id,),
            )
            raise already_queued(thread_id, open_row[0] if open_row else None) from None
        return plan_record(row)

    def _fence_plan(self, session: Session, plan_id: int) -> None:
        """Fence a write of a plan by its thread's lease (a worker holds it while it serves)."""
        row = session.one("SELECT thread_id FROM agent_plans WHERE id = ?", (plan_id,))
        if row is not None:
            self._fence(session, str(row[0]))

    @threaded
    def get_plan(self, plan_id: int) -> PlanRecord | None:
        """The plan with this id, or None."""
        row = self._one(
            f"SELECT {PLAN_COLUMNS} FROM agent_plans WHERE id = ?",  # noqa: S608 - fixed text
            (plan_id,),
        )
        return self._plan_of(row) if row else None

    @threaded
    def list_plans(
        self, *, status: str | None = None, thread_id: str | None = None, limit: int | None = 50
    ) -> list[PlanRecord]:
        """Plans, oldest first (the order workers take them in)."""
        select = f"SELECT {PLAN_COLUMNS} FROM agent_plans"  # noqa: S608 - fixed text
        rows = self._all(*page(select, order="id", limit=limit, status=status, thread_id=thread_id))
        return [self._plan_of(r) for r in rows]

    def _plan_of(self, row: Sequence[Any]) -> PlanRecord:
        """A row as a record; an unreadable plan is failed, so the queue goes on without it.

        Failing it (with the reason as its error) keeps any worker from applying it, shows in
        ``ai-agent plans`` what happened, and frees its thread for a plan queued again.
        """
        try:
            return plan_record(row)
        except CorruptRunError as exc:
            error = str(exc)
        with self._tx() as session:
            session.execute(
                "UPDATE agent_plans SET status = 'failed', error = ?, finished_at = ? "
                "WHERE id = ? AND status IN ('queued', 'claimed')",
                (error, time.time(), row[0]),
            )
            fresh = session.one(
                f"SELECT {PLAN_COLUMNS} FROM agent_plans WHERE id = ?",  # noqa: S608 - fixed text
                (row[0],),
            )
        values = list(fresh or row)
        values[2] = "{}"  # the plan itself is unreadable: the record carries the error instead
        for column, (kind, readable) in _NUMBERS.items():  # and so may a number be
            if values[column] is not None and _as_number(values[column], kind) is None:
                values[column] = readable
        return plan_record(values)

    @threaded
    def claim_plan(self, plan_id: int, worker: str, *, reclaim: bool = False) -> bool:
        """Mark a queued plan as taken by ``worker``; False when it is no longer queued.

        With ``reclaim``, a plan already ``claimed`` (by a worker that died) is taken over too.
        """
        wanted = "('queued', 'claimed')" if reclaim else "('queued')"
        with self._tx() as session:
            self._fence_plan(session, plan_id)
            claimed = session.execute(
                "UPDATE agent_plans SET status = 'claimed', claimed_by = ?, claimed_at = ?, "  # noqa: S608 - fixed text
                f"attempts = attempts + 1 WHERE id = ? AND status IN {wanted}",
                (worker, time.time(), plan_id),
            ).rowcount
        return claimed == 1

    @threaded
    def finish_plan(
        self, plan_id: int, *, status: str, outcome: str | None = None, error: str | None = None
    ) -> None:
        """Record how a plan went: ``done`` (with the run's status), ``failed`` or ``refused``."""
        with self._tx() as session:
            self._fence_plan(session, plan_id)
            session.execute(
                "UPDATE agent_plans SET status = ?, outcome = ?, error = ?, finished_at = ? "
                "WHERE id = ?",
                (status, outcome, error, time.time(), plan_id),
            )
