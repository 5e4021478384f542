"""Whole runs: compaction on long runs, budgets at the gate, the breaker at the gate, inspection."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ai_agent import Agent, ToolCategory, ToolSpec
from ai_agent.config import AgentSettings
from ai_agent.testing import Fault, FunctionModel, MockOpenAIServer, Reply
from ai_agent.tokens import TokenCounter
from tests.graph.conftest import MakeAgent, call, text

COUNTER = TokenCounter()


def fetch_tool(size: int = 120) -> ToolSpec:
    def fetch(args: dict[str, Any], ctx: dict[str, Any]) -> str:
        return f"page {args.get('page')}: " + "lorem ipsum " * size

    return ToolSpec(
        "fetch",
        fetch,
        description="Fetch a page of data.",
        category=ToolCategory.READ_ONLY,
        parameters={"type": "object", "properties": {"page": {"type": "integer"}}},
    )


class LongJob:
    """A model that fetches ``pages`` pages, one per turn, then answers; it also summarizes."""

    def __init__(self, pages: int) -> None:
        self.pages = pages
        self.drafts: list[list[dict[str, Any]]] = []
        self.summaries = 0

    def __call__(self, messages: list[dict[str, Any]], info: dict[str, Any]) -> Any:
        system = messages[0]["content"] if messages[0]["role"] == "system" else ""
        if system.startswith("You compress"):
            self.summaries += 1
            return {"text": "Fetched pages so far; all were lorem ipsum."}
        if system.startswith("Rate how important"):
            count = messages[1]["content"].count("\n") + 1
            return {"text": json.dumps([i % 10 for i in range(count)])}
        self.drafts.append(messages)
        done = len(self.drafts) - 1
        if done < self.pages:
            return call("fetch", page=done)
        return text(f"Fetched {self.pages} pages.")


@pytest.mark.parametrize(
    "strategy",
    ["sliding_window", "summarize_older", "selective_pruning", "importance_scoring", "hybrid"],
)
async def test_a_long_run_stays_under_the_target_and_completes(
    make_agent: MakeAgent, strategy: str
) -> None:
    settings = AgentSettings(
        max_iterations=40,
        context={
            "strategy": strategy,
            "trigger_threshold_tokens": 2500,
            "target_tokens": 1500,
            # Three recent turns of 270 tokens, with the tools, the template's tool
            # instructions and a summary's room, fit the target (four do not).
            "preserve_recent_turns": 3,
            "hybrid_weights": {
                "sliding_window": 0.3,
                "summarize_older": 0.4,
                "importance_scoring": 0.3,
            },
        },
    )
    job = LongJob(pages=30)
    agent = make_agent(
        model=FunctionModel(job),
        tools=[fetch_tool()],
        settings=settings,
        system_prompt="You fetch pages.",
        max_iterations=40,
    )
    async with agent:
        result = await agent.run("fetch 30 pages")
        state = await agent.get_context_state(result.thread_id)
        history = await agent.get_usage_history(result.thread_id)
    assert result.status == "completed"
    assert result.final_text == "Fetched 30 pages."
    compactions = state["compactions"]
    assert compactions, "a 30-page run must have compacted"
    assert all(c["tokens_after"] <= 1500 for c in compactions)
    assert all(c["strategy"] == strategy for c in compactions)
    # Every request the model saw was under the trigger (so under the target after compaction).
    for request in job.drafts:
        assert COUNTER.count_messages(request) < 2500
        assert request[0] == {"role": "system", "content": "You fetch pages."}
        assert request[1]["content"] == "fetch 30 pages"  # the task is always kept
    drafts = [r for r in history if r.get("purpose") == "draft"]
    assert all(r["estimated_prompt_tokens"] < 2500 for r in drafts)
    if strategy in ("summarize_older", "hybrid"):
        assert job.summaries > 0
        assert any(r.get("purpose") == "compaction" for r in history)
    assert state["compaction_trigger"] == 2500
    assert state["compaction_target"] == 1500


async def test_the_latest_plan_survives_compaction(make_agent: MakeAgent) -> None:
    settings = AgentSettings(
        max_iterations=30,
        context={
            "strategy": "sliding_window",
            "trigger_threshold_tokens": 1500,
            "target_tokens": 900,
            "preserve_recent_turns": 2,
        },
    )
    job = LongJob(pages=14)
    plan_seen: list[bool] = []

    def model(messages: list[dict[str, Any]], info: dict[str, Any]) -> Any:
        if len(job.drafts) >= 6:
            plan_seen.append(any(m["content"] == "Only even pages." for m in messages))
        return job(messages, info)

    agent = make_agent(model=FunctionModel(model), tools=["calculator"], settings=settings)
    agent.registry.register(fetch_tool())
    async with agent:
        first = await agent.run("fetch pages")  # 'fetch' is not active: the gate asks
        assert first.status == "paused"
        result = await agent.resume(
            first.thread_id, {"instructions": "Only even pages.", "activate_tools": ["fetch"]}
        )
        state = await agent.get_context_state(result.thread_id)
    assert result.status == "completed"
    assert state["compactions"]
    assert plan_seen and all(plan_seen)


async def test_a_plan_over_the_target_keeps_the_result_it_answers(make_agent: MakeAgent) -> None:
    """The gated call runs once the plan allows it, and the model sees its result next to the
    plan: compaction, which cannot make the plan fit, drops nothing for it."""
    settings = AgentSettings(
        context={"trigger_threshold_tokens": 800, "target_tokens": 500, "preserve_recent_turns": 1}
    )
    agent = make_agent([call("calculator", expression="1+1"), text("2")], settings=settings)
    async with agent:
        paused = await agent.run("add")  # 'calculator' is not active: the gate asks
        assert paused.status == "paused"
        plan = "Use the calculator. " + "Some background for it. " * 400
        done = await agent.resume(
            paused.thread_id, {"instructions": plan, "activate_tools": ["calculator"]}
        )
        state = await agent.get_state(paused.thread_id)
    assert (done.status, done.final_text) == ("completed", "2")
    assert [(m["role"], m.get("kind")) for m in state["messages"]] == [
        ("user", "task"),
        ("assistant", None),
        ("tool", None),
        ("user", "plan"),
        ("assistant", None),
    ]
    assert "protected messages alone exceed the target" in state["compactions"][-1]["detail"]


# Budgets ---------------------------------------------------------------------------------------


def usage_turn(turn: dict[str, Any], prompt: int = 400, completion: int = 100) -> dict[str, Any]:
    return {**turn, "usage": {"prompt_tokens": prompt, "completion_tokens": completion}}


async def test_a_token_budget_stops_the_run_before_the_limit_and_a_plan_extends_it(
    make_agent: MakeAgent,
) -> None:
    turns = [usage_turn(call("calculator", expression=f"{i}+1")) for i in range(4)]
    turns.append(usage_turn(text("done")))
    settings = AgentSettings(budget={"max_tokens": 1600})
    agent = make_agent(turns, tools=["calculator"], settings=settings)
    async with agent:
        paused = await agent.run("count up")
        usage = await agent.get_token_usage(paused.thread_id)
        assert paused.status == "paused"
        assert paused.gate is not None
        assert [i["code"] for i in paused.gate["issues"]] == ["BUDGET"]
        assert "token budget" in paused.gate["issues"][0]["message"]
        # Three calls used 1500 tokens; a fourth (~500 more) would pass 1600: stopped before.
        assert usage["total_tokens"] == 1500  # under the 1600 limit
        resumed = await agent.resume(paused.thread_id, {"instructions": "go on"})
        final = await agent.get_token_usage(resumed.thread_id)
        state = await agent.get_state(resumed.thread_id)
    assert resumed.status == "completed"
    assert final["total_tokens"] == 2500
    assert state.get("budget_allowance", {})["tokens"] == 1500 + 1600


async def test_a_run_stopped_at_its_budget_says_so(make_agent: MakeAgent) -> None:
    turns = [usage_turn(call("calculator", expression=f"{i}+1")) for i in range(4)]
    settings = AgentSettings(budget={"max_tokens": 1600})
    agent = make_agent(turns, tools=["calculator"], settings=settings)
    paused = await agent.run("count up")
    stopped = await agent.resume(paused.thread_id, {"allow_continue": False})
    assert (stopped.status, stopped.stop_reason) == ("cancelled", "budget")


async def test_a_cost_budget_uses_the_model_rate(make_agent: MakeAgent) -> None:
    turns = [usage_turn(call("calculator", expression="1+1"), 1000, 1000) for _ in range(3)]
    settings = AgentSettings(
        model_backend={"max_tokens": 1000},
        budget={
            "rates": {"*": {"prompt_per_1m": 1000, "completion_per_1m": 2000}},
            "max_cost": 5.0,
            "currency": "EUR",
        },
    )
    agent = make_agent([*turns, text("done")], tools=["calculator"], settings=settings)
    async with agent:
        paused = await agent.run("spend")
        cost = await agent.get_cost_estimate(paused.thread_id)
        denied = await agent.resume(paused.thread_id, {"allow_continue": False})
    # Each call costs 1 + 2 = 3 EUR: the second would reach ~6, over 5.
    assert paused.status == "paused"
    assert paused.gate is not None and "cost budget" in paused.gate["issues"][0]["message"]
    assert cost["total_cost"] == 3.0
    assert (cost["prompt_cost"], cost["completion_cost"]) == (1.0, 2.0)
    assert cost["currency"] == "EUR"
    assert (cost["limit"], cost["remaining"]) == (5.0, 2.0)
    assert [(r["iteration"], r["model"], r["cost"]) for r in cost["per_request"]] == [
        (1, "scripted", 3.0)
    ]
    assert cost["by_model"] == {"scripted": 3.0}
    assert denied.status == "cancelled"


# The circuit breaker at the gate ---------------------------------------------------------------


async def test_an_open_breaker_becomes_a_circuit_open_gate_issue_not_a_hang() -> None:
    script = [Fault.server_error(), Fault.server_error()]
    with MockOpenAIServer(script) as server:
        settings = AgentSettings(
            model_backend={"base_url": server.base_url, "max_retries": 5},
            retry={
                "initial_backoff_seconds": 0.01,
                "circuit_breaker_threshold": 2,
                "circuit_breaker_timeout": 0.2,
            },
        )
        agent = Agent(settings=settings, checkpoint_path="c.sqlite", memory_path=None)
        async with agent:
            paused = await agent.run("hello")
            assert paused.status == "paused"
            assert paused.gate is not None
            assert [i["code"] for i in paused.gate["issues"]] == ["CIRCUIT_OPEN"]
            assert len(server.requests) == 2  # no third request: it failed fast
            server.add(Reply(text="recovered"))
            import asyncio

            await asyncio.sleep(0.25)  # the cool-down passes
            resumed = await agent.resume(paused.thread_id, {"instructions": "try again"})
    assert resumed.status == "completed"
    assert resumed.final_text == "recovered"


# Inspection ------------------------------------------------------------------------------------


async def test_inspection_reports_server_usage_estimates_costs_and_attribution() -> None:
    script = [
        Reply(
            tool_calls=[{"name": "fetch", "args": {"page": 1}}],
            usage={"prompt_tokens": 200, "completion_tokens": 20, "cached_tokens": 50},
        ),
        Reply(text="Page 1 says lorem ipsum.", usage={}),  # this server reports no usage
    ]
    with MockOpenAIServer(script) as server:
        settings = AgentSettings(
            model_backend={"base_url": server.base_url, "model": "tiny-model"},
            budget={
                "rates": {
                    "tiny": {"prompt_per_1m": 10, "completion_per_1m": 20, "cached_per_1m": 1}
                }
            },
        )
        agent = Agent(
            tools=[fetch_tool(size=20)],
            settings=settings,
            checkpoint_path="c.sqlite",
            memory_path=None,
            system_prompt="Be brief.",
        )
        async with agent:
            result = await agent.run("read page 1")
            usage = await agent.get_token_usage(result.thread_id)
            history = await agent.get_usage_history(result.thread_id)
            breakdown = await agent.get_token_breakdown(result.thread_id)
            cost = await agent.get_cost_estimate(result.thread_id)
            context = await agent.get_context_state(result.thread_id)
            per_agent = agent.get_agent_usage()
    assert result.status == "completed"
    first, second = history
    assert (first["source"], second["source"]) == ("server", "estimate")
    assert first["prompt_tokens"] == 200
    assert first["estimate_error"] == pytest.approx(
        (first["estimated_prompt_tokens"] - 200) / 200, abs=1e-4
    )
    assert second["estimate_error"] is None
    # No usage from the server: the calibrated estimate (raw + the gap the first request showed).
    gap = first["prompt_tokens"] - first["estimated_prompt_tokens"]
    assert second["prompt_tokens"] == second["calibrated_prompt_tokens"]
    assert second["calibrated_prompt_tokens"] == second["estimated_prompt_tokens"] + gap
    assert first["tools_called"] == ["fetch"]
    assert second["tool_result_tokens"]["fetch"] > 20
    assert second["cumulative_tokens"] == first["total_tokens"] + second["total_tokens"]
    assert second["cumulative_cost"] == pytest.approx(first["cost"] + second["cost"])
    assert first["step"] is not None and first["latency_ms"] > 0
    assert usage["requests"] == 2
    assert usage["cached_tokens"] == 50
    assert usage["estimated_requests"] == 1
    assert usage["mean_estimate_error"] == first["estimate_error"]
    # 150 fresh prompt tokens at 10/M, 50 cached at 1/M, 20 completion at 20/M.
    assert first["cost"] == pytest.approx((150 * 10 + 50 * 1 + 20 * 20) / 1e6)
    assert cost["by_model"].keys() == {"tiny-model"}
    assert cost["total_cost"] == pytest.approx(first["cost"] + second["cost"])
    tools = breakdown["per_tool"]["fetch"]
    assert tools["calls"] == 1 and tools["call_tokens"] > 0
    assert tools["result_tokens"] == tools["in_context"] > 20
    assert breakdown["tool_results_by_tool"] == {"fetch": tools["in_context"]}
    assert breakdown["system_prompt"] > 0
    assert breakdown["tool_schemas"] > 0
    assert breakdown["messages_by_kind"]["task"] > 0
    assert context["system_prompt"] == "Be brief."
    assert context["message_count"] == 5  # the system prompt first, as the model sees it
    assert context["pending_tool_calls"] == []
    assert context["tokens_with_margin"] >= context["estimated_tokens"]
    assert context["method"] == "tiktoken cl100k_base"
    assert per_agent["totals"]["requests"] == 2
    assert per_agent["by_thread"][result.thread_id]["total_tokens"] == usage["total_tokens"]
    assert per_agent["by_model"]["tiny-model"]["requests"] == 2


async def test_the_api_key_never_enters_state_checkpoints_or_the_run_store(
    tmp_path: Path,
) -> None:
    key = "sk-canary-0d9e8f7a6b5c"
    with MockOpenAIServer([Fault.status_code(401, "bad key")], api_key="other") as server:
        settings = AgentSettings(model_backend={"base_url": server.base_url, "api_key": key})
        db = tmp_path / "runs.sqlite"
        agent = Agent(settings=settings, checkpoint_path=db, memory_path=None)
        async with agent:
            result = await agent.run("hello")
            state = await agent.get_state(result.thread_id)
    assert result.status == "paused"
    assert result.gate is not None and result.gate["issues"][0]["code"] == "AUTH"
    assert key not in json.dumps(state, default=str)
    assert key not in json.dumps(result.to_dict(), default=str)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path


async def test_a_caller_that_refuses_for_budget_reasons_reaches_the_gate(
    make_agent: MakeAgent,
) -> None:
    from ai_agent.errors import BudgetExceededError

    def model(messages: list[dict[str, Any]], info: dict[str, Any]) -> Any:
        raise BudgetExceededError("the team's monthly quota is spent", limit="cost")

    agent = make_agent(model=FunctionModel(model))
    async with agent:
        result = await agent.run("anything")
    assert result.status == "paused"
    assert result.gate is not None
    assert [i["code"] for i in result.gate["issues"]] == ["BUDGET"]
    assert any("another budget" in option for option in result.gate["options"])


async def test_a_compacted_request_fits_the_target_as_the_run_estimates_it(
    make_agent: MakeAgent,
) -> None:
    # The server counts 300 tokens more than the run estimates (the template's defaults and a
    # template of its own the run cannot know): the run's calibrated
    # estimate says so from the second request on, and the trigger is in those units. The
    # compacted request must fit the target in the same units, template and calibration
    # included (before, compaction left both out and its requests landed over the target).
    job = LongJob(pages=30)

    def server(messages: list[dict[str, Any]], info: dict[str, Any]) -> Any:
        turn = job(messages, info)
        turn = {"text": turn} if isinstance(turn, str) else dict(turn)
        turns = sum(1 for m in messages if m["role"] == "assistant" and m.get("tool_calls"))
        counted = COUNTER.count_messages(messages) + 84 + 44 * turns + 300
        turn["usage"] = {"prompt_tokens": counted, "completion_tokens": 5}
        return turn

    settings = AgentSettings(
        max_iterations=40,
        context={"strategy": "sliding_window", "trigger_threshold_tokens": 2500,
                 "target_tokens": 1500, "preserve_recent_turns": 2},
    )  # fmt: skip
    agent = make_agent(model=FunctionModel(server), tools=[fetch_tool()], settings=settings,
                       system_prompt="You fetch pages.", max_iterations=40)  # fmt: skip
    async with agent:
        result = await agent.run("fetch 30 pages")
        state = await agent.get_context_state(result.thread_id)
        history = await agent.get_usage_history(result.thread_id)
    assert result.status == "completed"
    compactions = state["compactions"]
    assert compactions
    drafts = {r["iteration"]: r for r in history if r.get("purpose", "draft") == "draft"}
    for done in compactions:
        sent = drafts[done["iteration"]]
        assert sent["calibrated_prompt_tokens"] > sent["estimated_prompt_tokens"]  # calibrated
        assert done["tokens_after"] <= 1500
        assert sent["calibrated_prompt_tokens"] <= 1500, (done, sent)
