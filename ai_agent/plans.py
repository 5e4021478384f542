"""A person's plan, read once where it arrives: `read_plan` turns it into a `UserPlan`.

A plan arrives at a few boundaries: ``Agent.resume`` and ``Agent.submit_plan`` from Python, the
command line's ``--plan`` and ``--plan-file``, the worker's queue, a replay's recorded plans, the
``query_user_plan`` hook. Each reads it with `read_plan`, which parses and validates it (and
checks its size against ``max_plan_chars`` where the caller knows the setting: `check_size`);
from there on the plan travels typed. A resume hands it to the paused gate as a `PlanAnswer`,
the value of ``Command(resume=...)``: the checkpoint stores it as the plain dict it is (data,
never a class reference), and the gate, in the same process, takes the typed plan it carries
without reading it again. A resume value stored by an older ai-agent, a plain dict, is read by
the same `read_plan`.

Examples:
    >>> read_plan({"instructions": "use the backup"}).instructions
    'use the backup'
    >>> answer = PlanAnswer(read_plan({"approve": ["*"]}))
    >>> answer["approve"], read_plan(answer) is answer.plan
    (['*'], True)
    >>> read_plan({"approve": "c1"})
    Traceback (most recent call last):
    ...
    ai_agent.errors.InvalidPlanError: invalid plan: approve: Input should be a valid list
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ai_agent.datafiles import unstorable_at
from ai_agent.errors import InvalidPlanError
from ai_agent.state import GateReport, UserPlan

__all__ = ["PlanAnswer", "check_size", "read_plan"]


class PlanAnswer(dict[str, Any]):
    """A plan that answers a paused gate, checked against that gate's report.

    It is the plan's dict (what the checkpoint stores: a plain dict, like the resume value of an
    older ai-agent) and carries the typed plan (``plan``) it was made from, and the report of the
    gate it answers (``report``), which the gate then takes as decided.
    """

    def __init__(self, plan: UserPlan, report: GateReport | None = None) -> None:
        super().__init__(plan.model_dump())
        self.plan = plan
        self.report = report


def read_plan(value: Any, *, max_chars: int | None = None) -> UserPlan:
    """The plan in ``value``, parsed and validated once; a typed plan is taken as it is.

    Args:
        value: A `UserPlan`, a `PlanAnswer`, or a dict (any JSON-able value) of a plan.
        max_chars: The ``max_plan_chars`` setting, when the caller knows it: `check_size`.

    Raises:
        InvalidPlanError: the value is not a plan (naming each problem), or is too long.
    """
    if isinstance(value, PlanAnswer):
        value = value.plan
    plan = value if isinstance(value, UserPlan) else _parse(value)
    _check_values(plan)
    if max_chars is not None:
        check_size(plan, max_chars)
    return plan


def _parse(value: Any) -> UserPlan:
    try:
        return UserPlan.model_validate(value)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'plan'}: {_problem(e)}" for e in exc.errors()
        )
        raise InvalidPlanError(f"invalid plan: {problems}") from None


def _problem(error: Any) -> str:
    """Pydantic's message, or for a gate token that is none, what a token is and where from."""
    if tuple(error["loc"]) == ("gate_token",) and error["type"] == "string_pattern_mismatch":
        return (
            "not a gate token (32 hexadecimal digits, the 'token' of the gate report); leave "
            "it out: Agent.submit_plan and `ai-agent resume THREAD --queue` attach the paused "
            "gate's"
        )
    return str(error["msg"])


def _check_values(plan: UserPlan) -> None:
    """InvalidPlanError naming the field of a plan that holds a value no store can keep.

    A lone surrogate, NaN or Infinity (no JSON number: the queue's rows are strict JSON), or a
    whole number past 64 bits. Without this, the first thing that writes the plan (its size
    check, the checkpoint, the queue, the digest its approvals bind to) fails with an error
    that names nothing: a resume's internal error, or a queued plan no worker can apply.
    """
    found = unstorable_at(plan.model_dump())
    if found is not None:
        where, problem = found
        raise InvalidPlanError(
            f"invalid plan: {where or 'plan'} {problem}. The run is still paused"
        )


def check_size(plan: UserPlan, limit: int) -> None:
    """InvalidPlanError for a plan longer than ``limit`` (``max_plan_chars``); the run stays paused.

    A plan is kept in the checkpoints, in the conversation and in the recorded requests: the
    limit keeps a mistaken paste (a log file as instructions) from filling the database.
    """
    # The gate token is the engine's, attached on the way to the queue: count what was written.
    size = len(plan.model_dump_json(exclude={"gate_token"}))
    if size > limit:
        raise InvalidPlanError(
            f"the plan is {size:,} characters long, more than the {limit:,} allowed "
            "(max_plan_chars); shorten it (point to a file instead of pasting it), or raise "
            "the setting. The run is still paused"
        )
