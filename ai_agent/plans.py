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

import re
from typing import Any

from pydantic import ValidationError

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
    _check_text(plan)
    if max_chars is not None:
        check_size(plan, max_chars)
    return plan


def _parse(value: Any) -> UserPlan:
    try:
        return UserPlan.model_validate(value)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'plan'}: {e['msg']}" for e in exc.errors()
        )
        raise InvalidPlanError(f"invalid plan: {problems}") from None


# Half of a character: JSON's "\ud800" reads as it, and no UTF-8 text (a checkpoint, a file
# a tool writes, the run store) can hold it.
_HALF = re.compile("[\ud800-\udfff]")


def _check_text(plan: UserPlan) -> None:
    """InvalidPlanError naming the field of a plan that holds a lone surrogate.

    Without this, the first thing that writes the plan (its size check, the checkpoint, the
    digest its approvals bind to) fails with an encoding error that names nothing.
    """
    where = _split_at(plan.model_dump(), "")
    if where is not None:
        raise InvalidPlanError(
            f"invalid plan: {where or 'plan'} holds half of a character (a lone surrogate, "
            "such as JSON's \\ud800 written alone), which no text can store; write the whole "
            "character. The run is still paused"
        )


def _split_at(value: Any, where: str) -> str | None:
    """Where in ``value`` (a dotted path) a lone surrogate is, or None."""
    if isinstance(value, str):
        return where if _HALF.search(value) else None
    items: list[tuple[Any, Any]] = []
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, list):
        items = list(enumerate(value))
    for key, item in items:
        # The path is printed: a half character in a key is shown as its escape.
        shown = _HALF.sub(lambda m: f"\\u{ord(m.group()):04x}", str(key))
        inner = f"{where}.{shown}" if where else shown
        if shown != str(key):
            return inner
        found = _split_at(item, inner)
        if found is not None:
            return found
    return None


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
