"""act: run this cycle's calls through the registry: policy, approvals, env check, journal.

Every call is screened first (``ai_agent.tools.policy.screen_call``). Calls that may run are
journaled (intent before, outcome after), so a crash mid-call is found on resume instead of the
call silently running twice. The journal entry is the run store's one record of the call's
outcome: the recorded call (``graph/recording.py``, below this stage) names it. Calls that must
wait stay in ``pending`` with the issue that stopped them; the gate then pauses for a plan and
routes back here to settle them.

Approvals arrive as grants (the gate turns a plan's approvals into them), bound to this run and to
each call as the gate report showed it; a call-scoped grant is spent when its call runs. Every
key here (journal, grants, the plan's deny list, tool messages) is the call's engine id.

What the model gets back is bounded: an output longer than ``policy.max_output_chars`` is clipped
(head and tail kept) before it enters the conversation and state, and its full text goes to the
run store, named in the clipped text so a person (or a later tool) can fetch it.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import replace
from typing import Any, TypedDict

from langgraph.runtime import Runtime

from ai_agent.context import AllowRule, RunContext
from ai_agent.events import ToolFinished, ToolStarted
from ai_agent.issues import IssueKind, as_state
from ai_agent.nodes._common import stage
from ai_agent.nodes._issues import issue, issue_from_result
from ai_agent.nodes._output import output_sink
from ai_agent.nodes._release import let_go
from ai_agent.nodes._rollup import child_usage, summary_usage
from ai_agent.nodes._status import plan_line, status_line
from ai_agent.observability.tooldata import tool_telemetry
from ai_agent.state import (
    Grant,
    Issue,
    Message,
    PendingCall,
    PlanRecord,
    RunState,
    ToolCall,
    ToolOutcome,
    ToolResult,
    TraceEvent,
    UsageRecord,
)
from ai_agent.tools.policy import (
    CallFacts,
    Verdict,
    approved_at,
    canonical_args,
    is_granted,
    screen_call,
    spend,
    withheld_reason,
)
from ai_agent.tools.results import bound_output, labelled
from ai_agent.tools.rules import covering_rule, describe_rule, rule_problems

__all__ = ["ActUpdate", "act", "repair_used"]


class ActUpdate(TypedDict, total=False):
    """What the act stage writes to the run state."""

    pending: list[PendingCall]
    messages: list[Message]
    results: list[ToolOutcome]
    issues: list[Issue]
    grants: list[Grant]
    resolving: bool
    tools_used: list[str]
    active_tools: list[str]
    trace: list[TraceEvent]
    usage: dict[str, Any]
    usage_log: list[UsageRecord]


def _latest_plan(state: RunState) -> dict[str, Any]:
    plans: list[PlanRecord] = state.get("plans") or []
    return plans[-1]["plan"] if plans else {}


def _deferred_instructions(state: RunState, iteration: int) -> list[str]:
    """The instructions of every plan that answered a gate of this cycle, oldest first.

    A gate with waiting calls defers its plan's instructions to the act stage that settles
    them. When a call waits again (its key still unset, a subagent paused once more), no
    instructions go in yet, and the next gate's plan is only the latest one: each plan of the
    cycle must still reach the model once its calls are answered, not the latest alone. A plan
    of this cycle is always such a deferred one: a gate without waiting calls goes to the next
    draft (a new cycle), so no act of this cycle follows it.
    """
    plans: list[PlanRecord] = state.get("plans") or []
    texts = [record["plan"].get("instructions") for record in plans]
    return [
        text
        for record, text in zip(plans, texts, strict=True)
        if record["iteration"] == iteration and isinstance(text, str) and text
    ]


def _named(ids: list[str], call: ToolCall, shown: set[str]) -> bool:
    """The plan names this call, by its id or by "*" (which means the calls of the report)."""
    return call["id"] in ids or ("*" in ids and call["id"] in shown)


def repair_used(results: list[ToolOutcome], name: str, iteration: int) -> bool:
    """True when the latest earlier call of ``name`` was rejected for its arguments.

    That call was the model's one repair chance: a second violation in a row is an error.
    """
    for outcome in reversed(results):
        if outcome["call"]["name"] != name or outcome["iteration"] >= iteration:
            continue
        return (outcome["result"].get("meta") or {}).get("code") == "SCHEMA_VIOLATION"
    return False


class _Cycle:
    """The work of one act step: collects messages, results, issues and trace lines."""

    def __init__(self, state: RunState, context: RunContext) -> None:
        self.state, self.context = state, context
        self.iteration = state.get("iteration", 0)
        self.answered = bool(state.get("resolving"))
        self.plan = _latest_plan(state) if self.answered else {}
        report = state.get("gate") if self.answered else None
        # The report the plan answered: its token and the calls it showed.
        self.token = report.get("token") if report else None
        self.shown = {p["call"]["id"] for p in report["pending"]} if report else set()
        self.grants: list[Grant] = list(state.get("grants", []))
        self.used: list[str] = list(state.get("tools_used", []))
        self.active: list[str] = list(state.get("active_tools", []))
        self.update = ActUpdate(pending=[], messages=[], results=[], issues=[], trace=[])
        # Children of this step paused at their gates: what they spent is not the run's yet
        # (it is when they finish), but the children called after them may not spend it again.
        self.held: list[ToolResult] = []
        # The always-allow rule that let a call run unasked, by the call's id (its records say so).
        self.allowed: dict[str, AllowRule] = {}
        # The phase's plan line goes with its first call run (none when a plan answered it).
        self.outline = "" if self.answered else plan_line(state)

    async def verdict(self, pending: PendingCall) -> Verdict:
        call = pending["call"]
        context, policy = self.context, self.context.policy
        info = context.tools.info(call["name"])
        missing = [k for k in info["requires_env"] if not _env(k)] if info else []
        review = context.tools.review(call) if info else {"problems": [], "escalate": None}
        escalation = review["escalate"]
        thread = context.thread_id
        # A tool-wide grant was given for calls a person saw; it does not stretch to a call the
        # tool itself flags as needing a person (a destructive command).
        granted = is_granted(call, self.grants, thread_id=thread, tool_wide=escalation is None)
        journal = await context.journal.lookup(thread, self.iteration, call["id"])
        approved_now = self.token is not None and approved_at(
            call, self.grants, thread_id=thread, gate=self.token
        )
        rerun_approved = (
            approved_now
            and pending["blocked"] == IssueKind.UNKNOWN_OUTCOME
            and journal is not None
            and pending.get("attempt") == journal["attempt"]
        )
        results: list[ToolOutcome] = self.state.get("results", [])
        facts = CallFacts(
            call=call,
            info=info,
            active=self.state.get("active_tools", []),
            grants=self.grants,
            approvals=_approvals(context),
            missing_env=missing,
            journal=journal,
            answered=self.answered,
            approved=granted,
            rerun_approved=rerun_approved,
            denied=_named(self.plan.get("deny", []), call, self.shown),
            problems=review["problems"],
            repair_used=repair_used(results, call["name"], self.iteration),
            escalation=escalation,
            first_use=call["name"] not in self.used,
            unattended=policy.unattended,
            first_use_gate=policy.first_use_gate,
            shown=call["id"] in self.shown,
            withheld=withheld_reason(context.tools, call["name"]) if info is None else None,
        )
        verdict = screen_call(facts)
        if verdict.action in ("wait", "cancel") and not granted and info is not None:
            verdict = await self.by_rule(facts, verdict, info["category"])
        return verdict

    async def by_rule(self, facts: CallFacts, verdict: Verdict, category: str) -> Verdict:
        """The verdict once the always-allow rules of the call's tool are read.

        A rule that covers the call approves it, and its use is noted for the call's records.
        An unreadable rule is not used: the call waits as it would have, and its issue says why.
        """
        book = self.context.rules
        if book is None:
            return verdict
        call = facts.call
        rules = await book.rules_for(call["name"])
        escalated = facts.escalation is not None
        rule = covering_rule(
            rules, call, thread_id=self.context.thread_id, category=category, escalated=escalated
        )
        if rule is None:
            problems = rule_problems(rules, call, category)
            if problems and verdict.action == "wait" and verdict.code is not None:
                message = "; ".join([verdict.message, *problems])
                return Verdict("wait", verdict.code, message, verdict.result, verdict.attempt)
            return verdict
        allowed = screen_call(replace(facts, approved=True))
        if allowed.action == "run":
            self.allowed[call["id"]] = rule
        return allowed

    async def settle(self, batch: list[PendingCall]) -> None:
        """Settle calls: each one's verdict, the runs (together, up to the limit), the records.

        A batch is one call, or consecutive calls of tools that may run at once
        (``ToolSpec.concurrent``: subagents); records keep the order the model asked in.
        """
        decided = [(pending, await self.verdict(pending)) for pending in batch]
        limit = asyncio.Semaphore(self.context.policy.max_concurrent_calls)

        async def run(pending: PendingCall, verdict: Verdict) -> ToolResult | None:
            if not _runs(verdict):
                return None
            async with limit:
                return await self.run(pending["call"], pending.get("preview", ""))

        results = await asyncio.gather(*(run(p, v) for p, v in decided))
        for (pending, verdict), result in zip(decided, results, strict=True):
            await self.conclude(pending, verdict, result)

    async def conclude(
        self, pending: PendingCall, verdict: Verdict, ran: ToolResult | None
    ) -> None:
        """Record what became of one call (``ran``: its result, when it ran)."""
        call = pending["call"]
        if verdict.action == "wait":
            self.wait(pending, verdict)
            return
        if ran is not None:
            result = ran
            if _code(result) == IssueKind.SUBAGENT_PAUSED:
                await self.hold_for_child(pending, result)
                return
        elif verdict.action == "cancel":
            result = ToolResult(
                status="skipped", content=verdict.message, meta={"code": "CANCELLED"}
            )
        else:
            assert verdict.result is not None  # a reuse or a rejection carries its result
            result = verdict.result
            if verdict.code:
                self.update["issues"].append(issue(verdict.code, verdict.message, call=call))
        if ran is None and "spent" in pending:
            # A child held at its gate that will not go on: it is cancelled, and what it spent
            # is the run's now.
            meta = {
                **(result.get("meta") or {}),
                "child_usage": await let_go(self.context, pending),
            }
            result = ToolResult(**{**result, "meta": meta})
        if verdict.action in ("run", "reuse"):
            self.ran(call)
        await self.record(call, result)

    def concurrent(self, pending: PendingCall) -> bool:
        """Whether the call's tool may run at the same time as others (a subagent's).

        Not under a budget: children that run together are each given all the run has left,
        and a model calling N of them in one turn had the tree spend up to N times its budget.
        One after another, each is given what the ones before it left (`run` hands a child the
        usage as this step leaves it).
        """
        if self.context.meter is not None and self.context.meter.limited:
            return False
        info = self.context.tools.info(pending["call"]["name"])
        return bool(info and info.get("concurrent"))

    def ran(self, call: ToolCall) -> None:
        """Note a call that ran: its tool has been used, its call approval is spent."""
        if call["name"] not in self.used:
            self.used.append(call["name"])
            self.update["tools_used"] = list(self.used)
        spent = spend(call, self.grants, thread_id=self.context.thread_id)
        if spent is not None:
            self.grants = spent
            self.update["grants"] = list(spent)

    async def hold_for_child(self, pending: PendingCall, result: ToolResult) -> None:
        """A subagent's gate stopped its child: the call waits for this run's plan.

        The call has no outcome yet (`run` dropped its intent): run again with the plan, it
        re-attaches to the same child and hands the plan on (``graph/subagents.py``).
        """
        self.held.append(result)
        message = str(result.get("error") or "the subagent paused at its gate")
        spent = (result.get("meta") or {}).get("child_usage")
        held = PendingCall(**pending)
        if isinstance(spent, dict):
            held["spent"] = spent
        self.wait(held, Verdict("wait", IssueKind.SUBAGENT_PAUSED, message))

    def wait(self, pending: PendingCall, verdict: Verdict) -> None:
        call, kind = pending["call"], verdict.code
        assert kind is not None  # a verdict to wait always names the kind that holds the call
        waiting = PendingCall(call=call, blocked=as_state(kind), preview=pending["preview"])
        if verdict.attempt is not None:
            waiting["attempt"] = verdict.attempt
        if "spent" in pending:  # still held: what its child spent is still to be counted
            waiting["spent"] = pending["spent"]
        self.update["pending"].append(waiting)
        if kind != IssueKind.TOOL_MISSING or self.answered:  # decide already reported it
            self.update["issues"].append(issue(kind, verdict.message, call=call))
        self.update["trace"].append(
            TraceEvent(
                stage="act",
                iteration=self.iteration,
                tool=call["name"],
                status="blocked",
                detail=f"{verdict.code}: {verdict.message}"[:200],
            )
        )

    async def run(self, call: ToolCall, preview: str = "") -> ToolResult:
        context = self.context
        outline, self.outline = self.outline, ""
        status = status_line(call["name"], preview)
        context.emit(ToolStarted(call["name"], call["id"], self.iteration, status, outline))
        await context.journal.intent(context.thread_id, self.iteration, call)
        tool_ctx = {
            "thread_id": context.thread_id,
            "task": self.state.get("task", ""),
            "iteration": self.iteration,
            "call_id": call["id"],
            "workdir": context.policy.workdir,
            # The plan that answered this run's gate, for a subagent whose gate it answers,
            # and this run's usage so far and the budget allowance a person granted it, which
            # a subagent's budget is limited by.
            "plan": dict(self.plan),
            # As this step leaves it so far: what the children called before this one spent.
            "usage": self.spent_so_far(),
            "budget_allowance": dict(self.state.get("budget_allowance") or {}),
            "on_output": output_sink(
                context.emit if context.policy.stream_tool_results else None,
                tool=call["name"],
                call_id=call["id"],
                iteration=self.iteration,
                chunk_size=context.policy.stream_chunk_size,
            ),
        }
        result = await context.tools.execute(call, tool_ctx)
        if _code(result) == IssueKind.SUBAGENT_PAUSED:
            await context.journal.forget(context.thread_id, self.iteration, call["id"])
        else:
            await context.journal.outcome(context.thread_id, self.iteration, call, result)
        context.emit(_finished(call, result, self.iteration))
        return result

    async def clip(self, call: ToolCall, text: str, result: ToolResult) -> tuple[str, ToolResult]:
        """Bound what the model (and state) gets; keep the full text in the run store.

        The Agent's tool box bounds results as they are made (before they are journaled and
        recorded, ``graph/recording.py``), so what arrives here is bounded already; this holds
        for any other tool box.
        """
        where = (self.context.thread_id, self.iteration, call)
        limit, method = self.context.policy.max_output_chars, self.context.policy.output_summary
        return await bound_output(self.context.outputs, where, text, result, limit, method)

    def activate(self, result: ToolResult) -> None:
        """Tools a result asks to make active from the next cycle (``meta.activate_tools``).

        This is how ``propose_tool`` makes a tool a person just approved callable: the registry
        has it from the next cycle's snapshot, and the run's active set names it.
        """
        names = (result.get("meta") or {}).get("activate_tools")
        if not isinstance(names, list):
            return
        added = [n for n in names if isinstance(n, str) and n not in self.active]
        if added:
            self.active += added
            self.update["active_tools"] = list(self.active)

    def roll_up(self, result: ToolResult) -> None:
        """A subagent's usage, and a summary call's, count as this run's (nodes/_rollup.py).

        The run's budget, checked before its next model call, then covers them too.
        """
        self.add_usage(child_usage(result, self.usage(), self.iteration))
        self.add_usage(summary_usage(result, self.usage()))

    def usage(self) -> dict[str, Any] | None:
        """The run's usage totals as this step leaves them so far."""
        return self.update.get("usage", self.state.get("usage"))

    def spent_so_far(self) -> dict[str, Any]:
        """The run's usage with what this step's paused children spent: a child's limit."""
        total = dict(self.usage() or {})
        for result in self.held:
            rolled = child_usage(result, total, self.iteration)
            if rolled is not None:
                total = rolled[0]
        return total

    def add_usage(self, rolled: tuple[dict[str, Any], UsageRecord] | None) -> None:
        if rolled is not None:
            self.update["usage"], record = rolled
            self.update["usage_log"] = [*self.update.get("usage_log", []), record]

    async def record(self, call: ToolCall, result: ToolResult) -> None:
        result = _labelled(self.context, call, result)
        self.activate(result)
        self.roll_up(result)
        text = self.context.tools.format_result(call["name"], result)
        text, result = await self.clip(call, text, result)
        if "edited_from" in call:
            # The conversation holds the arguments the model asked for: it hears what ran.
            text = f"{_edit_note(call)}\n{text}"
        message = Message(role="tool", content=text, tool_call_id=call["id"], name=call["name"])
        if result.get("media"):
            # What the Agent's tool box admitted for the model; the text describes them too.
            message["media"] = list(result["media"])
        self.update["messages"].append(message)
        self.update["results"].append(
            ToolOutcome(iteration=self.iteration, call=call, result=result)
        )
        found = issue_from_result(call, result)
        if found is not None:
            self.update["issues"].append(found)
        line = TraceEvent(
            stage="act",
            iteration=self.iteration,
            tool=call["name"],
            status=result["status"],
            detail=str(result.get("summary") or text)[:200],
        )
        if "edited_from" in call:  # the timeline says whose arguments ran
            line["detail"] = f"edited by a person's plan; {line['detail']}"[:200]
        rule = self.allowed.get(call["id"])
        if rule is not None:  # which rule let this call through, in the trace and the outcome
            line["detail"] = (
                f"allowed by rule {rule['id']} ({describe_rule(rule)}); {line['detail']}"[:200]
            )
            self.update["results"][-1]["rule"] = rule["id"]
        if "execution_time_ms" in result:
            line["duration_ms"] = result["execution_time_ms"]
        self.update["trace"].append(line)


def _edit_note(call: ToolCall) -> str:
    """What the model reads before the result of a call a person edited."""
    ran = canonical_args(call["args"]) or repr(call["args"])
    return f"[A person edited the arguments of this call before approving it; it ran with {ran}]"


def _finished(call: ToolCall, result: ToolResult, iteration: int) -> ToolFinished:
    """The event of a call that ended, with what its result tells (chars, K, items)."""
    duration = float(result.get("execution_time_ms", 0.0))
    telemetry = tool_telemetry(call, result)
    return ToolFinished(
        call["name"], call["id"], result["status"], duration, iteration, telemetry, call, result
    )


def _runs(verdict: Verdict) -> bool:
    """Whether the call is to run (a reuse or a rejection carries its result instead)."""
    if verdict.action in ("wait", "cancel"):
        return False
    return not (verdict.action in ("reuse", "reject") and verdict.result is not None)


def _batches(cycle: _Cycle, pending: list[PendingCall]) -> list[list[PendingCall]]:
    """The calls in order, consecutive calls of concurrent tools (subagents) grouped."""
    batches: list[list[PendingCall]] = []
    for call in pending:
        if batches and cycle.concurrent(call) and cycle.concurrent(batches[-1][0]):
            batches[-1].append(call)
        else:
            batches.append([call])
    return batches


def _code(result: ToolResult) -> object:
    return (result.get("meta") or {}).get("code")


def _labelled(context: RunContext, call: ToolCall, result: ToolResult) -> ToolResult:
    """Every result a run keeps names its tool and category, a skipped or refused one too."""
    info = context.tools.info(call["name"])
    return labelled(result, call["name"], info["category"] if info else None)


def _env(name: str) -> bool:
    return bool(os.environ.get(name))


def _approvals(context: RunContext) -> dict[str, Any]:
    approvals = dict(context.policy.approvals)
    if context.policy.unattended:
        # --yes: a person vouched for this batch run; "deny" still holds.
        approvals = {
            k: ("auto" if v in ("confirm", "approve") else v) for k, v in approvals.items()
        }
    return approvals


@stage("act")
async def act(state: RunState, *, runtime: Runtime[RunContext]) -> ActUpdate:
    """Settle every pending call: run it, keep it waiting for a plan, or cancel it."""
    cycle = _Cycle(state, runtime.context)
    started = time.perf_counter()
    for batch in _batches(cycle, state.get("pending", [])):
        await cycle.settle(batch)
    update = cycle.update
    if cycle.answered and not update["pending"]:
        # The gate deferred the plans' instructions so tool results directly follow their call.
        update["messages"] += [
            Message(role="user", content=text, kind="plan")
            for text in _deferred_instructions(state, cycle.iteration)
        ]
    update["resolving"] = False
    if not update["trace"]:
        update["trace"] = [
            TraceEvent(
                stage="act",
                iteration=cycle.iteration,
                status="skipped",
                duration_ms=round((time.perf_counter() - started) * 1000, 3),
            )
        ]
    return update
