"""The inspection helpers, on a live agent and on a stored thread."""

from __future__ import annotations

from typing import Any

import pytest

from ai_agent import ToolCategory
from ai_agent.errors import RunError, UnknownCheckpointError, UnknownThreadError
from ai_agent.graph import CostRates
from ai_agent.testing import ScriptedModel
from ai_agent.tokens import TokenCounter
from tests.graph.conftest import MakeAgent, call, recorder

USAGE = {"prompt_tokens": 100, "completion_tokens": 20}


def script() -> list[Any]:
    return [
        {**call("calculator", expression="6*7"), "usage": USAGE},
        {"text": "it is 42", "usage": {"prompt_tokens": 130, "completion_tokens": 5}},
    ]


async def test_helpers_on_a_live_agent_need_no_thread_id(make_agent: MakeAgent) -> None:
    agent = make_agent(script(), tools=["calculator"], system_prompt="Be exact.")
    with pytest.raises(RunError, match="has not run anything yet"):
        await agent.get_token_usage()
    assert await agent.get_system_prompt() == "Be exact."
    assert [t["name"] for t in await agent.get_active_tools()] == ["calculator"]
    result = await agent.run("six times seven")

    usage = await agent.get_token_usage()
    assert {k: usage[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")} == {
        "prompt_tokens": 230,
        "completion_tokens": 25,
        "total_tokens": 255,
    }
    assert (usage["cached_tokens"], usage["requests"], usage["cost"]) == (0, 2, 0.0)
    assert usage["estimated_requests"] == 0  # the script reported usage for both requests
    history = await agent.get_usage_history()
    assert [(p["step"], p["total_tokens"], p["cumulative_tokens"]) for p in history] == [
        (2, 120, 120),
        (8, 135, 255),
    ]
    cost = await agent.get_cost_estimate(
        rates=CostRates(prompt_per_million=1.0, completion_per_million=10.0, currency="EUR")
    )
    assert cost["total_cost"] == pytest.approx((230 * 1 + 25 * 10) / 1e6)
    assert [r["cost"] for r in cost["per_request"]] == pytest.approx([300e-6, 180e-6])
    assert cost["currency"] == "EUR"
    assert (await agent.get_cost_estimate())["total_cost"] == 0.0

    messages = await agent.get_message_history()
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert [m["role"] for m in await agent.get_message_history(roles=["tool"])] == ["tool"]
    assert (await agent.get_message_history(last=1))[0]["content"] == "it is 42"
    with_system = await agent.get_message_history(include_system=True)
    assert with_system[0] == {"role": "system", "content": "Be exact."}

    context = await agent.get_context_state()
    assert context["thread_id"] == result.thread_id
    assert context["message_count"] == 5 and context["compactions"] == []
    counter = TokenCounter()
    schemas = agent.registry.schemas(["calculator"])
    assert context["estimated_tokens"] == counter.count_request(context["messages"], schemas)
    assert context["method"] == "tiktoken cl100k_base"

    breakdown = await agent.get_token_breakdown()
    assert breakdown["system_prompt"] == counter.count_message(
        {"role": "system", "content": "Be exact."}
    )
    assert set(breakdown["messages_by_role"]) == {"user", "assistant", "tool"}
    tool_message = next(m for m in context["messages"] if m["role"] == "tool")
    assert breakdown["tool_results_by_tool"] == {"calculator": counter.count_message(tool_message)}
    assert breakdown["tool_schemas"] > 20
    assert breakdown["total"] == (
        breakdown["system_prompt"]
        + sum(breakdown["messages_by_role"].values())
        + breakdown["tool_schemas"]
        + 3  # the reply's priming
    )

    state = await agent.get_agent_state()
    assert (state["status"], state["next"], state["waiting_for_plan"]) == ("completed", [], False)
    assert state["final_text"] == "it is 42" and state["iteration"] == 2

    trace = await agent.get_execution_trace()
    assert [r["stage"] for r in trace["timeline"]][:3] == ["recall", "draft", "decide"]
    drafts = [r for r in trace["timeline"] if r["stage"] == "draft"]
    assert [(d["step"], d["tokens"]) for d in drafts] == [(2, 120), (8, 135)]
    (tool,) = trace["tool_calls"]
    assert tool["call"]["args"] == {"expression": "6*7"} and tool["result"]["content"] == "42"
    assert tool["duration_ms"] is not None


async def test_helpers_on_a_stored_thread_from_another_agent(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    tools = [recorder(log, category=ToolCategory.MODIFICATION)]
    first = make_agent([call("note", text="x")], tools=tools, system_prompt="Original prompt.")
    paused = await first.run("write")
    other = make_agent(model=ScriptedModel([]), tools=tools, system_prompt="Another prompt.")

    state = await other.get_agent_state(paused.thread_id)
    assert (state["status"], state["waiting_for_plan"], state["next"]) == ("paused", True, ["gate"])
    assert state["gate"] is not None and state["pending"][0]["blocked"] == "APPROVAL_REQUIRED"
    # What the run was really told, not what this agent would say.
    assert await other.get_system_prompt(paused.thread_id) == "Original prompt."
    assert await other.get_system_prompt() == "Another prompt."
    assert [t["name"] for t in await other.get_active_tools(paused.thread_id)] == ["note"]
    assert (await other.get_token_usage(paused.thread_id))["requests"] == 1
    with pytest.raises(UnknownThreadError):
        await other.get_agent_state("ghost")


async def test_timeline_up_to_a_checkpoint(make_agent: MakeAgent) -> None:
    agent = make_agent(script(), tools=["calculator"])
    result = await agent.run("six times seven")
    entries = await agent.ahistory(result.thread_id)
    act = next(e for e in entries if e.stage == "act")
    rows = await agent.timeline(result.thread_id, act.checkpoint_id)
    assert [r["stage"] for r in rows] == ["recall", "draft", "decide", "discover", "act"]
    assert rows[-1]["checkpoint_id"] == act.checkpoint_id and rows[-1]["tool"] == "calculator"
    with pytest.raises(UnknownCheckpointError):
        await agent.timeline(result.thread_id, "nope")
