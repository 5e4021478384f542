"""Workers: plans arrive in a queue, and worker processes resume the runs they answer.

A paused run does not need a process waiting for its plan. A person (or a program) queues the
plan with ``Agent.submit_plan`` (``ai-agent resume THREAD --plan ... --queue``): it is
checked against the pending gate there and then, and stored in the run store's plan queue
(``ai_agent.checkpoints.plans``). Any number of `Worker` processes (``ai-agent worker``),
on any machine that reaches the database, poll the queue and serve each plan:

1. take the thread's lease (busy: another worker or a person is on it; skip it for now);
2. claim the plan (``queued`` -> ``claimed``, a compare-and-set: a plan another worker already
   finished is skipped);
3. check the plan again, with this worker's tools, against the gate as it is now: a plan without
   the paused gate's token (one that did not come through ``submit_plan``, or was queued for a
   gate the run has since left) is ``refused``, logged at WARNING with the reason; a plan that
   no longer fits (a tool this worker lacks) is marked ``failed`` with the reason; either way
   the run stays paused;
4. resume the run with it (the lease is renewed every minute while it runs);
5. record the outcome (``done`` and the run's new status), and only then give the lease back.

Because the lease is held from before the claim until after the outcome is written, a ``claimed``
plan whose thread's lease can be taken has lost its worker (a crash, a kill): the next worker
reclaims it. If the crash came after the plan was applied, the run is continued without it (the
journal turns a half-done side-effecting call into an UNKNOWN_OUTCOME issue at the gate); if it
came before, the plan is applied.

On SIGTERM a worker stops taking plans, lets the runs it is driving finish for a grace period,
then cancels them; either way every lease it holds is released on the way out.

Why the token: the queue is a table in the run store, and anything that can write to the store
(a tool's command, another program) could queue an approve-everything plan with nobody involved.
Each gate report carries a token that only a reader of the paused checkpoint can know (see
``ai_agent.nodes.gate``); ``submit_plan`` reads it from the paused checkpoint and attaches it, so
honest callers never handle it, and the worker checks it against the paused checkpoint's
interrupt value, not against anything in the plan's row.

A worker needs the same tools (and model) the runs were made with: build it the same way, from
options (``--tools``, ``--model``) or from your own factory (``ai-agent worker --app
module:factory``).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import socket
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ai_agent.checkpoints.plans import PlanRecord
from ai_agent.errors import AgentError, PlanRefusedError, RunError, StoreError, ThreadBusyError
from ai_agent.graph.database import RunDatabase, config_for
from ai_agent.graph.interrupts import waiting_node
from ai_agent.graph.queued_answers import answer_input, is_node_answer, queued_answer
from ai_agent.graph.result import RunResult
from ai_agent.observability.logs import engine_logger
from ai_agent.state import Issue

if TYPE_CHECKING:
    from langgraph.types import Command, StateSnapshot

    from ai_agent.checkpoints import RunStoreProtocol
    from ai_agent.checkpoints.runstore import Lease
    from ai_agent.graph.driving import Runner
    from ai_agent.graph.interrupts import Answer

__all__ = ["PlanOutcome", "PlanQueue", "PlanServer", "Worker", "WorkerEvent"]

WorkerEvent = dict[str, Any]

log = engine_logger("ai_agent.worker")

# How many plans a worker remembers (failures told, busy threads skipped) before it forgets
# those gone from the queue (`Worker._forget_gone`).
_REMEMBERED = 128


@dataclass(frozen=True, slots=True)
class PlanOutcome:
    """What a worker did with one plan.

    Attributes:
        plan_id: The plan.
        thread_id: Its run.
        status: ``done`` (the run was resumed with it), ``failed`` (it does not fit; see
            ``error``) or ``refused`` (its gate token is missing or not the paused gate's).
        run_status: The run's status afterwards (completed, paused, failed, cancelled), when done.
        error: Why the plan failed, or how the run failed.
        seconds: Time from claiming the plan to recording its outcome.

    Examples:
        >>> PlanOutcome(7, "order-42", "done", run_status="completed").to_dict()["run_status"]
        'completed'
    """

    plan_id: int
    thread_id: str
    status: Literal["done", "failed", "refused"]
    run_status: str | None = None
    error: str | None = None
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


class PlanServer(Protocol):
    """What a `Worker` serves plans with: an Agent (or its archive)."""

    @property
    def store(self) -> RunStoreProtocol:
        """The run store whose plan queue is served."""

    async def serve_plan(self, plan: PlanRecord, worker: str) -> PlanOutcome | None:
        """Serve one plan (see `ai_agent.graph.archive.RunArchive.serve_plan`)."""


def _checkpoint_id(snapshot: StateSnapshot) -> str | None:
    configurable = (snapshot.config or {}).get("configurable", {})
    value = configurable.get("checkpoint_id")
    return str(value) if value is not None else None


class PlanQueue:
    """The plan queue of one database, served with the Agent's runner (see the module docstring).

    Args:
        database: The run store and the checkpointer.
        runner: Gives the runner that checks plans and resumes runs (or raises RunError).
        on_drive: Told which thread a served plan resumes.
    """

    def __init__(
        self,
        database: RunDatabase,
        runner: Callable[[str], Runner],
        *,
        on_drive: Callable[[str], None],
    ) -> None:
        self.database = database
        self._runner = runner
        self._on_drive = on_drive

    async def submit(self, thread_id: str, plan: Answer) -> PlanRecord:
        """Check a plan against the paused gate and queue it with the gate's token.

        A run that waits in a node of its pipeline gets an answer instead
        (`ai_agent.graph.queued_answers`), queued with the interrupt's id.
        """
        from ai_agent.plans import read_plan  # pydantic: not for listing the queue

        runner = self._runner("queueing a plan")
        async with self.database.graph() as graph:
            snapshot = await graph.aget_state(config_for(thread_id))
        waiting = waiting_node(snapshot)
        if waiting is not None:  # a node of the run's pipeline asked: queue its answer
            row = await queued_answer(runner, thread_id, snapshot, waiting, plan)
            return await self.database.store.submit_plan(
                thread_id, row, gate_checkpoint_id=_checkpoint_id(snapshot)
            )
        parsed = read_plan(plan)
        if parsed.gate_token is None and snapshot.interrupts:
            token = snapshot.interrupts[0].value.get("token")
            parsed = parsed.model_copy(update={"gate_token": token})
        # The checks of a resume: unknown thread, nothing pending, not waiting for a plan (a
        # crashed run is resumed without one), a plan that does not fit the gate, its token.
        await runner.resume_input(thread_id, snapshot, parsed, token_required=True)
        plan_data = runner.scrub(parsed.model_dump(mode="json"))  # kept in the queue
        return await self.database.store.submit_plan(
            thread_id, plan_data, gate_checkpoint_id=_checkpoint_id(snapshot)
        )

    async def serve(self, plan: PlanRecord, worker: str) -> PlanOutcome | None:
        """Lease the plan's thread, claim the plan, resume the run with it, record the outcome."""
        runner = self._runner("serving a plan")
        async with runner.tool_session() as issues:  # the tools open, as for a resume
            return await self._serve(runner, plan, worker, issues)

    async def _serve(
        self, runner: Runner, plan: PlanRecord, worker: str, issues: list[Issue]
    ) -> PlanOutcome | None:
        store = self.database.store
        try:
            lease = await store.acquire(plan["thread_id"])
        except ThreadBusyError:
            return None
        started = time.monotonic()
        handed_over = False
        try:
            reclaim = plan["status"] == "claimed"
            if not await store.claim_plan(plan["id"], worker, reclaim=reclaim):
                return None
            stopped = await self._stopped_since(plan) if reclaim else None
            if stopped is not None:
                handed_over = True
                return await self._settle(runner, plan, stopped, lease, started)
            try:
                command = await self._plan_input(runner, plan, reclaimed=reclaim)
            except PlanRefusedError as exc:  # not from a reader of the report: the run waits
                return await self._refuse(plan, str(exc), started)
            except AgentError as exc:  # the plan does not fit (any more): the run stays as it is
                await store.finish_plan(plan["id"], status="failed", error=str(exc))
                return PlanOutcome(
                    plan["id"], plan["thread_id"], "failed", error=str(exc), seconds=_since(started)
                )
            handed_over = True
            return await self._drive_plan(runner, plan, command, lease, started, issues)
        finally:
            if not handed_over:
                await store.release(lease)

    async def _stopped_since(self, plan: PlanRecord) -> StateSnapshot | None:
        """The run's state, if a reclaimed plan's worker applied it and the run stopped since.

        The worker that claimed it marks the run row "running" as it applies the plan, and
        writes where the run stopped (and the plan's outcome) when it does. Killed between the
        two, it leaves a stopped run (finished, or waiting at a later gate than the plan's)
        whose row still says running: applying the plan again would fail ("nothing to resume",
        or a stale gate) and leave the row wrong. A run whose row says anything else was not
        left half-recorded by this plan's worker, and is served as before (None). The lease is
        held, so the state read here is still the run's when it is recorded.
        """
        record = await self.database.store.get_run(plan["thread_id"])
        if record is None or record["status"] != "running":
            return None
        async with self.database.graph() as graph:
            snapshot = await graph.aget_state(config_for(plan["thread_id"]))
        gate = plan["gate_checkpoint_id"]
        finished = not snapshot.next  # completed, failed or cancelled
        paused_later = snapshot.interrupts and gate is not None and _checkpoint_id(snapshot) != gate
        return snapshot if finished or paused_later else None

    async def _settle(
        self,
        runner: Runner,
        plan: PlanRecord,
        snapshot: StateSnapshot,
        lease: Lease,
        started: float,
    ) -> PlanOutcome:
        """Record what the dead worker could not: where the run stopped, and the plan as done."""
        thread_id = plan["thread_id"]
        async with runner.holding(lease):
            result = await runner.record_outcome(thread_id, snapshot, plan_id=plan["id"])
        log.info(
            "plan %d for run %s: its worker applied it and died before recording it; recorded "
            "now (the run is %s)",
            plan["id"],
            thread_id,
            result.status,
            fields={"event": "plan_settled", "plan": plan["id"], "thread_id": thread_id},
        )
        return _done(plan, result, started)

    async def _refuse(self, plan: PlanRecord, reason: str, started: float) -> PlanOutcome:
        """Record and log a plan that is not applied because of its gate token."""
        log.warning(
            "refused plan %d for run %s: %s",
            plan["id"],
            plan["thread_id"],
            reason,
            fields={"event": "plan_refused", "plan": plan["id"], "thread_id": plan["thread_id"]},
        )
        await self.database.store.finish_plan(plan["id"], status="refused", error=reason)
        return PlanOutcome(
            plan["id"], plan["thread_id"], "refused", error=reason, seconds=_since(started)
        )

    async def _plan_input(
        self, runner: Runner, plan: PlanRecord, *, reclaimed: bool
    ) -> Command[Any] | None:
        thread_id = plan["thread_id"]
        async with self.database.graph() as graph:
            snapshot = await graph.aget_state(config_for(thread_id))
        gate = plan["gate_checkpoint_id"]
        if reclaimed and not snapshot.interrupts and snapshot.next:
            # The worker that claimed it applied it and died mid-run: continue from the last
            # checkpoint, as a resume after a crash does.
            return await runner.resume_input(thread_id, snapshot, None)
        if waiting_node(snapshot) is not None or is_node_answer(plan["plan"]):
            command = await answer_input(runner, plan, snapshot)  # a node's answer
        else:
            command = await runner.resume_input(
                thread_id, snapshot, plan["plan"], token_required=True
            )
        if gate and _checkpoint_id(snapshot) != gate:
            # The row's own word only ever refuses a plan; what lets one through is its token.
            raise PlanRefusedError(
                f"the plan is stale: run {thread_id} has moved on since plan {plan['id']} was "
                "queued and waits at another gate now; queue a plan for that one"
            )
        await runner.remember_rules(thread_id, command)
        return command

    async def _drive_plan(
        self,
        runner: Runner,
        plan: PlanRecord,
        command: Command[Any] | None,
        lease: Lease,
        started: float,
        issues: list[Issue],
    ) -> PlanOutcome:
        thread_id, store = plan["thread_id"], self.database.store
        self._on_drive(thread_id)
        async with runner.holding(lease):
            await store.update_run(thread_id, status="running")
            # The plan is recorded as done with the run's outcome, in one transaction, before
            # the lease goes back: a claimed plan with a free lease means its worker died, and
            # one whose run was recorded and plan not could not be told from a run resumed by
            # hand meanwhile.
            result: RunResult = await runner.invoke(
                thread_id, command, issues=issues, plan_id=plan["id"]
            )
        return _done(plan, result, started)


def _done(plan: PlanRecord, result: RunResult, started: float) -> PlanOutcome:
    """The outcome of a plan applied: where its run stopped."""
    return PlanOutcome(
        plan["id"],
        plan["thread_id"],
        "done",
        run_status=result.status,
        error=result.error,
        seconds=_since(started),
    )


def _since(started: float) -> float:
    return round(time.monotonic() - started, 4)


def _kind(exc: BaseException) -> str:
    """What kind of failure an exception is, for telling each kind once: its class's name."""
    return type(exc).__name__


def _first_line(exc: BaseException) -> str:
    """An error's first line (a driver's message goes on with context lines)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else _kind(exc)


class Worker:
    """Serves the plan queue of one database with one Agent (see the module docstring).

    Args:
        agent: The Agent to resume runs with: same database, tools and model as the runs.
        poll: Seconds between looks at the queue when there is nothing to do.
        concurrency: Runs driven at once (each on its own thread id; never two on one).
        grace: Seconds the runs in progress get to finish after `stop`, before they are
            cancelled (their leases are released either way).
        name: How this worker signs its claims (default ``host:pid``).
        on_event: Called with ``{"type": "done" | "failed" | "refused" | "skipped" | "error" |
            "poll_error" | "recovered" | "stopping", ...}``. An ``error`` (serving a plan
            raised) or ``poll_error`` (the queue could not be read) carries the exception as
            ``error`` and its class name as ``kind``; each is told once per plan (or for the
            queue) and kind, not at every poll that meets it again (see `_report`).
        outage: Seconds the queue may stay unreadable (the database away, every statement
            timing out) before `run` gives up with a StoreError; the polls in between retry.
    """

    def __init__(
        self,
        agent: PlanServer,
        *,
        poll: float = 1.0,
        concurrency: int = 1,
        grace: float = 30.0,
        name: str | None = None,
        on_event: Callable[[WorkerEvent], None] | None = None,
        outage: float = 60.0,
    ) -> None:
        if concurrency < 1:
            raise RunError(f"concurrency must be at least 1 (got {concurrency})")
        # Written so that NaN fails too: it passed "poll <= 0" and made a loop that never waits.
        if not 0 < poll < math.inf:
            raise RunError(f"poll must be a finite number of seconds, more than 0 (got {poll:g})")
        if not (0 <= grace < math.inf and 0 <= outage < math.inf):
            raise RunError(
                f"grace and outage must be finite numbers of seconds, 0 or more (got {grace:g} "
                f"and {outage:g})"
            )
        self.agent = agent
        self.poll = poll
        self.concurrency = concurrency
        self.grace = grace
        self.name = name or f"{socket.gethostname()}:{os.getpid()}"
        self.outcomes: list[PlanOutcome] = []
        self._emit = on_event or (lambda event: None)
        self._stop = asyncio.Event()
        self._hurry = asyncio.Event()
        self._running: dict[str, asyncio.Task[PlanOutcome | None]] = {}
        self._skipped: set[int] = set()
        self.outage = outage
        # The kind of failure last told for each plan (None: reading the queue), so a plan that
        # fails the same way at every poll (a database outage) is told once, not every second.
        self._reported: dict[int | None, str] = {}
        # These memories are pruned of the plans gone from the queue when they pass this size.
        self._prune_above = _REMEMBERED
        self._down_since: float | None = None  # when reading the queue began failing

    def stop(self) -> None:
        """Stop taking plans and let the runs in progress finish; a second call cancels them."""
        if self._stop.is_set():
            self._hurry.set()
        self._stop.set()

    async def run(self, *, once: bool = False) -> list[PlanOutcome]:
        """Serve plans until `stop`, or with ``once`` until nothing is left to take.

        Args:
            once: Stop when the queue has nothing left that this worker can take.

        Returns:
            The outcomes, in the order they finished.

        Raises:
            StoreError: the queue could not be read for ``outage`` seconds (with ``once``, at
                the first failure): the database is away, or refuses every statement.
        """
        tried: set[int] = set()
        try:
            while not self._stop.is_set():
                started = await self._poll(tried if once else None, once=once)
                if once and not started and not self._running:
                    break
                await self._wait(self.poll if not started else 0)
        finally:
            await self._shut_down()
        return self.outcomes

    async def _poll(self, tried: set[int] | None, *, once: bool) -> int:
        """Start what the queue holds; a queue that cannot be read is told once and retried.

        A database that went away (or refuses every statement) fails the read; the next poll
        tries again, so a restart of the server costs a few polls, not the worker. The retries
        are bounded: past ``outage`` seconds of failures, or at once for a ``once`` worker
        (a cron job tries again at its next start), `run` ends with one clear error.
        """
        try:
            started = await self._start_some(tried)
            await self._forget_gone()
        except Exception as exc:  # the database's failure, whatever its driver calls it
            now = time.monotonic()
            self._down_since = now if self._down_since is None else self._down_since
            self._report(None, {"type": "poll_error", "error": exc})
            if once or now - self._down_since >= self.outage:
                raise StoreError(
                    f"the plan queue cannot be read ({_kind(exc)}: {_first_line(exc)}); "
                    f"gave up after {now - self._down_since:.0f}s of failures"
                ) from exc
            return 0
        if self._down_since is not None:  # it came back: say so, and tell a new outage again
            self._down_since = None
            self._reported.pop(None, None)
            self._emit({"type": "recovered"})
        return started

    def _report(self, plan_id: int | None, event: WorkerEvent) -> None:
        """Emit a failure event unless the same kind was already told for this plan (or poll).

        A plan whose serving raises stays claimable and is retried at every poll, which is
        right for a passing outage; telling the same failure every second would bury the
        worker's log. A new kind of failure is told again, and so is one after a success.
        """
        kind = _kind(event["error"])
        if self._reported.get(plan_id) == kind:
            return
        self._reported[plan_id] = kind
        self._emit({**event, "kind": kind})

    async def _forget_gone(self) -> None:
        """Forget the plans told or skipped that are no longer open, once there are many.

        A plan is remembered until it is served here; one that another worker served, or that
        was deleted, would be remembered for the worker's lifetime, and a long-lived worker
        facing a stream of such plans would grow without bound. Plans still queued or claimed
        are kept (each failure is still told once per plan and kind). The bound doubles with
        what is kept, so the queue is listed once per that many plans remembered, not per poll.
        """
        if len(self._reported) + len(self._skipped) <= self._prune_above:
            return
        store = self.agent.store
        open_ids = {
            plan["id"]
            for status in ("queued", "claimed")
            for plan in await store.list_plans(status=status, limit=None)
        }
        self._reported = {k: v for k, v in self._reported.items() if k is None or k in open_ids}
        self._skipped &= open_ids
        kept = len(self._reported) + len(self._skipped)
        self._prune_above = max(_REMEMBERED, 2 * kept)

    async def _start_some(self, tried: set[int] | None) -> int:
        free = self.concurrency - len(self._running)
        if free <= 0:
            return 0
        started = 0
        for plan in await self._candidates(free):
            if started == free:
                break
            if plan["thread_id"] in self._running or (tried is not None and plan["id"] in tried):
                continue
            if tried is not None:
                tried.add(plan["id"])
            task = asyncio.create_task(self._serve(plan))
            self._running[plan["thread_id"]] = task
            started += 1
        return started

    async def _candidates(self, free: int) -> list[PlanRecord]:
        store = self.agent.store
        # First the claimed plans nobody works on (their worker died: a crash, a kill). After
        # the queued ones they would wait until the queue ran dry, which under a steady queue
        # is never. A claimed plan whose lease is live is another worker's run in progress:
        # trying it would find it busy, again and again, at every pass of the loop.
        claimed = await store.list_plans(status="claimed", limit=None)
        orphaned = [p for p in claimed if not await store.working(p["thread_id"])]
        # Then queued plans, oldest first: a few more than the free slots, since some will be
        # busy elsewhere, and past the ones failing here. Those go last: retried at every poll
        # ahead of the rest, a few plans that fail every time (a row a trigger refuses, a
        # statement that times out) would hold every slot and starve the queue behind them.
        failing = len(self._reported)
        queued = await store.list_plans(
            status="queued", limit=free * 4 + len(self._running) + failing
        )
        return sorted([*orphaned, *queued], key=lambda plan: plan["id"] in self._reported)

    async def _serve(self, plan: PlanRecord) -> PlanOutcome | None:
        thread_id = plan["thread_id"]
        try:
            outcome = await self.agent.serve_plan(plan, self.name)
        except Exception as exc:  # a database or engine failure: report it, keep serving others
            self._report(
                plan["id"],
                {"type": "error", "plan": plan["id"], "thread_id": thread_id, "error": exc},
            )
            return None
        self._reported.pop(plan["id"], None)
        if outcome is None:
            if plan["id"] not in self._skipped:  # once: a busy thread is retried every poll
                self._skipped.add(plan["id"])
                self._emit({"type": "skipped", "plan": plan["id"], "thread_id": thread_id})
            return None
        self.outcomes.append(outcome)
        self._emit({"type": outcome.status, **outcome.to_dict()})
        return outcome

    async def _wait(self, seconds: float) -> None:
        """Until a run finishes, ``seconds`` pass, or stop() is called (0: just yield)."""
        if seconds > 0:
            stop = asyncio.create_task(self._stop.wait())
            try:
                await asyncio.wait(
                    {stop, *self._running.values()},
                    timeout=seconds,
                    return_when=asyncio.FIRST_COMPLETED,
                )
            finally:
                stop.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await stop
        else:
            await asyncio.sleep(0)
        for thread_id, task in list(self._running.items()):
            if task.done():
                del self._running[thread_id]

    async def _shut_down(self) -> None:
        """Let the runs in progress finish for ``grace`` seconds, then cancel them."""
        if not self._running:
            return
        self._emit({"type": "stopping", "running": sorted(self._running)})
        tasks = set(self._running.values())
        hurry = asyncio.create_task(self._hurry.wait())
        deadline = time.monotonic() + self.grace
        try:
            pending = {t for t in tasks if not t.done()}
            while pending and not hurry.done() and time.monotonic() < deadline:
                await asyncio.wait(
                    {*pending, hurry},
                    timeout=deadline - time.monotonic(),
                    return_when=asyncio.FIRST_COMPLETED,
                )
                pending = {t for t in tasks if not t.done()}
        finally:
            hurry.cancel()
            for task in tasks:
                task.cancel()
            # Each run's own clean-up releases its lease; a cancelled plan stays "claimed" and
            # the next worker reclaims it.
            await asyncio.gather(*tasks, hurry, return_exceptions=True)
            self._running.clear()
