"""The stages against hostile input: what a person decided reaches the model, and a gate holds.

A plan's instructions wait until the calls it settles are answered (a tool result follows its
call); a call that waits again must not make them vanish. A severity that is not a number (an
``evaluate_critical`` hook that asks a model to rate the issues, which answers "NaN") must not
open a gate that an approval keeps shut.
"""

from __future__ import annotations

from typing import Any

import pytest

from ai_agent import Hooks, ToolCategory, UserPlan
from tests.graph.conftest import MakeAgent, call, recorder, text


async def test_a_plans_instructions_reach_the_model_when_its_call_waits_again(
    make_agent: MakeAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    log: list[dict[str, Any]] = []
    tool = recorder(log, requires_env=("HOSTILE_STAGES_KEY",))
    agent = make_agent([call("note", text="x"), text("done")], tools=[tool])
    paused = await agent.run("fetch")
    assert paused.status == "paused"
    # The person says what to do next, but has not set the key yet: the call waits again.
    again = await agent.resume(paused.thread_id, UserPlan(instructions="use the staging server"))
    assert again.status == "paused" and log == []
    monkeypatch.setenv("HOSTILE_STAGES_KEY", "set-now")
    done = await agent.resume(again.thread_id, UserPlan(instructions="and be quick"))
    assert done.status == "completed" and len(log) == 1
    messages = (await agent.get_state(done.thread_id))["messages"]
    plans = [m["content"] for m in messages if m.get("kind") == "plan"]
    assert plans == ["use the staging server", "and be quick"]
    # Each comes after the result of the call the plans settled, none between call and result.
    roles = [m["role"] for m in messages]
    assert roles == ["user", "assistant", "tool", "user", "user", "assistant"]


@pytest.mark.parametrize("severity", ["nan", float("nan"), float("inf"), "-inf"])
async def test_a_hook_severity_that_is_not_a_finite_number_does_not_open_the_gate(
    make_agent: MakeAgent, severity: object
) -> None:
    log: list[dict[str, Any]] = []
    tool = recorder(log, category=ToolCategory.MODIFICATION)

    def rate(task: str, issues: list[dict[str, Any]], view: dict[str, Any]) -> dict[str, Any]:
        return {"severity": severity} if issues else {}

    hooks = Hooks(evaluate_critical=rate)
    agent = make_agent([call("note", text="x"), text("done")], tools=[tool], hooks=hooks)
    paused = await agent.run("write")
    # The hook's answer is unusable: the built-in scoring stands, and the person hears why.
    assert paused.status == "paused" and log == []
    assert paused.gate is not None
    codes = [i["code"] for i in paused.gate["issues"]]
    assert codes == ["APPROVAL_REQUIRED", "HOOK_ERROR"]
    assert paused.gate["severity"] == 1.0
    done = await agent.resume(paused.thread_id, UserPlan(approve=["*"]))
    assert done.status == "completed" and len(log) == 1
