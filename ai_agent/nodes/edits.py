"""A person's edits of waiting calls: approve a call with the arguments they wrote instead.

A plan's ``edit_args`` names calls of the gate report and the whole arguments to run each with.
It is checked where the plan arrives (`check_edits`, beside ``check_plan``): every edited call
is one the report shows, and its new arguments fit the tool's schema, or the plan is refused
with each problem named by its field (``edit_args.c1.1.path: ...``) and the run stays paused.
The gate then applies it (`edit_pending`): the waiting call carries the new arguments, and the
model's in ``edited_from``, so the state's results, the history and the export show both; the
grant the approval creates binds to the digest of the arguments that will run, so act runs the
edited call and nothing else. An edit is data in the plan, recorded with the run: a replay
applies the same edit to the same call, offline.
"""

from __future__ import annotations

from ai_agent.context import ToolBox
from ai_agent.errors import InvalidPlanError
from ai_agent.state import GateReport, PendingCall, UserPlan
from ai_agent.tools.policy import edited_call

__all__ = ["check_edits", "edit_pending"]


def check_edits(plan: UserPlan, report: GateReport, tools: ToolBox) -> None:
    """Refuse a plan whose edited arguments do not fit their tools' schemas.

    Calls the report does not show are ``check_plan``'s to name; this checks the arguments of
    the ones it does, as the act stage would before running them.

    Raises:
        InvalidPlanError: naming each problem by its field (``edit_args.CALL.FIELD``).
    """
    if not plan.edit_args:
        return
    shown = {p["call"]["id"]: p["call"] for p in report["pending"]}
    problems: list[str] = []
    for call_id, args in plan.edit_args.items():
        call = shown.get(call_id)
        if call is None:
            continue
        where = f"edit_args.{call_id}"  # the arguments are JSON data: the plan's model says so
        if tools.info(call["name"]) is None:
            problems.append(f"{where}: no tool {call['name']!r} to check the arguments against")
            continue
        review = tools.review(edited_call(call, args))
        problems += [f"{where}.{p}" for p in review["problems"]]
    if problems:
        raise InvalidPlanError(
            "invalid plan: "
            + "; ".join(problems)
            + ". The edited arguments do not fit the tool's schema; fix them and answer again "
            "(the run is still paused)"
        )


def edit_pending(pending: list[PendingCall], plan: UserPlan, tools: ToolBox) -> list[PendingCall]:
    """The waiting calls with the plan's edits applied, each with the preview of its new form."""
    out: list[PendingCall] = []
    for waiting in pending:
        args = plan.edit_args.get(waiting["call"]["id"])
        if args is None:
            out.append(waiting)
            continue
        call = edited_call(waiting["call"], args)
        changed = PendingCall(**waiting)
        changed["call"] = call
        changed["preview"] = tools.preview(call)
        out.append(changed)
    return out
