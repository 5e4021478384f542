"""PipelineRunner: runs and resumes the nine-stage pipeline, holding the thread's lease.

It is the Agent's ``run`` and ``resume``, and the `ai_agent.graph.driving.Runner` the run
archive drives replays and queued plans with. Each span opens the Agent's tools
(`ai_agent.graph.tooling.AgentTools.session`); a run takes its thread's lease, renews it with a
heartbeat while the graph runs, and gives it back after (`ai_agent.graph.leases`); a full
database disk stops the run with an error that says how to continue it; the outcome is written
to the run store and published to the listeners. The run context of each run comes from
`ai_agent.graph.contexts.RunContexts`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

from langgraph.errors import GraphRecursionError
from langgraph.types import Command

from ai_agent.checkpoints.plans import FinishedPlan
from ai_agent.checkpoints.store import (
    RunStoreProtocol,
    check_thread_id,
    describe_location,
    new_thread_id,
)
from ai_agent.checkpoints.versions import check_state_version, stamped
from ai_agent.config import AgentSettings
from ai_agent.context import Hooks, ModelCaller, RunContext, RunPolicy
from ai_agent.datafiles import half_character_at
from ai_agent.errors import (
    AgentError,
    ConfigError,
    InvalidPlanError,
    LeaseLostError,
    NothingPendingError,
    PlanRefusedError,
    PlanRequiredError,
    RunError,
    StorageFullError,
    UnknownThreadError,
)
from ai_agent.events import CustomEvent, RunFinished, RunStarted
from ai_agent.graph.build import recursion_limit
from ai_agent.graph.contexts import RunContexts
from ai_agent.graph.database import RunDatabase, config_for
from ai_agent.graph.interrupts import node_answer, waiting_node
from ai_agent.graph.leases import LeaseKeeper, stop_reason
from ai_agent.graph.plain_reads import checked
from ai_agent.graph.result import RunResult, is_pending, result_of
from ai_agent.graph.run_summary import summary_of
from ai_agent.graph.tooling import AgentTools
from ai_agent.nodes.edits import check_edits
from ai_agent.nodes.gate import check_plan, check_token
from ai_agent.observability import Telemetry
from ai_agent.observability.logs import engine_logger
from ai_agent.observability.redaction import SecretValues
from ai_agent.plans import PlanAnswer, check_size, read_plan
from ai_agent.state import GateReport, Issue, RunState, UserPlan, new_run_state
from ai_agent.tools.rules import check_always, describe_rule, new_rules

if TYPE_CHECKING:
    from langgraph.types import StateSnapshot

    from ai_agent.checkpoints.runstore import Lease
    from ai_agent.graph.interrupts import Answer

__all__ = ["ParentStep", "PipelineRunner"]

log = engine_logger("ai_agent.agent")


@dataclasses.dataclass(frozen=True, slots=True)
class ParentStep:
    """Where a child run (a subagent's) was spawned: the parent's thread, cycle and tool call."""

    thread_id: str
    iteration: int | None = None
    call_id: str | None = None


class PipelineRunner:
    """Runs and resumes the pipeline on the run database, with the Agent's tools and contexts.

    Args:
        database: The run store and the checkpointer.
        settings: The Agent's settings (leases, plan size).
        policy: The Agent's run policy.
        tools: The Agent's tools, opened for each span.
        contexts: Makes each run's context.
        secrets: What is masked in the task, plans and errors.
        telemetry: The Agent's spans, metrics and listeners.
        on_drive: Told which thread a run drives (the archive's default thread).
    """

    def __init__(
        self,
        database: RunDatabase,
        settings: AgentSettings,
        *,
        policy: RunPolicy,
        tools: AgentTools,
        contexts: RunContexts,
        secrets: SecretValues,
        telemetry: Telemetry,
        on_drive: Callable[[str], None],
    ) -> None:
        self._db = database
        self.settings = settings
        self.policy = policy
        self._tools = tools
        self.secrets = secrets
        self.telemetry = telemetry
        self.on_drive = on_drive
        self.hooks: Hooks = contexts.hooks
        self.context = contexts.context
        self.generation_params = contexts.generation_params
        self._contexts = contexts
        self.leases = LeaseKeeper(lambda: self._db.store, settings.lease_seconds)
        # The tasks running a run or a resume right now (`settle` stops them before a close).
        self._flying: set[asyncio.Task[Any]] = set()

    @property
    def store(self) -> RunStoreProtocol:
        """The run store (runs, leases, journal, plans), opened on first use."""
        return self._db.store

    def tool_session(self) -> contextlib.AbstractAsyncContextManager[list[Issue]]:
        """The span of a run, resume, replay, plan served or direct call: the toolsets open.

        ``async with runner.tool_session() as issues``: the issues (a required MCP server
        that could not start) go to the run's context.
        """
        return self._tools.session()

    async def model(self) -> ModelCaller:
        """The live model caller (built when first needed)."""
        return await self._contexts.model()

    def scrub(self, value: Any) -> Any:
        """``value`` with every configured secret masked."""
        return self.secrets.scrub(value)

    # Running --------------------------------------------------------------------------------
    async def run(self, task: str, *, thread_id: str | None = None) -> RunResult:
        """Run a task until it finishes, fails, or pauses at the gate.

        Args:
            task: What to do, in plain language.
            thread_id: Id for the new run (default: a fresh one). It must not exist yet, and
                must follow the grammar of thread ids (``checkpoints.store.THREAD_ID_RULE``).

        Raises:
            RunError: the thread id is already taken.
            InvalidThreadIdError: the thread id breaks the grammar.
        """
        return await self.start(task, thread_id=thread_id)

    async def start(
        self, task: str, *, thread_id: str | None = None, parent: ParentStep | None = None
    ) -> RunResult:
        """`run`, and for a child run (a subagent's) the parent's step it is linked to.

        The link is written with the run's row (``agent_runs``: ``origin='child'``, the
        parent's thread, cycle and call), before the first step.
        """
        async with self._in_flight(), self.tool_session() as issues:
            if not task.strip():
                raise ConfigError("the task is empty; say what the agent should do")
            _check_whole_characters(task)
            task = self._masked_task(task)  # after the span began: MCP secrets are known
            thread_id = new_thread_id() if thread_id is None else check_thread_id(thread_id)
            if await self.store.get_run(thread_id) is not None:
                raise RunError(
                    f"thread {thread_id} already exists; resume it instead of running it"
                )
            link: dict[str, Any] = {}
            if parent is not None:
                link = {
                    "origin": "child",
                    "parent_thread_id": parent.thread_id,
                    "parent_iteration": parent.iteration,
                    "parent_call_id": parent.call_id,
                }
            await self.store.create_run(thread_id, task, **link)
            async with self._full_disk_stops(thread_id):
                lease = await self.store.acquire(thread_id)
                return await self.drive(thread_id, self._new_state(task), lease, issues=issues)

    def _new_state(self, task: str) -> RunState:
        """The state a run starts from; a typed run keeps its output schema from the start."""
        state = new_run_state(task, list(self._tools.initial))
        if self.policy.output is not None:
            state["output_schema"] = self.policy.output.stored_form()
        return state

    def _masked_task(self, task: str) -> str:
        """The task as the run keeps it: a configured secret in it is masked, and we say so."""
        self.secrets.refresh()  # a key exported since the last run counts
        masked = self.secrets.text(task)
        if masked != task:
            log.warning(
                "the task holds a configured secret; the run sees and stores *** in its place "
                "(tools get keys through their environment, never through the task)"
            )
        return masked

    async def resume(self, thread_id: str, plan: Answer = None) -> RunResult:
        """Continue a run: with a plan when it is paused at the gate, without after a crash.

        The arguments, the result and the errors are documented on `ai_agent.Agent.resume`.
        """
        self._db.require(check_thread_id(thread_id))  # before the store would create the file
        async with (
            self._in_flight(),
            self.tool_session() as issues,
            self._full_disk_stops(thread_id),
        ):
            lease = await self.store.acquire(check_thread_id(thread_id))
            try:
                async with self._db.graph() as graph:
                    snapshot = await graph.aget_state(config_for(thread_id))
                command = await (
                    self.resume_input(thread_id, snapshot, plan)
                    if snapshot.values
                    else self._restart(thread_id, plan)
                )
                await self.remember_rules(thread_id, command)
                await self.store.update_run(thread_id, status="running")
            except BaseException:
                await self.leases.release(lease)
                raise
            return await self.drive(thread_id, command, lease, issues=issues)

    @contextlib.asynccontextmanager
    async def _in_flight(self) -> AsyncIterator[None]:
        """Count the current task among the runs in flight (`settle`) while the block runs."""
        task = asyncio.current_task()
        added = task is not None and task not in self._flying
        if task is not None and added:
            self._flying.add(task)
        try:
            yield
        finally:
            if task is not None and added:
                self._flying.discard(task)

    async def settle(self) -> None:
        """Stop the runs and resumes still in flight, and wait until each has wound down.

        Called before the Agent closes its database: a run whose consumer left its stream, or
        whose task was cancelled and never awaited, is still marking its row and giving its
        lease back, and that must not meet a closed database (at best an error in place of
        the one the caller is handling, at worst a crash of the SQLite driver). Each stays
        resumable from its last checkpoint.
        """
        current, loop = asyncio.current_task(), asyncio.get_running_loop()
        tasks = [
            t for t in self._flying if t is not current and not t.done() and t.get_loop() is loop
        ]
        for task in tasks:
            if not task.cancelling():  # one already being cancelled is winding down: no twice
                log.info("the agent is closing while a run is in flight; cancelling it")
                task.cancel()
        if tasks:
            await asyncio.wait(tasks)

    @contextlib.asynccontextmanager
    async def _full_disk_stops(self, thread_id: str) -> AsyncIterator[None]:
        """A full database disk stops the run with an error that says how to continue it.

        The transaction that hit it was rolled back whole and every step before it is
        checkpointed, so ``resume`` continues from there once there is space. The run row is
        marked failed with the same message, when the disk still takes that small update.
        """
        try:
            yield
        except StorageFullError as exc:
            full = StorageFullError(exc.where, thread_id=thread_id)
            with contextlib.suppress(StorageFullError):
                await self.store.update_run(thread_id, status="failed", error=str(full))
            raise full from exc

    async def resume_input(
        self,
        thread_id: str,
        snapshot: StateSnapshot,
        plan: Answer,
        *,
        token_required: bool = False,
    ) -> Command[Any] | None:
        """The graph input that continues a run, once every check of a resume has passed.

        A plan's gate token is checked against the paused checkpoint's interrupt value (the
        report the person was handed), never against anything a plan's author could write;
        ``token_required`` (the plan queue) refuses a plan without one.
        """
        check_state_version(checked(snapshot).metadata, f"run {thread_id}")  # before any stage
        self.secrets.refresh()  # a key exported while the run waited counts from here on
        if not snapshot.values and await self.store.get_run(thread_id) is None:
            raise self._unknown(thread_id)
        waiting = waiting_node(snapshot)
        if waiting is not None:  # a node of the user's pipeline asked: the answer is its value
            answer = node_answer(thread_id, waiting, plan, self.settings.max_plan_chars)
            return Command(resume=self.secrets.scrub(answer))
        if snapshot.interrupts:
            report: GateReport = snapshot.interrupts[0].value
            if plan is None:
                raise PlanRequiredError(
                    f"run {thread_id} is paused at the gate and needs a plan:\n{report['prompt']}"
                )
            values = cast(RunState, snapshot.values)
            parsed = self._tools.with_new_tools(
                _read_plan(plan, token_required), values.get("active_tools", [])
            )
            check_size(parsed, self.settings.max_plan_chars)
            check_token(parsed, report, values, thread_id, required=token_required)
            check_plan(parsed, report, self._tools.registry)
            check_edits(parsed, report, self._tools.registry)
            check_always(parsed, report, self._tools.registry)
            # The resume value is stored with the checkpoint: a key in the instructions is not.
            # The gate takes the typed plan it carries (`ai_agent.plans.PlanAnswer`).
            masked = parsed.model_copy(update=self.secrets.scrub(parsed.model_dump()))
            return Command(resume=PlanAnswer(masked, report))
        if is_pending(snapshot):
            # It stopped mid-step (a crash, a failure): continue from the last checkpoint. The
            # writes of the step's finished tasks are stored with it and are reused, not run
            # again; the journal keeps any half-done side-effecting call from running again
            # silently.
            if plan is not None:
                raise RunError(f"run {thread_id} is not waiting for a plan; resume it without one")
            return None
        status = snapshot.values.get("status", "finished")
        raise NothingPendingError(f"run {thread_id} has {status}; there is nothing to resume")

    async def remember_rules(self, thread_id: str, command: Any) -> None:
        """Store the always-allow rules the plan of a resume asks for (``always_allow``).

        Called once the plan passed every check and the run's lease is held, just before the
        run goes on: where a plan is applied (``resume``, a worker serving the queue), never
        where one is only queued. The same plan applied again (a worker's retry) stores
        nothing new.
        """
        answer = getattr(command, "resume", None)
        if not isinstance(answer, PlanAnswer) or answer.report is None:
            return
        for rule in new_rules(
            answer.plan, answer.report, self._tools.registry, thread_id=thread_id
        ):
            stored = await self.store.add_rule(dict(rule))
            log.info(
                "stored always-allow rule %d: %s",
                stored["id"],
                describe_rule(stored),
                fields={"event": "rule_added", "rule": stored["id"], "thread_id": thread_id},
            )

    async def _restart(self, thread_id: str, plan: Answer) -> RunState:
        """The input of a run that has a run row but no checkpoint: its task, from the start.

        The row is written before the first checkpoint, so a crash in between leaves it alone.
        No stage has run without a checkpoint before it (checkpoints are written "sync"), so
        starting the task again repeats nothing.
        """
        record = await self.store.get_run(thread_id)
        if record is None:
            raise self._unknown(thread_id)
        if plan is not None:
            raise RunError(
                f"run {thread_id} stopped before its first step and is not waiting for a plan; "
                "resume it without one"
            )
        log.info("run %s has no checkpoint yet; starting its task from the beginning", thread_id)
        return self._new_state(record["task"])

    def _unknown(self, thread_id: str) -> UnknownThreadError:
        return UnknownThreadError(
            f"no run with thread id {thread_id} in {describe_location(self._db.location)}; "
            "`ai-agent runs` lists the runs there"
        )

    async def drive(
        self,
        thread_id: str,
        graph_input: Any,
        lease: Lease,
        context: RunContext | None = None,
        *,
        issues: Sequence[Issue] = (),
    ) -> RunResult:
        """Run the graph on a thread whose lease is held, keeping the lease while it runs."""
        self.on_drive(thread_id)
        async with self.holding(lease):
            return await self.invoke(thread_id, graph_input, context, issues=issues)

    def holding(self, lease: Lease) -> contextlib.AbstractAsyncContextManager[None]:
        """Keep the lease while the block runs (`LeaseKeeper.holding`), and give it back after."""
        return self.leases.holding(lease)

    async def invoke(
        self,
        thread_id: str,
        graph_input: Any,
        context: RunContext | None = None,
        *,
        issues: Sequence[Issue] = (),
        plan_id: int | None = None,
    ) -> RunResult:
        """Run the graph on a thread (its lease held by the caller) and record the outcome.

        ``issues`` (from the span's `tool_session`) are raised by the run's first draft.
        ``plan_id``: the claimed plan this run applies (a worker's), recorded as done with
        the outcome, in the same transaction (`FinishedPlan`).
        """
        # A fresh state starts a run; a Command (a plan) or None continues the thread: a
        # resume is a new run of the same thread, observed as its own run linked to the thread.
        resumed = not isinstance(graph_input, dict)
        listeners = self.telemetry.listeners
        with self.telemetry.run(thread_id, resumed=resumed) as run:
            listeners.publish(RunStarted(thread_id, run.run_id, resumed))
            try:
                result = await self._invoke_graph(thread_id, graph_input, context, issues, plan_id)
            except BaseException as exc:
                error = stop_reason(exc, thread_id, self.secrets, self.leases)
                listeners.publish(
                    RunFinished(RunResult(status="failed", thread_id=thread_id, error=error))
                )
                raise
            run.finish(
                result.status,
                error=result.error,
                iterations=result.iterations,
                usage=result.usage,
            )
            listeners.publish(RunFinished(result))
        return result

    async def _invoke_graph(
        self,
        thread_id: str,
        graph_input: Any,
        context: RunContext | None,
        issues: Sequence[Issue],
        plan_id: int | None,
    ) -> RunResult:
        pipeline = self._db.pipeline
        limit = (pipeline.recursion_limit if pipeline else recursion_limit)(
            self.policy.max_iterations
        )
        try:
            context = context or await self.context(thread_id, issues=issues)
            answer = getattr(graph_input, "resume", None)
            if isinstance(answer, PlanAnswer) and answer.report is not None:
                # The gate this resume answers was decided by the person: it is not evaluated
                # or asked again on the way back in.
                context = dataclasses.replace(context, answering=answer.report)
            async with self._db.graph() as graph:
                # "sync": each step's checkpoint is committed before the next step starts, so a
                # tool never has side effects ahead of the checkpoint that leads to it. What a
                # node or a tool writes with get_stream_writer() ("custom") joins the run's
                # events, as a CustomEvent.
                async for data in graph.astream(
                    graph_input,
                    stamped(config_for(thread_id, limit, lease=self.store.held(thread_id))),
                    context=context,
                    durability="sync",
                    stream_mode="custom",
                ):
                    context.emit(CustomEvent(data))
                snapshot = await graph.aget_state(config_for(thread_id))
        except (StorageFullError, LeaseLostError):
            # Not a failure of the run: it continues once there is space again, or in the
            # process that took it over (and this one may not write to it any more).
            raise
        except (AgentError, GraphRecursionError) as exc:
            message = self.secrets.text(
                str(exc)
                if isinstance(exc, AgentError)
                else (f"the run exceeded {limit} steps; this is a bug in a hook or the engine")
            )
            finishing = None if plan_id is None else FinishedPlan(plan_id, message)
            await self.store.update_run(
                thread_id, status="failed", error=message, finishing=finishing
            )
            return RunResult(status="failed", thread_id=thread_id, error=message)
        except BaseException as exc:
            error = stop_reason(exc, thread_id, self.secrets, self.leases)
            # Cancelled because the lease was lost: the run is not this process's to mark.
            with contextlib.suppress(LeaseLostError):
                await self.store.update_run(thread_id, status="failed", error=error)
            raise
        return await self.record_outcome(thread_id, snapshot, plan_id=plan_id)

    async def record_outcome(
        self, thread_id: str, snapshot: StateSnapshot, *, plan_id: int | None = None
    ) -> RunResult:
        """Write where a run stopped (its status, answer, gate, summary) into its run row.

        ``snapshot`` is the run's latest state, read after the graph stopped: at the end of a
        run, or later by a worker that takes over a plan whose worker died after its run
        stopped but before the row said so. ``plan_id``: the claimed plan that drove the run,
        recorded as done in the same transaction.
        """
        result = result_of(thread_id, snapshot, self.policy.output)
        await self.store.update_run(
            thread_id,
            status=result.status,
            final_text=result.final_text,
            gate=dict(result.gate) if result.gate else None,
            summary=summary_of(result, snapshot.values),
            finishing=None if plan_id is None else FinishedPlan(plan_id, result.error),
        )
        return result


def _read_plan(plan: Answer, token_required: bool) -> UserPlan:
    """The plan, validated. From the queue, a plan that is not even valid is refused.

    ``submit_plan`` queues only plans it validated, so an unreadable one in the queue was
    written there by something else: it is refused (and audited) like any plan without a token.
    """
    try:
        return read_plan(plan)
    except InvalidPlanError as exc:
        if not token_required:
            raise
        raise PlanRefusedError(
            f"{exc}; a plan queued by Agent.submit_plan or `ai-agent resume THREAD --queue` is "
            "always valid, so this one was written into the queue by something else"
        ) from None


def _check_whole_characters(task: str) -> None:
    r"""ConfigError for a task holding half of a character (a lone surrogate).

    No text can store it: the run's row failed to be written with UnicodeEncodeError. It comes
    from a command line given bytes that are not UTF-8 (Python reads them as such halves), or
    from JSON's ``"\ud800"``; the task is the person's, so it is refused, not repaired.
    """
    half = half_character_at(task)  # a regular expression: a long task is not walked in Python
    if half is not None:
        raise ConfigError(
            f"the task holds half of a character at position {half} (a lone surrogate, from "
            "text that is not UTF-8 or JSON's \\ud800 written alone), which no text can store; "
            "give the task as UTF-8 text"
        )
