"""A person's plan is parsed and validated once, where it arrives, and travels typed from there.

Each arrival (``Agent.resume`` from Python, the queue served by a worker, the command line's
``--plan``) reads the plan with `ai_agent.plans.read_plan`; the paused gate takes the typed plan
the resume value carries (`ai_agent.plans.PlanAnswer`) and does not parse it again. A resume
value stored by an older ai-agent, a plain dict, is read by the same function.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.types import Command

from ai_agent import Agent
from ai_agent.graph import Worker
from ai_agent.testing import ScriptedModel
from tests.graph.conftest import call, count_plan_parses, text


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every value parsed into a UserPlan from now on."""
    return count_plan_parses(monkeypatch)


def paused_agent(db: Path) -> Agent:
    # calculator is in the catalog but not active: the gate pauses for a plan that activates it.
    model = ScriptedModel([call("calculator", expression="1+1"), text("2")])
    return Agent(model=model, checkpoint_path=db, memory_path=None)


async def test_a_resumed_plan_is_parsed_once(db: Path, parses: list[Any]) -> None:
    async with paused_agent(db) as agent:
        paused = await agent.run("add")
        assert paused.status == "paused" and parses == []
        done = await agent.resume(paused.thread_id, {"activate_tools": ["calculator"]})
    assert (done.status, done.final_text) == ("completed", "2")
    assert parses == [{"activate_tools": ["calculator"]}]


async def test_a_queued_plan_is_parsed_once_when_queued_and_once_when_served(
    db: Path, parses: list[Any]
) -> None:
    async with paused_agent(db) as agent:
        paused = await agent.run("add")
        await agent.submit_plan(paused.thread_id, {"activate_tools": ["calculator"]})
        assert len(parses) == 1  # Agent.submit_plan, where it arrived from Python
        [outcome] = await Worker(agent).run(once=True)
    assert (outcome.status, outcome.run_status) == ("done", "completed")
    assert len(parses) == 2  # the queue's row, where it arrived for the worker; not the gate


async def test_a_plain_dict_resume_value_of_an_older_engine_still_resumes(db: Path) -> None:
    # An older ai-agent handed the gate the plan's dict: the gate reads it with read_plan.
    async with paused_agent(db) as agent:
        paused = await agent.run("add")
        runner = agent._runner  # the resume input an older engine built, driven as it was
        lease = await agent.store.acquire(paused.thread_id)
        command: Command[Any] = Command(resume={"activate_tools": ["calculator"]})
        done = await runner.drive(paused.thread_id, command, lease)
    assert (done.status, done.final_text) == ("completed", "2")
