"""gate: score this cycle's issues; at or over the threshold, get a person's plan before going on.

The plan comes from the ``query_user_plan`` hook when one is given (answered in-process), else the
run pauses with one interrupt carrying the whole GateReport, and ``Agent.resume`` delivers the plan
later, from any process. LangGraph re-runs this node from its first line on resume, so nothing
before the interrupt has side effects: scoring is a pure function of state. A plan is read where it
arrives (`ai_agent.plans.read_plan`): a resume hands this node a `PlanAnswer`, read and checked
against this gate's report already, which it takes as it is; a hook's answer, or the plain dict a
resume of an older ai-agent stored, is read and checked here.

Each report carries a token (`gate_token`) naming this gate of this run. It is a pure function of
state too (the run's random nonce, the thread, the cycle and how many plans the run has had), so
the report the re-run computes carries the very token the person was handed. Grants record the
token of the gate they answered, and a plan that arrives through the queue must carry the token of
the paused gate's report (`check_token`): a plan written by anything that did not read that
report is refused.
"""

from __future__ import annotations

import hashlib
import hmac
import math
from collections.abc import Iterable
from typing import Any, Literal, TypedDict

from langgraph.runtime import Runtime
from langgraph.types import interrupt

from ai_agent.context import RunContext
from ai_agent.errors import HookError, InvalidPlanError, PlanRefusedError
from ai_agent.events import GateResumed
from ai_agent.issues import KINDS
from ai_agent.nodes._common import call_hook, hook_issue, hook_view, stage
from ai_agent.nodes._release import let_go
from ai_agent.nodes._rollup import child_usage
from ai_agent.nodes.edits import check_edits, edit_pending
from ai_agent.observability.scopes import note_gate_plan
from ai_agent.plans import PlanAnswer, read_plan
from ai_agent.state import (
    GateReport,
    Grant,
    Issue,
    Message,
    PendingCall,
    PlanRecord,
    Replace,
    RunState,
    RunStatus,
    ToolResult,
    TraceEvent,
    UsageRecord,
    UserPlan,
)
from ai_agent.tools.policy import CANCELLED, grants_for

__all__ = [
    "GateUpdate",
    "build_report",
    "check_plan",
    "check_token",
    "gate",
    "gate_token",
]


class GateUpdate(TypedDict, total=False):
    """What the gate stage writes to the run state."""

    gate: GateReport
    issues: Replace
    plans: list[PlanRecord]
    grants: list[Grant]
    active_tools: list[str]
    pending: list[PendingCall]
    messages: list[Message]
    resolving: bool
    status: RunStatus
    stop_reason: str | None
    trace: list[TraceEvent]
    usage: dict[str, Any]
    usage_log: list[UsageRecord]


def _options(issues: list[Issue], pending: list[PendingCall], catalog: set[str]) -> list[str]:
    """What a plan can do: settle each waiting call, then each kind's advice (`KINDS`)."""
    options: list[str] = []
    for p in pending:
        call, spec = p["call"], KINDS.get(p["blocked"]) if p["blocked"] else None
        resolves = spec.resolves if spec is not None else None
        if resolves == "activate" and call["name"] in catalog:
            options.append(f"activate {call['name']} (--activate {call['name']})")
        elif resolves == "approve":
            options.append(f"approve {call['id']} (--approve {call['id']})")
    # A kind this engine does not know (stored by another version) has no advice to give.
    advice = [
        KINDS[c].advice if c in KINDS else None for c in dict.fromkeys(i["code"] for i in issues)
    ]
    options += [a for a in advice if a]
    options.append("continue with instructions (--plan '...')")
    options.append("stop the run (--deny)")
    return list(dict.fromkeys(options))


def _inside(text: str) -> str:
    """Text of several lines inside one entry of the prompt: its later lines indented under it.

    Issue messages quote tool output and previews quote commands; a line of theirs must not
    pass for a line of the prompt (another issue, another call, how to resume).
    """
    return text.replace("\n", "\n    ")


def _prompt(thread_id: str, report: GateReport) -> str:
    lines = [
        f"Run {thread_id} paused at iteration {report['iteration']}: "
        f"severity {report['severity']:.2f} is at or over the threshold {report['threshold']:.2f}."
    ]
    lines += [
        f"  [{i['code']} {i['severity']:.2f}] {_inside(i['message'])}" for i in report["issues"]
    ]
    if report["pending"]:
        lines.append("Calls waiting for a decision:")
        lines += [
            f"  {p['call']['id']}: {_inside(p['preview'])} ({p['blocked']})"
            for p in report["pending"]
        ]
    lines.append(f"Resume with: ai-agent resume {thread_id} --plan '...' (or --deny to stop)")
    return "\n".join(lines)


def _token(nonce: str, thread_id: str, iteration: int, answered: int) -> str:
    blob = f"{nonce}\n{thread_id}\n{iteration}\n{answered}"
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def gate_token(state: RunState, thread_id: str) -> str:
    """The token of the gate this state is at.

    Distinct for every gate of a run: two gates of one cycle differ in the number of plans the
    run had (each gate that intervenes ends with one more). Without the run's nonce (a run from
    before gate tokens, until its next draft) it still names the gate, but anyone could compute
    it, so the queue refuses plans for such a gate (`check_token`).

    Examples:
        >>> state = {"gate_nonce": "n", "iteration": 2, "plans": []}
        >>> gate_token(state, "t") == gate_token(state, "t") != gate_token(state, "u")
        True
    """
    answered = len(state.get("plans") or [])
    return _token(state.get("gate_nonce") or "", thread_id, state.get("iteration", 0), answered)


def _earlier_gate(state: RunState, thread_id: str, token: str) -> int | None:
    """The cycle of an earlier gate of this run whose token this is, if any."""
    nonce = state.get("gate_nonce") or ""
    for answered, record in enumerate(state.get("plans") or []):
        if hmac.compare_digest(token, _token(nonce, thread_id, record["iteration"], answered)):
            return record["iteration"]
    return None


def build_report(
    state: RunState, *, thread_id: str, threshold: float, catalog: Iterable[str]
) -> GateReport:
    """Score the cycle's issues against the threshold (the built-in evaluator)."""
    issues = list(state.get("issues", []))
    pending = [p for p in state.get("pending", []) if p["blocked"]]
    severity = max((i["severity"] for i in issues), default=0.0)
    report = GateReport(
        iteration=state.get("iteration", 0),
        issues=issues,
        severity=severity,
        threshold=threshold,
        intervene=bool(issues) and severity >= threshold,
        prompt="",
        options=_options(issues, pending, set(catalog)),
        pending=pending,
        token=gate_token(state, thread_id),
    )
    report["prompt"] = _prompt(thread_id, report) if report["intervene"] else ""
    return report


def check_plan(plan: UserPlan, report: GateReport, catalog: Iterable[str]) -> None:
    """Check a plan against the report it answers; raise InvalidPlanError naming each problem."""
    ids = {p["call"]["id"] for p in report["pending"]}
    known = set(catalog)
    problems = [
        f"no pending call {i!r}" for i in [*plan.approve, *plan.deny] if i != "*" and i not in ids
    ]
    problems += [f"edit_args: no pending call {i!r}" for i in plan.edit_args if i not in ids]
    problems += [f"no tool {t!r} in the catalog" for t in plan.activate_tools if t not in known]
    both = (set(plan.approve) & set(plan.deny)) - {"*"}
    problems += [f"call {i!r} is both approved and denied" for i in sorted(both)]
    edited_denied = set(plan.edit_args) & (ids if "*" in plan.deny else set(plan.deny))
    problems += [f"call {i!r} is both edited and denied" for i in sorted(edited_denied)]
    if problems:
        choices = ", ".join(sorted(ids)) or "none"
        raise InvalidPlanError(
            "invalid plan: " + "; ".join(problems) + f". Pending calls: {choices}."
        )


def check_token(
    plan: UserPlan, report: GateReport, state: RunState, thread_id: str, *, required: bool
) -> None:
    """Refuse a plan whose gate token is not the one the paused gate's report handed out.

    ``report`` must be the paused checkpoint's interrupt value, never anything a plan's author
    could write. A plan without a token passes unless ``required`` (the queue requires it: a
    person resuming a run directly needs none).

    Raises:
        PlanRefusedError: the token is missing, is that of an earlier gate (stale), or was
            never handed out; or the report cannot vouch for any token (an older ai-agent's).
    """
    given, expected = plan.gate_token, report.get("token")
    if given is None and not required:
        return
    if expected is None or (required and not state.get("gate_nonce")):
        raise PlanRefusedError(
            f"run {thread_id} is paused at a gate of an older ai-agent, whose report hands out "
            "no gate token; resume it directly (ai-agent resume THREAD ...) without a token"
        )
    if given is None:
        raise PlanRefusedError(
            "the plan carries no gate token, so nothing shows it was written by someone who saw "
            f"the gate report of run {thread_id}; queue plans with Agent.submit_plan or "
            "`ai-agent resume THREAD --queue`, which attach the token of the paused gate"
        )
    if hmac.compare_digest(given, expected):
        return
    earlier = _earlier_gate(state, thread_id, given)
    if earlier is not None:
        raise PlanRefusedError(
            f"the plan is stale: its gate token is that of an earlier gate (cycle {earlier}) of "
            f"run {thread_id}; the run has moved on and waits at another gate now; read its "
            "report (ai-agent show THREAD) and queue a plan for that one"
        )
    raise PlanRefusedError(
        f"the plan's gate token is not the one the gate report of run {thread_id} handed out, "
        "so it was not written by someone who saw that report; queue plans with "
        "Agent.submit_plan or `ai-agent resume THREAD --queue`"
    )


def _cancel_messages(pending: list[PendingCall], why: str) -> list[Message]:
    return [
        Message(role="tool", content=why, tool_call_id=p["call"]["id"], name=p["call"]["name"])
        for p in pending
    ]


async def _let_go_of_children(state: RunState, context: RunContext, update: GateUpdate) -> None:
    """The held calls this gate cancels: their children are cancelled and counted (_release)."""
    total = state.get("usage")
    records: list[UsageRecord] = []
    for pending in state.get("pending", []):
        if not pending["blocked"]:
            continue
        spent = await let_go(context, pending)
        rolled = child_usage(ToolResult(status="skipped", meta={"child_usage": spent}), total,
                             state.get("iteration", 0)) if spent else None  # fmt: skip
        if rolled is not None:
            total, record = rolled
            records.append(record)
    if records:
        update["usage"], update["usage_log"] = dict(total or {}), records


def _pass(state: RunState, report: GateReport, max_iterations: int) -> GateUpdate:
    """No intervention. Calls that were waiting for a person cannot run: cancel them."""
    waiting = [p for p in state.get("pending", []) if p["blocked"]]
    update = GateUpdate(gate=report, issues={"replace": []}, pending=[])
    if waiting:
        update["messages"] = _cancel_messages(waiting, f"{CANCELLED}: nobody approved it")
    if state.get("iteration", 0) >= max_iterations:
        update["stop_reason"] = "max_iterations"
    return update


def _apply(
    state: RunState,
    report: GateReport,
    plan: UserPlan,
    source: Literal["resume", "hook"],
    context: RunContext,
) -> GateUpdate:
    iteration = state.get("iteration", 0)
    waiting = [p for p in state.get("pending", []) if p["blocked"]]
    update = GateUpdate(
        gate=report,
        issues={"replace": []},
        plans=[PlanRecord(iteration=iteration, plan=plan.model_dump(), source=source)],
    )
    if not plan.allow_continue:
        update["status"] = "cancelled"
        update["pending"] = []
        update["stop_reason"] = "cancelled by plan"
        update["messages"] = _cancel_messages(waiting, CANCELLED)
        return update
    # An approval reaches the calls of this report only ("*" included), each as it was shown:
    # its engine id and the digest of its arguments, at this gate of this run. An edited call
    # is approved as the person wrote it: the grant binds to the arguments that will run.
    shown = edit_pending(report["pending"], plan, context.tools)
    approved = [
        p["call"]
        for p in shown
        if "*" in plan.approve
        or p["call"]["id"] in plan.approve
        or p["call"]["id"] in plan.edit_args
    ]
    token = gate_token(state, context.thread_id)  # the report's, recomputed from the same state
    grants = list(state.get("grants", []))
    grants += [
        grants_for(c, plan.grant_scope, thread_id=context.thread_id, gate=token) for c in approved
    ]
    active = list(state.get("active_tools", []))
    active += [t for t in plan.activate_tools if t not in active]
    update["grants"] = grants
    update["active_tools"] = active
    if plan.edit_args:
        update["pending"] = edit_pending(list(state.get("pending", [])), plan, context.tools)
    if waiting:
        update["resolving"] = True  # act settles the waiting calls, then adds the instructions
        return update
    if plan.instructions:
        update["messages"] = [Message(role="user", content=plan.instructions, kind="plan")]
    if iteration >= context.policy.max_iterations:
        update["stop_reason"] = "max_iterations"
    return update


def _resumed(iteration: int, source: str, plan: UserPlan, taken: dict[str, Any]) -> GateResumed:
    """The event of a plan the gate took (``taken``: the plan as recorded)."""
    return GateResumed(
        iteration,
        source,
        plan.allow_continue,
        tuple(plan.approve),
        tuple(plan.deny),
        tuple(plan.activate_tools),
        plan=taken,
    )


async def _evaluate(state: RunState, context: RunContext, report: GateReport) -> GateReport:
    """Let the evaluate_critical hook rescore; it may set intervene, severity and prompt."""
    hook = context.hooks.evaluate_critical
    if hook is None:
        return report
    verdict = (
        await call_hook(
            "evaluate_critical",
            hook,
            state.get("task", ""),
            [dict(i) for i in report["issues"]],
            hook_view(state, context),
        )
        or {}
    )
    out = GateReport(**report)
    try:
        if "severity" in verdict:
            out["severity"] = _finite(verdict["severity"])
        out["intervene"] = bool(verdict.get("intervene", out["severity"] >= out["threshold"]))
    except (TypeError, ValueError, AttributeError) as exc:  # not the dict the hook must give
        raise HookError("evaluate_critical", exc) from exc
    if verdict.get("prompt"):
        out["prompt"] = str(verdict["prompt"])
    elif out["intervene"] and not out["prompt"]:
        out["prompt"] = _prompt(context.thread_id, out)
    return out


def _finite(value: Any) -> float:
    """A hook's severity as a float; ValueError when it is not a finite number.

    NaN compares false with every threshold, so a hook (or the model a hook asks to rate the
    issues) answering "NaN" would open a gate an approval keeps shut; an infinite one is no
    score either, and neither can be written as JSON (the run's memory, its report).
    """
    severity = float(value)
    if not math.isfinite(severity):
        raise ValueError(f"severity must be a finite number (got {value!r})")
    return severity


def _report(state: RunState, context: RunContext, catalog: list[str], *extra: Issue) -> GateReport:
    """The gate's report on this cycle's issues (and ``extra`` ones: a hook that raised)."""
    if extra:
        state = RunState(**{**state, "issues": [*state.get("issues", []), *extra]})
    return build_report(
        state, thread_id=context.thread_id, threshold=context.policy.gate_threshold, catalog=catalog
    )


def _decided(state: RunState, context: RunContext) -> GateReport | None:
    """The paused gate's report when this resume answers this very gate, else None.

    LangGraph runs a node again from its top on resume; the person decided on the report they
    were shown, so neither ``evaluate_critical`` nor ``query_user_plan`` runs again for it (a
    hook that answered differently the second time would override the person's plan).
    """
    paused = context.answering
    # A report of an ai-agent from before gate tokens names no gate: it is evaluated again, as
    # that engine did (its grants bind to the token the gate computes now).
    if paused is None or "token" not in paused:
        return None
    return paused if paused["token"] == gate_token(state, context.thread_id) else None


@stage("gate")
async def gate(state: RunState, *, runtime: Runtime[RunContext]) -> GateUpdate:
    """Score issues; pass, or intervene: ask ``query_user_plan``, else pause for a plan."""
    context = runtime.context
    catalog = [t["name"] for t in context.tools.catalog()]
    decided = _decided(state, context)
    if decided is not None:
        report = decided  # what the person answered: not evaluated again
    else:
        report = _report(state, context, catalog)
        try:
            evaluated = await _evaluate(state, context, report)
        except HookError as exc:  # the built-in scoring, and the person hears of the hook
            evaluated = _report(state, context, catalog, hook_issue(exc))
        # Masked before anyone sees it: the interrupt's payload is stored with the checkpoint.
        report = context.scrub(evaluated)
    limit = context.policy.max_iterations
    line = TraceEvent(stage="gate", iteration=report["iteration"], gate_score=report["severity"])
    if not report["intervene"]:
        update = _pass(state, report, limit)
        await _let_go_of_children(state, context, update)
        line["status"] = "pass"
        line["detail"] = ", ".join(i["code"] for i in report["issues"])
        update["trace"] = [line]
        return update
    source: Literal["resume", "hook"] = "hook"
    raw = None
    if decided is None and context.hooks.query_user_plan is not None:
        try:
            raw = await call_hook(
                "query_user_plan",
                context.hooks.query_user_plan,
                state.get("task", ""),
                dict(report),
                hook_view(state, context),
            )
        except HookError as exc:  # no answer in-process: a person answers, told why
            report = context.scrub(_report(state, context, catalog, hook_issue(exc)))
    if raw is None:
        source = "resume"
        raw = interrupt(report)  # the one pause of this step; the plan is the resume value
    plan = read_plan(raw)  # typed where it arrived: a resume's plan is not read again
    if not isinstance(raw, PlanAnswer):  # a resume checked its plan against this very report
        check_plan(plan, report, catalog)
        check_edits(plan, report, context.tools)
    taken = plan.model_dump()
    note_gate_plan(report, taken, source)
    context.emit(_resumed(report["iteration"], source, plan, taken))
    update = _apply(state, report, plan, source, context)
    if not plan.allow_continue:
        await _let_go_of_children(state, context, update)
    line["status"] = "plan" if plan.allow_continue else "cancelled"
    line["detail"] = ", ".join(i["code"] for i in report["issues"])
    update["trace"] = [line]
    return update
