"""Hostile children: what a model that calls many children at once can make the tree spend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ai_agent import Agent
from ai_agent.config import AgentSettings
from ai_agent.testing import FunctionModel, ScriptedModel
from tests.graph.conftest import text

CHILD_CALLS = 3  # the model calls each child makes before it answers, when nothing stops it


def busy_child(messages: list[Any], info: dict[str, Any]) -> Any:
    """A child that makes CHILD_CALLS calculator calls, then answers."""
    done = info["turn"]
    if done < CHILD_CALLS - 1:
        return {"tool_calls": [{"name": "calculator", "args": {"expression": f"{done}+1"}}]}
    return "child done"


def parent_calling_children(where: Path, children: int, budget: int | None) -> Agent:
    """A parent whose first turn calls its child tool ``children`` times."""
    child = Agent(
        model=FunctionModel(busy_child),
        tools=["calculator"],
        memory_path=None,
        settings=AgentSettings(),
        max_iterations=20,
    )
    turn = {"tool_calls": [{"name": "helper", "args": {"task": f"t{n}"}} for n in range(children)]}
    settings = AgentSettings(
        budget={"max_tokens": budget} if budget else {},
        tool_config={"max_concurrent_calls": 4},
        max_tool_calls=children,
    )
    return Agent(
        model=ScriptedModel([turn, text("parent done")]),
        tools=[child.as_tool("helper", "Helps.")],
        checkpoint_path=where,
        memory_path=None,
        settings=settings,
        execute_all_tool_calls=True,
    )


async def own_tokens(agent: Agent, thread: str) -> int:
    """What a run spent on its own model calls (its children's roll-ups left out)."""
    records = await agent.get_usage_history(thread)
    return sum(r["total_tokens"] for r in records if r.get("purpose") != "subagent")


async def test_children_called_in_one_turn_share_what_is_left_of_the_budget(
    tmp_path: Path, db: Path
) -> None:
    threads = ["p", "p.c1.0", "p.c1.1", "p.c1.2"]
    probe = parent_calling_children(tmp_path / "probe.sqlite", 3, None)
    assert (await probe.run("go", thread_id="p")).status == "completed"
    free = {t: await own_tokens(probe, t) for t in threads}
    await probe.aclose()
    # Enough for the parent's first draft and about one and a half children. Before: each of
    # the three children was given all that the parent had left and ran to its end: the tree
    # spent half as much again as the parent's budget (N children: up to N times what was left).
    budget = free["p"] + free["p.c1.0"] * 3 // 2
    limited = parent_calling_children(db, 3, budget)
    paused = await limited.run("go", thread_id="p")
    spent = {t: await own_tokens(limited, t) for t in threads}
    assert sum(spent.values()) <= budget, (spent, budget)
    assert paused.status == "paused" and paused.gate is not None
    assert {i["code"] for i in paused.gate["issues"]} == {"SUBAGENT_PAUSED"}
    await limited.aclose()
