"""Subagents under attack: a cancelled tree, a grandchild's budget, a plan's ids crossing levels."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from ai_agent import Agent, ToolCategory, ToolSpec, UserPlan
from ai_agent.config import AgentSettings
from ai_agent.testing import FunctionModel, ScriptedModel
from tests.graph.conftest import call, text
from tests.graph.test_subagents import runs_in


async def test_a_parent_cancelled_mid_child_resumes_the_child_where_it_stopped(db: Path) -> None:
    # Before: the child's row said failed (CancelledError) and the parent's resume handed that
    # back as the call's outcome, a TOOL_ERROR at the parent's gate; the child never went on,
    # though both runs were logged as "it can be resumed".
    started, release = threading.Event(), threading.Event()
    asked: list[int] = []

    def child_model(messages: list[Any], info: dict[str, Any]) -> Any:
        asked.append(len(asked))
        if len(asked) == 1:
            started.set()  # the child is in its first model call when the parent is cancelled
            release.wait(30)
            return "too late"
        return "the child's answer"

    child = Agent(model=FunctionModel(child_model), memory_path=None, settings=AgentSettings())
    parent = Agent(
        model=ScriptedModel([call("helper", task="t"), text("done")]),
        tools=[child.as_tool("helper", "Helps.")],
        checkpoint_path=db,
        memory_path=None,
        settings=AgentSettings(),
    )
    running = asyncio.create_task(parent.run("wait for the child", thread_id="p"))
    try:
        assert await asyncio.to_thread(started.wait, 30)
        running.cancel()
        await asyncio.wait([running])
        assert running.cancelled()
    finally:
        release.set()
    assert {t: r["status"] for t, r in (await runs_in(db)).items()} == {
        "p": "failed",
        "p.c1.0": "failed",
    }

    result = await parent.resume("p")
    assert (result.status, result.final_text) == ("completed", "done")
    results = (await parent.get_state("p"))["results"]
    assert [
        (r["call"]["id"], r["result"]["status"], r["result"].get("content")) for r in results
    ] == [("c1.0", "ok", "the child's answer")]
    runs = await runs_in(db)
    assert set(runs) == {"p", "p.c1.0"}  # the same child went on: none started again
    assert (runs["p.c1.0"]["status"], runs["p.c1.0"]["final_text"]) == (
        "completed",
        "the child's answer",
    )
    assert len(asked) == 2  # the cancelled call, then the one the resumed child made
    await parent.aclose()


def three_levels(where: Path, budget: int | None) -> Agent:
    """A parent whose child delegates to a grandchild that makes seven model calls."""
    turns = [call("calculator", expression=f"{i}+1") for i in range(6)]
    grandchild = Agent(
        model=ScriptedModel([*turns, text("grandchild done")]),
        tools=["calculator"],
        memory_path=None,
        settings=AgentSettings(),
        max_iterations=20,
    )
    child = Agent(
        model=ScriptedModel([call("deeper", task="go down"), text("child done")]),
        tools=[grandchild.as_tool("deeper", "Goes deeper.")],
        memory_path=None,
        settings=AgentSettings(),  # no budget of its own: its parent's must still hold
    )
    settings = AgentSettings(budget={"max_tokens": budget}) if budget else AgentSettings()
    return Agent(
        model=ScriptedModel([call("helper", task="go"), text("parent done")]),
        tools=[child.as_tool("helper", "Helps.")],
        checkpoint_path=where,
        memory_path=None,
        settings=settings,
    )


async def tree_tokens(agent: Agent, threads: list[str]) -> dict[str, int]:
    return {
        t: sum(
            r["total_tokens"]
            for r in await agent.get_usage_history(t)
            if r.get("purpose") != "subagent"
        )
        for t in threads
    }


async def test_a_grandchild_is_held_to_what_is_left_of_the_top_parents_budget(
    tmp_path: Path, db: Path
) -> None:
    threads = ["p", "p.c1.0", "p.c1.0.c1.0"]
    probe = three_levels(tmp_path / "probe.sqlite", None)
    assert (await probe.run("go", thread_id="p")).status == "completed"
    free = await tree_tokens(probe, threads)
    await probe.aclose()
    # A quarter of what the grandchild spends unlimited is left for the whole tree below the
    # parent. Before: the grandchild was held only to the middle agent's own budget (none),
    # made all seven calls, and the tree spent about four times the parent's budget.
    budget = free["p"] + free["p.c1.0"] + free["p.c1.0.c1.0"] // 4
    limited = three_levels(db, budget)
    paused = await limited.run("go", thread_id="p")
    assert paused.status == "paused" and paused.gate is not None
    (held,) = paused.gate["issues"]
    assert held["code"] == "SUBAGENT_PAUSED"
    assert "the subagent run p.c1.0.c1.0 paused at its gate: token budget" in held["message"]
    spent = await tree_tokens(limited, threads)
    assert sum(spent.values()) <= budget, (spent, budget)
    assert spent["p.c1.0.c1.0"] < free["p.c1.0.c1.0"]
    await limited.aclose()


def modification(name: str, log: list[str]) -> ToolSpec:
    def run(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        log.append(name)
        return {"status": "ok", "content": f"{name} done"}

    return ToolSpec(
        name,
        run,
        description=f"{name.replace('_', ' ').capitalize()}.",
        category=ToolCategory.MODIFICATION,
        parameters={"type": "object", "properties": {}},
    )


def turn(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "args": args} for name, args in calls]}


def parent_with_a_pausing_child(db: Path, log: list[str], child_turn: dict[str, Any]) -> Agent:
    """A parent that, in one turn, calls its child (c1.0) and its own ``save`` (c1.1)."""
    child = Agent(
        model=ScriptedModel([child_turn, text("child done")]),
        tools=[modification("delete_all", log), "calculator"],
        memory_path=None,
        settings=AgentSettings(),
        execute_all_tool_calls=True,
    )
    return Agent(
        model=ScriptedModel([turn(("helper", {"task": "tidy up"}), ("save", {})), text("done")]),
        tools=[child.as_tool("helper", "Tidies up."), modification("save", log)],
        checkpoint_path=db,
        memory_path=None,
        settings=AgentSettings(),
        execute_all_tool_calls=True,
    )


async def test_approving_the_parents_own_call_does_not_approve_the_childs_call_of_that_id(
    db: Path,
) -> None:
    log: list[str] = []
    # The child's second call (its c1.1) needs approval, as does the parent's (its c1.1).
    child_turn = turn(("calculator", {"expression": "1+1"}), ("delete_all", {}))
    parent = parent_with_a_pausing_child(db, log, child_turn)
    paused = await parent.run("tidy and save", thread_id="p")
    assert paused.gate is not None
    assert [(p["call"]["id"], p["call"]["name"]) for p in paused.gate["pending"]] == [
        ("c1.0", "helper"),
        ("c1.1", "save"),
    ]
    # The person approves the parent's save only. Before: the plan's "c1.1" reached the child
    # as is and approved the child's own c1.1, delete_all, which ran unasked.
    done = await parent.resume("p", UserPlan(approve=["c1.1"]))
    assert done.status == "completed"
    assert log == ["save"]
    child_results = (await parent.get_state("p.c1.0"))["results"]
    assert [(r["call"]["name"], r["result"]["status"]) for r in child_results] == [
        ("calculator", "ok"),
        ("delete_all", "skipped"),
    ]
    await parent.aclose()


async def test_approving_the_parents_calls_by_id_answers_its_childs_gate(db: Path) -> None:
    log: list[str] = []
    parent = parent_with_a_pausing_child(db, log, turn(("delete_all", {})))
    assert (await parent.run("tidy and save", thread_id="p")).status == "paused"
    # The person approves both calls the parent's gate showed, by their ids. Before: the child
    # got the parent's ids, its gate refused "c1.1" (no such call of the child's), the call
    # raised InvalidPlanError and the parent paused again with the child still waiting.
    done = await parent.resume("p", UserPlan(approve=["c1.0", "c1.1"]))
    assert (done.status, done.final_text) == ("completed", "done")
    assert sorted(log) == ["delete_all", "save"]
    runs = await runs_in(db)
    assert (runs["p.c1.0"]["status"], runs["p.c1.0"]["final_text"]) == ("completed", "child done")
    await parent.aclose()
