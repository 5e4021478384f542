"""The run archive: the Agent's methods are its methods, and opened on its own it reads."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from ai_agent import Agent
from ai_agent.config import AgentSettings
from ai_agent.errors import RunError
from ai_agent.graph import RunArchive, RunDatabase
from tests.graph.conftest import MakeAgent, call, text

DELEGATED = [
    "get_state",
    "get_result",
    "history",
    "ahistory",
    "fork",
    "afork",
    "get_system_prompt",
    "get_message_history",
    "get_active_tools",
    "get_agent_state",
    "get_context_state",
    "get_token_usage",
    "get_token_breakdown",
    "get_usage_history",
    "get_cost_estimate",
    "timeline",
    "get_execution_trace",
    "run_report",
    "export_html",
    "prune",
    "replay",
    "submit_plan",
    "list_plans",
    "serve_plan",
]


@pytest.mark.parametrize("name", DELEGATED)
def test_the_agents_method_is_the_archives(name: str) -> None:
    # Nothing wraps them (replay and serve_plan open the tools through the archive's runner).
    on_agent, on_archive = getattr(Agent, name), getattr(RunArchive, name)
    assert on_agent.__doc__ == on_archive.__doc__
    assert inspect.signature(on_agent) == inspect.signature(on_archive)
    assert inspect.iscoroutinefunction(on_agent) == inspect.iscoroutinefunction(on_archive)


async def test_the_agent_and_its_archive_share_the_last_run(make_agent: MakeAgent) -> None:
    agent = make_agent([call("calculator", expression="6*7"), text("42")], tools=["calculator"])
    async with agent:
        result = await agent.run("6*7")
        assert agent.archive.last_thread == result.thread_id
        assert agent.archive.store is agent.store
        assert (await agent.get_token_usage()) == (await agent.archive.get_token_usage())


async def test_an_archive_of_its_own_reads_what_an_agent_stored(
    make_agent: MakeAgent, db: Path
) -> None:
    agent = make_agent([call("calculator", expression="6*7"), text("42")], tools=["calculator"])
    result = await agent.run("6*7")
    # Without settings: they are loaded (env and files) when a view first reads them.
    async with RunArchive.at(db) as archive:
        assert [r["thread_id"] for r in await archive.list_runs()] == [result.thread_id]
        assert (await archive.get_result(result.thread_id)).final_text == "42"
        assert [e.stage for e in await archive.ahistory(result.thread_id)][-1] == "persist"
        # Its default token counter is made from the settings, when a view first counts.
        context = await archive.get_context_state(result.thread_id)
        assert context["estimated_tokens"] > 0 and context["method"].startswith("tiktoken")
        # Without a catalog, the run's tools are known by name only.
        assert await archive.get_active_tools(result.thread_id) == []
        assert (await archive.get_agent_state(result.thread_id))["active_tools"] == ["calculator"]
        assert await archive.get_system_prompt() == AgentSettings().system_prompt


def test_an_archive_without_a_location_uses_the_settings(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAMBA_CHECKPOINT_PATH", str(db))
    assert RunArchive.at(None).database.location == db
    assert RunDatabase.at(None, AgentSettings()).location == db
    assert RunDatabase.at(db).lease_seconds is None  # the store's default lease


async def test_an_archive_of_its_own_drives_no_run(make_agent: MakeAgent, db: Path) -> None:
    result = await make_agent([text("hi")]).run("greet")
    archive = RunArchive.at(db, AgentSettings())
    with pytest.raises(RunError, match="replay needs an Agent"):
        await archive.replay(result.thread_id)
    with pytest.raises(RunError, match="queueing a plan needs an Agent"):
        await archive.submit_plan(result.thread_id, {"approve": ["*"]})
    plans = await archive.list_plans()
    assert plans == []
    await archive.aclose()
