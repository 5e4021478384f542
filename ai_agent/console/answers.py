"""A person's answer in the inbox, made into a plan and queued: the same path as the CLI's queue.

The inbox's form says what to do with one paused gate (``action``): approve a waiting call (how
far the approval reaches: ``scope``), approve it with the arguments a person edited (``args``, a
JSON object, checked against the tool's schema when the plan is), reject it with a reason the
model reads, activate a tool, continue with instructions, or stop the run. `plan_of` turns that
into the plan the command line would build (``ai-agent resume THREAD --approve ID --queue``),
and `submit` reads it with `ai_agent.plans.read_plan` and queues it with ``Agent.submit_plan``:
checked against the pending gate there and then (a mistake is the person's to see at once), then
served by a worker (the console's own, or ``ai-agent worker``), which takes the run's lease, so a
browser and a command line answering at once leave one winner.

The form carries the token of the gate report the page showed. A plan that names a gate the run
has left (someone answered it first, from anywhere) is refused, never applied to the next gate.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ai_agent.datafiles import strict_loads
from ai_agent.errors import InvalidPlanError
from ai_agent.plans import read_plan

if TYPE_CHECKING:
    from ai_agent.checkpoints import PlanRecord
    from ai_agent.graph import Agent

__all__ = ["ACTIONS", "edited_args", "plan_of", "submit"]

ACTIONS = ("approve", "edit", "reject", "activate", "instruct", "stop")
SCOPES = ("call", "tool", "args")
RULE_SCOPES = ("run", "args", "tool")


def plan_of(form: Mapping[str, str]) -> dict[str, Any]:
    """The plan (as a dict) an inbox form asks for.

    Raises:
        InvalidPlanError: the form is not one of the inbox's answers (a message says which
            field to fix).

    Examples:
        >>> plan_of({"action": "reject", "call": "c1.1", "message": "use a copy", "gate": "t"})
        {'deny': ['c1.1'], 'instructions': 'use a copy', 'gate_token': 't'}
        >>> plan_of({"action": "approve", "call": "c1.1", "scope": "tool"})["grant_scope"]
        'tool'
    """
    action, message = form.get("action", ""), form.get("message", "").strip() or None
    if action not in ACTIONS:
        raise InvalidPlanError(f"unknown answer {action!r}: use one of {', '.join(ACTIONS)}")
    plan: dict[str, Any] = _decision(action, form, message)
    if form.get("gate"):
        plan["gate_token"] = form["gate"]
    return plan


def _decision(action: str, form: Mapping[str, str], message: str | None) -> dict[str, Any]:
    if action in ("approve", "reject"):
        call = _required(form, "call", f"{action} needs the id of the call it decides")
        if action == "reject":
            return {"deny": [call], "instructions": message}
        scope = form.get("scope") or "call"
        if scope not in SCOPES:
            raise InvalidPlanError(f"unknown scope {scope!r}: use one of {', '.join(SCOPES)}")
        return {"approve": [call], "grant_scope": scope, "instructions": message, **_always(form)}
    if action == "edit":
        call = _required(form, "call", "approving with edited arguments needs the call's id")
        edit = {call: edited_args(form.get("args", ""))}
        return {"edit_args": edit, "instructions": message, **_always(form)}
    if action == "activate":
        return {"activate_tools": [_required(form, "tool", "activate needs a tool's name")]}
    if action == "instruct":
        if message is None:
            raise InvalidPlanError("write the instructions the run should continue with")
        return {"instructions": message}
    return {"allow_continue": False, "instructions": message}  # stop


def _always(form: Mapping[str, str]) -> dict[str, Any]:
    """The always-allow rule an approval asks for (``always``), and its confirmation."""
    always = form.get("always") or None
    if always is None:
        return {}
    if always not in RULE_SCOPES:
        raise InvalidPlanError(
            f"unknown always-allow scope {always!r}: use one of {', '.join(RULE_SCOPES)}"
        )
    return {"always_allow": always, "confirm_always": form.get("confirm_always") == "yes"}


def edited_args(text: str) -> dict[str, Any]:
    """The arguments a person wrote in the inbox's editor: a JSON object.

    Raises:
        InvalidPlanError: not JSON, or not an object (where, in words); the tool's schema is
            checked when the plan is (``Agent.submit_plan``).

    Examples:
        >>> edited_args('{"path": "notes.txt"}')
        {'path': 'notes.txt'}
        >>> edited_args("[1]")
        Traceback (most recent call last):
        ...
        ai_agent.errors.InvalidPlanError: the edited arguments are a JSON list, not an object; ...
    """
    try:
        value = strict_loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidPlanError(
            f"the edited arguments are not JSON (line {exc.lineno}, column {exc.colno}: "
            f"{exc.msg}); write them as a JSON object"
        ) from None
    except RecursionError:
        raise InvalidPlanError("the edited arguments are nested too deeply; flatten them") from None
    except ValueError as exc:  # a key given twice, NaN, a number too long or too large to read
        raise InvalidPlanError(f"the edited arguments cannot be read: {exc}") from None
    if not isinstance(value, dict):
        raise InvalidPlanError(
            f"the edited arguments are a JSON {type(value).__name__}, not an object; write "
            'them as {"name": value, ...}'
        )
    return value


def _required(form: Mapping[str, str], name: str, problem: str) -> str:
    value = form.get(name, "").strip()
    if not value:
        raise InvalidPlanError(problem)
    return value


async def submit(agent: Agent, thread_id: str, form: Mapping[str, str]) -> PlanRecord:
    """Queue the answer of an inbox form for a paused run.

    Raises:
        InvalidPlanError: the form or the plan is wrong, or too long (``max_plan_chars``).
        PlanRefusedError: the gate the page showed is no longer the run's (answered already).
        NothingPendingError / UnknownThreadError / RunError: the run is not waiting, does not
            exist, or has an answer queued already.
    """
    plan = read_plan(plan_of(form), max_chars=agent.settings.max_plan_chars)
    return await agent.submit_plan(thread_id, plan)
