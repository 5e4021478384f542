"""Call screening: each rule on its own, as a pure function over data."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from ai_agent.context import ToolInfo
from ai_agent.state import ToolCall
from ai_agent.tools.policy import CANCELLED, CallFacts, grants_for, is_granted, screen_call

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


def test_tool_wide_grants_can_be_ignored_for_escalated_calls() -> None:
    tool_grant = grants_for(CALL, "tool")
    call_grant = grants_for(CALL, "call")
    args_grant = grants_for(CALL, "args")
    assert is_granted(CALL, [tool_grant])
    assert not is_granted(CALL, [tool_grant], tool_wide=False)
    assert is_granted(CALL, [call_grant], tool_wide=False)
    assert is_granted(CALL, [args_grant], tool_wide=False)
    other: ToolCall = {"id": "c2", "name": "web", "args": {"q": "y"}}
    assert not is_granted(other, [args_grant, call_grant], tool_wide=False)


def test_an_unknown_outcome_is_never_rerun_on_an_earlier_approval() -> None:
    """Grants and approvals from before a crash do not approve running the call again."""
    entry: Any = {
        "call_id": "c1",
        "tool": "web",
        "status": "intent",
        "result": None,
        "attempt": 5.0,
    }
    grant = grants_for(CALL, "tool")
    for stale in (
        facts("modification", journal=entry, grants=[grant], approved=True),
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
