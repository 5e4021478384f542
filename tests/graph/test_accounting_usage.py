"""A ModelCaller of one's own reports usage no server could have counted: it is not taken."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel

from ai_agent.accounting import RunMeter
from ai_agent.checkpoints import DeltaSaver
from ai_agent.checkpoints.backends import open_run_store
from ai_agent.config import AgentSettings, BudgetConfig
from ai_agent.context import ModelReply, RunContext, RunPolicy
from ai_agent.graph.build import build_graph, recursion_limit
from ai_agent.state import Message, ToolCall, new_run_state
from ai_agent.structured import OutputSpec
from ai_agent.testing import ScriptedModel
from ai_agent.tokens import TokenCounter
from ai_agent.tools.registry import ToolRegistry
from ai_agent.tools.spec import ToolCategory, ToolSpec
from tests.graph.conftest import MakeAgent, call, text

ABSURD: list[Any] = [
    {"prompt_tokens": -1_000_000, "completion_tokens": -5, "total_tokens": -1_000_005},
    {"prompt_tokens": 10**30, "completion_tokens": 10**30, "total_tokens": 2 * 10**30},
    {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7, "cached_tokens": -3},
    {"prompt_tokens": "5", "completion_tokens": 2.5, "total_tokens": True},
    ["not", "a", "mapping"],
]
RATES = {"rates": {"*": {"prompt_per_1m": 1_000_000, "completion_per_1m": 1_000_000}}}


class OwnCaller:
    """A ModelCaller that calls ``add`` once per usage it reports, then answers."""

    def __init__(self, usages: list[Any]) -> None:
        self.usages = usages
        self.turn = 0

    async def __call__(
        self, messages: list[Message], tools: list[dict[str, Any]], **kwargs: Any
    ) -> ModelReply:
        self.turn += 1
        message = Message(role="assistant", content="done")
        if self.turn <= len(self.usages):
            call = ToolCall(id=f"c{self.turn}", name="add", args={"n": self.turn})
            message = Message(role="assistant", content="", tool_calls=[call])
        usage = self.usages[min(self.turn, len(self.usages)) - 1]
        return ModelReply(message=message, usage=usage, latency_ms=1.0)


@pytest.mark.parametrize(
    "usage", ABSURD, ids=["negative", "past-64-bits", "cached", "types", "list"]
)
def test_usage_no_server_could_have_counted_is_none_and_the_estimate_stands(
    usage: Any, caplog: pytest.LogCaptureFixture
) -> None:
    meter = RunMeter(counter=TokenCounter(), model_name="m", budget=BudgetConfig(**RATES))
    request = [Message(role="user", content="what is 1+1?")]
    reply = ModelReply(message=Message(role="assistant", content="2"), usage=usage, latency_ms=1.0)
    with caplog.at_level(logging.WARNING, logger="ai_agent.accounting"):
        record = meter.record_call(reply, 1, request, "draft")
    estimate = TokenCounter().count_request(request)
    assert record["source"] == "estimate"
    assert (record["prompt_tokens"], record["cached_tokens"]) == (estimate, 0)
    assert 0 < record["total_tokens"] < 100
    assert record["cost"] == pytest.approx(record["total_tokens"])  # 1 a token, never negative
    assert "no server could have counted" in caplog.text
    assert "the run's own estimate is used instead" in caplog.text


def test_usage_a_server_could_have_counted_is_taken() -> None:
    meter = RunMeter(counter=TokenCounter(), model_name="m")
    usage = {"prompt_tokens": 10**9, "completion_tokens": 0, "total_tokens": 10**9}
    reply = ModelReply(message=Message(role="assistant", content="2"), usage=usage, latency_ms=1.0)
    record = meter.record_call(reply, 1, [Message(role="user", content="hi")], "draft")
    assert (record["source"], record["prompt_tokens"]) == ("server", 10**9)


async def test_a_run_whose_caller_reports_absurd_usage_keeps_its_costs_and_checkpoints(
    tmp_path: Path,
) -> None:
    def add(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        return {"status": "ok", "content": str(args["n"] + 1)}

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    tool = ToolSpec(
        "add", add, description="Add one.", category=ToolCategory.READ_ONLY, parameters=schema
    )
    budget = BudgetConfig(**RATES, max_cost=10_000.0)
    store = open_run_store(tmp_path / "runs.sqlite")
    try:
        context = RunContext(
            thread_id="t",
            model=OwnCaller(ABSURD),
            tools=ToolRegistry([tool]),
            journal=store,
            policy=RunPolicy(max_iterations=8, memory_path=None, unattended=True),
            meter=RunMeter(counter=TokenCounter(), model_name="m", budget=budget),
        )
        config: RunnableConfig = {
            "configurable": {"thread_id": "t"},
            "recursion_limit": recursion_limit(8),
        }
        async with DeltaSaver(tmp_path / "checkpoints.sqlite") as saver:
            graph = build_graph(saver)
            await graph.ainvoke(new_run_state("add up", ["add"]), config, context=context)
            state = (await graph.aget_state(config)).values
    finally:
        store.close()
    # Negative counts would have made negative costs; 10**30 could not have been checkpointed.
    assert state["status"] == "completed"
    records = state["usage_log"]
    assert len(records) == len(ABSURD) + 1
    assert all(r["source"] == "estimate" for r in records)
    assert all(0 < r[k] < 10**6 for r in records for k in ("prompt_tokens", "total_tokens"))
    assert all(r["cost"] == pytest.approx(r["total_tokens"]) for r in records)
    usage = state["usage"]
    assert 0 < usage["total_tokens"] == sum(r["total_tokens"] for r in records) < 10**6
    assert usage["cost"] == pytest.approx(usage["total_tokens"])


@pytest.mark.parametrize("usage", ABSURD[:2], ids=["negative", "past-64-bits"])
async def test_a_replay_of_recorded_usage_no_server_could_have_counted_drops_it(
    make_agent: MakeAgent, db: Path, usage: dict[str, int], caplog: pytest.LogCaptureFixture
) -> None:
    """A recording's usage is a row anyone can edit: a replay holds it to the client's check
    where every caller's reply enters the run, so costs and checkpoints never take it."""
    turns = [call("calculator", expression="6*7"), text("42")]
    async with make_agent(turns, tools=["calculator"]) as agent:
        thread = (await agent.run("6*7?")).thread_id
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE agent_model_calls SET usage = ?", (json.dumps(usage),))
    settings = AgentSettings(budget={**RATES, "max_cost": 10_000.0})
    with caplog.at_level(logging.WARNING, logger="ai_agent"):
        replaying = make_agent(model=ScriptedModel([]), tools=["calculator"], settings=settings)
        async with replaying as agent:
            replay = await agent.replay(thread)
            state = await agent.get_state(replay.thread_id)
            calls = await agent.store.model_calls(replay.thread_id)
    assert replay.status == "completed" and replay.divergence is None
    # What the replay recorded of its calls, as their spans saw them: no usage, not the row's.
    assert [c["usage"] for c in calls] == [{}, {}]
    records = state["usage_log"]
    assert len(records) == 2 and all(r["source"] == "estimate" for r in records)
    assert 0 < state["usage"]["total_tokens"] < 10**6
    assert state["usage"]["cost"] == pytest.approx(state["usage"]["total_tokens"])
    assert "no server could have counted" in caplog.text


class _Total(BaseModel):
    amount: int


async def test_a_typed_answer_without_a_meter_takes_no_usage_a_server_could_not_count(
    tmp_path: Path,
) -> None:
    async def answer(
        messages: list[Message], tools: list[dict[str, Any]], **kwargs: Any
    ) -> ModelReply:
        said = '{"amount": 3}' if kwargs.get("response_format") else "three"
        message = Message(role="assistant", content=said)
        return ModelReply(message=message, usage=ABSURD[1], latency_ms=1.0)

    store = open_run_store(tmp_path / "runs.sqlite")
    try:
        context = RunContext(
            thread_id="t",
            model=answer,
            tools=ToolRegistry([]),
            journal=store,
            policy=RunPolicy(memory_path=None, unattended=True, output=OutputSpec.of(_Total)),
        )
        config: RunnableConfig = {"configurable": {"thread_id": "t"}}
        async with DeltaSaver(tmp_path / "checkpoints.sqlite") as saver:
            graph = build_graph(saver)
            await graph.ainvoke(new_run_state("how many?", []), config, context=context)
            state = (await graph.aget_state(config)).values
    finally:
        store.close()
    assert (state["status"], state["output"]) == ("completed", {"amount": 3})
    assert state["usage"].get("total_tokens", 0) == 0  # 2 * 10**30 could not be checkpointed
