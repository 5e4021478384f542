"""Call screening: each rule on its own, as a pure function over data."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, cast

import pytest

from ai_agent.checkpoints.versions import upgrade_state
from ai_agent.context import ToolInfo
from ai_agent.state import Grant, ToolCall
from ai_agent.tools.policy import (
    CANCELLED,
    CallFacts,
    approved_at,
    args_hash,
    canonical_args,
    grants_for,
    is_granted,
    screen_call,
    spend,
)

CALL: ToolCall = {"id": "c1", "name": "web", "args": {"q": "x"}}
APPROVALS: dict[str, Any] = {
    "read_only": "auto",
    "note_taking": "auto",
    "modification": "approve",
    "external": "confirm",
}


def info(category: str) -> ToolInfo:
    return ToolInfo(name="web", description="d", category=category, requires_env=[], parameters={})


def facts(category: str = "external", **kw: Any) -> CallFacts:
    base = CallFacts(
        call=CALL,
        info=info(category),
        active=["web"],
        grants=[],
        approvals=APPROVALS,
        missing_env=[],
        journal=None,
        answered=False,
        approved=False,
        denied=False,
    )
    return replace(base, **kw)


def test_the_first_schema_violation_asks_the_model_to_repair_the_call() -> None:
    verdict = screen_call(facts(problems=["q: Field required"]))
    assert verdict.action == "reject" and verdict.code is None
    assert verdict.result is not None
    assert verdict.result["meta"]["retry"] is True
    assert verdict.result["error"] == (
        "SchemaViolation: the arguments for web do not match its schema: q: Field required. "
        "Call web again with corrected arguments."
    )


def test_the_second_schema_violation_is_an_error_for_the_gate() -> None:
    verdict = screen_call(facts(problems=["q: Field required"], repair_used=True))
    assert verdict.action == "reject" and verdict.code == "TOOL_ERROR"
    assert "invalid arguments again after being told what was wrong" in verdict.message
    assert verdict.result is not None and verdict.result["meta"]["retry"] is False


def test_schema_problems_are_checked_before_approval_and_denial() -> None:
    assert screen_call(facts(problems=["x"], denied=True, answered=True)).action == "reject"


@pytest.mark.parametrize(
    ("policy", "first_use", "action", "message"),
    [
        ("auto", True, "wait", "web is an external tool and this is its first use in this run"),
        ("auto", False, "run", ""),
        ("confirm", False, "wait", "web is an external tool and needs confirmation"),
        ("approve", False, "wait", "web is an external tool and needs approval"),
        ("deny", True, "cancel", f"{CANCELLED}: the policy denies external tools"),
    ],
)
def test_external_policies_and_the_first_time_gate(
    policy: str, first_use: bool, action: str, message: str
) -> None:
    approvals = {**APPROVALS, "external": policy}
    verdict = screen_call(facts(approvals=approvals, first_use=first_use))
    assert verdict.action == action
    assert message in verdict.message
    if action == "wait":
        assert verdict.code == "APPROVAL_REQUIRED"


def test_the_first_time_gate_is_only_for_external_tools_and_can_be_turned_off() -> None:
    auto = {**APPROVALS, "external": "auto"}
    assert screen_call(facts("read_only", first_use=True)).action == "run"
    assert screen_call(facts(approvals=auto, first_use=True, first_use_gate=False)).action == "run"


def test_escalations_wait_even_under_auto_and_name_their_reason() -> None:
    verdict = screen_call(facts("read_only", escalation="destructive: rm -rf x"))
    assert (verdict.action, verdict.message) == ("wait", "destructive: rm -rf x")
    both = screen_call(facts("modification", escalation="destructive: rm x"))
    assert both.message == "web is a modification tool and needs approval; destructive: rm x"
    after_plan = screen_call(facts("read_only", escalation="x", answered=True))
    assert (after_plan.action, after_plan.message) == ("cancel", CANCELLED)


def test_unattended_mode_waives_everything_but_deny() -> None:
    auto = {**APPROVALS, "external": "auto"}
    assert screen_call(facts(approvals=auto, first_use=True, unattended=True)).action == "run"
    assert screen_call(facts("read_only", escalation="x", unattended=True)).action == "run"
    denied = {**APPROVALS, "external": "deny"}
    assert screen_call(facts(approvals=denied, unattended=True)).action == "cancel"


def test_note_taking_confirmation_is_optional_by_policy() -> None:
    assert screen_call(facts("note_taking")).action == "run"
    confirm = {**APPROVALS, "note_taking": "confirm"}
    verdict = screen_call(facts("note_taking", approvals=confirm))
    assert verdict.message == "web is a note_taking tool and needs confirmation"


RUN = "thread-1"


def grant(scope: Any, call: ToolCall = CALL, **kw: Any) -> Grant:
    made: Any = {**grants_for(call, scope, thread_id=RUN, gate="g1"), **kw}
    return cast(Grant, made)


def test_a_grant_covers_the_call_it_was_shown_at_any_scope() -> None:
    for scope in ("call", "args", "tool"):
        assert is_granted(CALL, [grant(scope)], thread_id=RUN, tool_wide=False)
        assert grant(scope)["call_id"] == "c1"
        assert grant(scope)["args_hash"] == args_hash(CALL["args"])


def test_tool_wide_grants_can_be_ignored_for_escalated_calls() -> None:
    later: ToolCall = {"id": "c2", "name": "web", "args": {"q": "x"}}
    assert is_granted(later, [grant("tool")], thread_id=RUN)
    assert not is_granted(later, [grant("tool")], thread_id=RUN, tool_wide=False)
    assert is_granted(later, [grant("args")], thread_id=RUN, tool_wide=False)
    assert not is_granted(later, [grant("call")], thread_id=RUN)
    other: ToolCall = {"id": "c3", "name": "web", "args": {"q": "y"}}
    assert not is_granted(other, [grant("args"), grant("call")], thread_id=RUN, tool_wide=False)


def test_a_call_grant_binds_to_the_call_id_and_its_arguments() -> None:
    swapped: ToolCall = {"id": "c1", "name": "web", "args": {"q": "rm -rf"}}
    assert not is_granted(swapped, [grant("call")], thread_id=RUN)
    renamed: ToolCall = {"id": "c1", "name": "shell", "args": {"q": "x"}}
    assert not is_granted(renamed, [grant("call")], thread_id=RUN)


def test_grants_never_reach_another_run_and_old_grants_cover_nothing() -> None:
    for scope in ("call", "args", "tool"):
        assert not is_granted(CALL, [grant(scope)], thread_id="thread-2")
    legacy: Any = {"tool": "web", "scope": "tool", "call_id": None, "args_hash": None}
    assert not is_granted(CALL, [legacy], thread_id=RUN)
    (upgraded,) = upgrade_state({"grants": [legacy]}, 1)["grants"]
    assert (upgraded["thread_id"], upgraded["gate"], upgraded["spent"]) == (None, None, False)
    assert not is_granted(CALL, [upgraded], thread_id=RUN)
    assert not is_granted(CALL, [grant("tool")], thread_id="")
    assert upgrade_state({"task": "t"}, 1) == {"task": "t"}


def test_a_call_grant_is_spent_by_its_run_and_the_broader_ones_are_not() -> None:
    grants = [grant("call"), grant("tool"), grant("call", thread_id="thread-2")]
    spent = spend(CALL, grants, thread_id=RUN)
    assert spent is not None
    assert [g["spent"] for g in spent] == [True, False, False]
    assert not is_granted(CALL, spent[:1], thread_id=RUN)
    assert spend(CALL, spent, thread_id=RUN) is None  # nothing left to spend
    assert spend(CALL, [grant("tool")], thread_id=RUN) is None


def test_an_approval_at_a_gate_is_that_gates_only() -> None:
    grants = [grant("call")]
    assert approved_at(CALL, grants, thread_id=RUN, gate="g1")
    assert not approved_at(CALL, grants, thread_id=RUN, gate="g2")
    assert not approved_at(CALL, grants, thread_id="thread-2", gate="g1")
    assert not approved_at(CALL, [grant("call", spent=True)], thread_id=RUN, gate="g1")


def test_the_argument_digest_is_canonical_and_never_confuses_json_with_objects() -> None:
    from pathlib import PurePosixPath

    assert canonical_args({"b": 1, "a": {"y": [1.5, None], "x": True}}) == (
        '{"a": {"x": true, "y": [1.5, null]}, "b": 1}'
    )
    assert args_hash({"b": 1, "a": 2}) == args_hash({"a": 2, "b": 1})
    assert canonical_args({"p": PurePosixPath("x")}) is None
    assert canonical_args({"k": {1: "a"}}) is None
    assert canonical_args({"t": (1, 2)}) is None
    assert args_hash({"p": PurePosixPath("x")}) != args_hash({"p": "x"})
    assert args_hash({"k": {1: "a"}}) != args_hash({"k": {"1": "a"}})
    assert args_hash({"t": (1, 2)}) != args_hash({"t": [1, 2]})
    assert args_hash({"p": PurePosixPath("x")}) == args_hash({"p": PurePosixPath("x")})


def test_an_unknown_outcome_is_never_rerun_on_an_earlier_approval() -> None:
    """Grants and approvals from before a crash do not approve running the call again."""
    entry: Any = {
        "call_id": "c1",
        "tool": "web",
        "status": "intent",
        "result": None,
        "attempt": 5.0,
    }
    for stale in (
        facts("modification", journal=entry, grants=[grant("tool")], approved=True),
        facts("modification", journal=entry, answered=True, approved=True),
        facts("modification", journal=entry, unattended=True),
    ):
        verdict = screen_call(stale)
        assert (verdict.action, verdict.code, verdict.attempt) == ("wait", "UNKNOWN_OUTCOME", 5.0)
    rerun = facts("modification", journal=entry, answered=True, approved=True, rerun_approved=True)
    assert screen_call(rerun).action == "run"
    declined = screen_call(facts("modification", journal=entry, answered=True))
    assert declined.action == "cancel" and CANCELLED in declined.message
    assert screen_call(facts("read_only", journal=entry)).action == "run"
    done = {**entry, "status": "done", "result": {"status": "ok", "content": 1}}
    assert screen_call(facts("modification", journal=done)).action == "reuse"
