"""Max Tool Calls per turn: a draft's calls past ``max_tool_calls`` are answered, never dropped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ai_agent import AgentSettings
from ai_agent.errors import ConfigError
from ai_agent.testing import FunctionModel
from tests.graph.conftest import MakeAgent, recorder


def notes(*texts: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "note", "args": {"text": t}} for t in texts]}


async def test_calls_over_the_limit_are_answered_as_not_run_and_may_be_asked_again(
    make_agent: MakeAgent,
) -> None:
    log: list[dict[str, Any]] = []
    requests: list[list[dict[str, Any]]] = []

    def reply(messages: list[dict[str, Any]], info: dict[str, Any]) -> dict[str, Any]:
        requests.append(messages)
        if info["turn"] == 0:
            return notes("a", "b", "c", "d", "e")
        if info["turn"] == 1:
            return notes("d", "e")  # asks again for what was not run
        return {"text": "done"}

    agent = make_agent(
        model=FunctionModel(reply),
        tools=[recorder(log)],
        settings=AgentSettings(execute_all_tool_calls=True, max_tool_calls=3),
    )
    result = await agent.run("five notes")
    assert result.status == "completed"
    assert [e["args"]["text"] for e in log] == ["a", "b", "c", "d", "e"]
    # The second request answers every call of the first draft: three results, two refusals.
    asked = [c["id"] for c in requests[1][-6]["tool_calls"]]
    answered = {m["tool_call_id"]: m["content"] for m in requests[1] if m["role"] == "tool"}
    assert sorted(answered) == sorted(asked) and len(asked) == 5
    assert all(answered[c].startswith("noted") for c in asked[:3])
    for cid in asked[3:]:
        assert answered[cid].startswith("Not run: at most 3 tool calls run per turn")
    decided = [t for t in result.trace if t["stage"] == "decide"]
    assert decided[0]["detail"] == "3 call(s), 2 not run (limit 3 per turn)"
    assert decided[1]["detail"] == "2 call(s)"


async def test_without_execute_all_one_call_runs_whatever_the_limit(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    agent = make_agent(
        [notes("a", "b"), {"text": "done"}],
        tools=[recorder(log)],
        settings=AgentSettings(max_tool_calls=8),
    )
    result = await agent.run("two notes")
    assert [e["args"]["text"] for e in log] == ["a"]
    messages = (await agent.get_state(result.thread_id))["messages"]
    skipped = next(m for m in messages if m.get("tool_call_id") == "c1.1")
    assert skipped["content"].startswith("Skipped: one action per cycle")


def test_the_default_is_three_and_the_policy_carries_it(make_agent: MakeAgent) -> None:
    assert AgentSettings().max_tool_calls == 3
    agent = make_agent(settings=AgentSettings(max_tool_calls=5))
    assert agent.policy.max_tool_calls == 5


@pytest.mark.parametrize("value", [0, 9, -1])
def test_the_limit_is_one_to_eight(value: int) -> None:
    with pytest.raises(ConfigError, match="max_tool_calls"):
        AgentSettings.load(max_tool_calls=value)


def test_the_environment_sets_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MAMBA_MAX_TOOL_CALLS", "8")
    assert AgentSettings.load().max_tool_calls == 8
    monkeypatch.setenv("MAMBA_MAX_TOOL_CALLS", "12")
    with pytest.raises(ConfigError, match="less than or equal to 8"):
        AgentSettings.load()
