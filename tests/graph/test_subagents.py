"""Subagents: a child agent as a tool and from Python, its run a linked thread of the parent's."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from ai_agent import Agent, ToolCategory, ToolSpec, UserPlan
from ai_agent.checkpoints import RunStore
from ai_agent.config import AgentSettings, BudgetConfig
from ai_agent.errors import ConfigError, RunError
from ai_agent.graph.subagents import Subagent, Subagents, tree_budget
from ai_agent.state import ToolResult
from ai_agent.testing import FunctionModel, ScriptedModel
from ai_agent.tools.toolsets import ChildToolset
from tests.graph.conftest import call, text


def child_agent(tmp_path: Path, turns: list[Any], **kwargs: Any) -> Agent:
    """A child with its own model, prompt and tools, and a database of its own on paper."""
    kwargs.setdefault("system_prompt", "You are the researcher.")
    return Agent(
        model=ScriptedModel(turns),
        checkpoint_path=tmp_path / "child-own.sqlite",
        memory_path=None,
        settings=AgentSettings(),
        **kwargs,
    )


def parent_agent(db: Path, turns: list[Any], tools: list[Any], **kwargs: Any) -> Agent:
    kwargs.setdefault("settings", AgentSettings())
    return Agent(
        model=ScriptedModel(turns), tools=tools, checkpoint_path=db, memory_path=None, **kwargs
    )


async def runs_in(db: Path) -> dict[str, Any]:
    store = RunStore(db)
    try:
        return {r["thread_id"]: r for r in await store.list_runs(limit=None)}
    finally:
        store.close()


async def test_a_child_as_a_tool_answers_the_parent_and_its_run_is_a_linked_thread(
    tmp_path: Path, db: Path
) -> None:
    child = child_agent(
        tmp_path,
        [call("calculator", expression="6*7"), text("6*7 is 42")],
        tools=["calculator"],
    )
    tool = child.as_tool("research", "Answers arithmetic questions.")
    parent = parent_agent(
        db,
        [call("research", task="what is 6*7?", context="exact"), text("The child says 42.")],
        [tool],
    )
    async with parent:
        result = await parent.run("ask the researcher")
    assert (result.status, result.final_text) == ("completed", "The child says 42.")

    runs = await runs_in(db)
    child_thread = f"{result.thread_id}.c1.0"
    assert set(runs) == {result.thread_id, child_thread}
    row = runs[child_thread]
    assert (
        row["origin"],
        row["parent_thread_id"],
        row["parent_iteration"],
        row["parent_call_id"],
    ) == (
        "child",
        result.thread_id,
        1,
        "c1.0",
    )
    assert (row["status"], row["final_text"]) == ("completed", "6*7 is 42")
    assert row["task"] == "what is 6*7?\n\nContext:\nexact"
    assert not (tmp_path / "child-own.sqlite").exists()  # the child's runs went to the parent's

    # The parent's model saw the child's answer as the tool's result.
    messages = await parent.get_message_history(result.thread_id)
    tool_messages = [m for m in messages if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == ["6*7 is 42"]
    # The child ran its own tool with its own prompt; the parent never saw the calculator.
    child_state = await parent.get_state(child_thread)
    assert [r["call"]["name"] for r in child_state["results"]] == ["calculator"]
    assert await parent.get_system_prompt(child_thread) == "You are the researcher."


async def test_the_childs_usage_rolls_up_into_the_parents(tmp_path: Path, db: Path) -> None:
    child = child_agent(
        tmp_path, [call("calculator", expression="1+1"), text("2")], tools=["calculator"]
    )
    parent = parent_agent(
        db, [call("helper", task="1+1"), text("2 it is")], [child.as_tool("helper", "Adds.")]
    )
    result = await parent.run("add")
    child_result = await parent.get_result(f"{result.thread_id}.c1.0")
    own = await parent.get_usage_history(result.thread_id)
    drafts = [r for r in own if r.get("purpose", "draft") == "draft"]
    rolled = [r for r in own if r.get("purpose") == "subagent"]
    assert [r["total_tokens"] for r in rolled] == [child_result.usage["total_tokens"]]
    assert result.usage["total_tokens"] == (
        sum(r["total_tokens"] for r in drafts) + child_result.usage["total_tokens"]
    )
    assert result.usage["requests"] == len(drafts) + child_result.usage["requests"]


async def test_delegate_from_python_runs_a_linked_child(tmp_path: Path, db: Path) -> None:
    child = child_agent(tmp_path, [text("the summary")])
    parent = parent_agent(db, [text("done")], [])
    first = await parent.run("the parent")
    done = await parent.delegate(child, "summarize", parent_thread_id=first.thread_id)
    assert (done.status, done.final_text) == ("completed", "the summary")
    row = (await runs_in(db))[done.thread_id]
    assert (row["origin"], row["parent_thread_id"], row["parent_call_id"]) == (
        "child",
        first.thread_id,
        None,
    )
    lone = await parent.delegate(child, "summarize again", thread_id="lone-child")
    assert (await runs_in(db))["lone-child"]["origin"] == "run"
    assert lone.final_text == "the summary"


async def test_one_child_tool_given_to_two_parents_gives_each_its_own(
    tmp_path: Path, db: Path
) -> None:
    child = child_agent(tmp_path, [text("child answer")])
    tool = child.as_tool("helper", "Helps.")
    first = parent_agent(db, [call("helper", task="a"), text("one")], [tool])
    other_db = tmp_path / "other.sqlite"
    second = parent_agent(other_db, [call("helper", task="b"), text("two")], [tool])
    assert (await first.run("x")).final_text == "one"
    assert (await second.run("y")).final_text == "two"
    assert len(await runs_in(db)) == 2 and len(await runs_in(other_db)) == 2


async def test_children_nest_and_each_level_links_to_its_parent(tmp_path: Path, db: Path) -> None:
    grandchild = child_agent(tmp_path, [text("deepest")])
    child = child_agent(
        tmp_path,
        [call("deeper", task="go down"), text("middle got: deepest")],
        tools=[grandchild.as_tool("deeper", "Goes deeper.")],
    )
    parent = parent_agent(
        db, [call("helper", task="go"), text("top")], [child.as_tool("helper", "Helps.")]
    )
    result = await parent.run("nest")
    assert result.final_text == "top"
    runs = await runs_in(db)
    middle = f"{result.thread_id}.c1.0"
    bottom = f"{middle}.c1.0"
    assert runs[middle]["parent_thread_id"] == result.thread_id
    assert (runs[bottom]["parent_thread_id"], runs[bottom]["final_text"]) == (middle, "deepest")


async def test_a_child_tool_outside_a_run_says_where_it_runs(tmp_path: Path) -> None:
    child = child_agent(tmp_path, [text("x")])
    spec = child.as_tool("helper", "Helps.").tools()[0]
    result = await spec.fn({"task": "t"}, {})
    assert result["status"] == "error"
    assert "runs only as a call of a run" in result["error"]


async def test_a_failed_child_is_an_error_result_for_the_parent(tmp_path: Path, db: Path) -> None:
    # The child runs out of cycles before it answers: a failed run.
    loop = [call("calculator", expression="1+1"), call("calculator", expression="2+2")]
    child = child_agent(tmp_path, loop, tools=["calculator"], max_iterations=1)
    parent = parent_agent(
        db,
        [call("helper", task="t"), text("the helper failed")],
        [child.as_tool("helper", "Helps.")],
        gate_profile="batch",
    )
    result = await parent.run("try")
    outcome = (await parent.get_state(result.thread_id))["results"][0]["result"]
    assert outcome["status"] == "error"
    assert outcome["meta"]["child_status"] == "failed"
    assert str(outcome["error"]).startswith(f"the subagent run {result.thread_id}.c1.0 failed")


async def test_a_thread_that_is_not_the_childs_is_refused(tmp_path: Path, db: Path) -> None:
    child = child_agent(tmp_path, [text("x")])
    parent = parent_agent(db, [text("done")], [])
    first = await parent.run("a run", thread_id="taken")
    assert first.status == "completed"
    with pytest.raises(RunError, match="is not a child of"):
        await parent.delegate(child, "t", parent_thread_id="p", thread_id="taken")
    with pytest.raises(RunError, match="already exists"):
        await parent.delegate(child, "t", thread_id="taken")


async def test_cancelling_the_parent_cancels_its_running_child(tmp_path: Path, db: Path) -> None:
    started, release = threading.Event(), threading.Event()

    def slow(messages: list[Any], info: dict[str, Any]) -> Any:
        started.set()  # the child is in its model call
        release.wait(30)
        return "too late"

    child = Agent(model=FunctionModel(slow), memory_path=None, settings=AgentSettings())
    parent = parent_agent(db, [call("helper", task="t"), text("never")],
                          [child.as_tool("helper", "Helps.")])  # fmt: skip
    running = asyncio.create_task(parent.run("wait for the child", thread_id="p"))
    try:
        assert await asyncio.to_thread(started.wait, 30)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
    finally:
        release.set()
    runs = await runs_in(db)
    assert (runs["p"]["status"], runs["p.c1.0"]["status"]) == ("failed", "failed")
    assert runs["p.c1.0"]["error"].startswith("the run was cancelled by its caller")
    store = RunStore(db)
    try:
        # Both leases were given back: the tree can be resumed at once.
        await store.release(await store.acquire("p.c1.0"))
        await store.release(await store.acquire("p"))
    finally:
        store.close()


async def test_a_recorded_replay_of_the_parent_replays_its_child_offline(
    tmp_path: Path, db: Path
) -> None:
    child = child_agent(tmp_path, [call("calculator", expression="6*7"), text("42")],
                        tools=["calculator"])  # fmt: skip
    parent = parent_agent(db, [call("helper", task="6*7"), text("it is 42")],
                          [child.as_tool("helper", "Computes.")])  # fmt: skip
    original = await parent.run("compute", thread_id="p")
    before = await runs_in(db)

    # Offline: neither model may answer anything, and the child is not run again.
    offline_child = child_agent(tmp_path, [])
    offline = parent_agent(db, [], [offline_child.as_tool("helper", "Computes.")])
    again = await offline.replay("p", mode="recorded")
    assert (again.status, again.final_text) == ("completed", original.final_text)
    after = await runs_in(db)
    assert set(after) - set(before) == {again.thread_id}  # no new child run
    replayed = (await offline.get_state(again.thread_id))["results"]
    assert [(r["call"]["name"], r["result"]["content"]) for r in replayed] == [("helper", "42")]


def note_tool(log: list[str]) -> ToolSpec:
    def write(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        log.append(str(args.get("text")))
        return {"status": "ok", "content": f"wrote {args.get('text')}"}

    return ToolSpec(
        "write_note",
        write,
        description="Write a note.",
        category=ToolCategory.MODIFICATION,
        parameters={"type": "object", "properties": {"text": {"type": "string"}}},
    )


async def test_a_childs_gate_pauses_the_parent_and_the_parents_plan_answers_it(
    tmp_path: Path, db: Path
) -> None:
    written: list[str] = []
    child = child_agent(
        tmp_path,
        [call("write_note", text="hello"), text("the note is written")],
        tools=[note_tool(written)],
    )
    parent = parent_agent(db, [call("notes", task="write hello"), text("all done")],
                          [child.as_tool("notes", "Writes notes.")])  # fmt: skip
    paused = await parent.run("take a note", thread_id="p")
    # One pause, the parent's, showing the child's issue.
    assert paused.status == "paused" and paused.gate is not None
    (held,) = paused.gate["issues"]
    assert held["code"] == "SUBAGENT_PAUSED"
    assert held["message"].startswith("the subagent run p.c1.0 paused at its gate: write_note")
    assert [p["call"]["name"] for p in paused.gate["pending"]] == ["notes"]
    assert (await runs_in(db))["p.c1.0"]["status"] == "paused"
    assert written == []

    done = await parent.resume("p", UserPlan(approve=["*"], instructions="go ahead"))
    assert (done.status, done.final_text) == ("completed", "all done")
    assert written == ["hello"]  # the child continued where it stopped, and ran the call once
    runs = await runs_in(db)
    assert set(runs) == {"p", "p.c1.0"}  # no second child
    assert (runs["p.c1.0"]["status"], runs["p.c1.0"]["final_text"]) == (
        "completed",
        "the note is written",
    )
    results = (await parent.get_state("p"))["results"]
    assert [(r["call"]["name"], r["result"]["content"]) for r in results] == [
        ("notes", "the note is written")
    ]


async def test_a_parent_plan_that_denies_the_child_call_cancels_the_child(
    tmp_path: Path, db: Path
) -> None:
    # The child stayed paused in the inbox: a person could answer it there and have it write
    # for a parent that had said no.
    written: list[str] = []
    child = child_agent(tmp_path, [call("write_note", text="x"), text("no")],
                        tools=[note_tool(written)])  # fmt: skip
    parent = parent_agent(db, [call("notes", task="t"), text("skipped it")],
                          [child.as_tool("notes", "Writes notes.")])  # fmt: skip
    assert (await parent.run("t", thread_id="p")).status == "paused"
    done = await parent.resume("p", UserPlan(deny=["*"]))
    assert (done.status, done.final_text) == ("completed", "skipped it")
    assert written == []
    assert (await runs_in(db))["p.c1.0"]["status"] == "cancelled"
    with pytest.raises(RunError):  # nothing left to answer
        await parent.resume("p.c1.0", UserPlan(approve=["*"]))
    assert written == []


async def test_a_parent_stopped_while_its_child_waits_cancels_it_and_counts_its_spending(
    tmp_path: Path, db: Path
) -> None:
    # The plan stops the parent at the gate that shows its child's: the child stayed paused,
    # and what it had spent was in no run's usage (the parent's total was its own draft's).
    child = child_agent(tmp_path, [call("write_note", text="x"), text("no")],
                        tools=[note_tool([])])  # fmt: skip
    parent = parent_agent(db, [call("notes", task="t"), text("never")],
                          [child.as_tool("notes", "Writes notes.")])  # fmt: skip
    assert (await parent.run("t", thread_id="p")).status == "paused"
    spent = (await parent.get_result("p.c1.0")).usage
    assert spent["total_tokens"] > 0

    done = await parent.resume("p", UserPlan(allow_continue=False))
    assert done.status == "cancelled"
    assert (await runs_in(db))["p.c1.0"]["status"] == "cancelled"
    own = await parent.get_usage_history("p")
    rolled = [r for r in own if r.get("purpose") == "subagent"]
    assert [r["total_tokens"] for r in rolled] == [spent["total_tokens"]]
    drafts = sum(r["total_tokens"] for r in own if r.get("purpose", "draft") == "draft")
    assert done.usage["total_tokens"] == drafts + spent["total_tokens"]


async def test_the_parents_budget_limits_its_child(tmp_path: Path, db: Path) -> None:
    def parent_with(budget: dict[str, Any] | None, where: Path) -> Agent:
        child = child_agent(tmp_path, [text("a long answer from the child")])
        settings = AgentSettings(budget=budget) if budget else AgentSettings()
        return Agent(
            model=ScriptedModel([call("helper", task="t"), text("done")]),
            tools=[child.as_tool("helper", "Helps.")],
            checkpoint_path=where,
            memory_path=None,
            settings=settings,
        )

    # Unlimited, to learn what the parent's first draft costs.
    probe = await parent_with(None, tmp_path / "probe.sqlite").run("go", thread_id="p")
    first = (await parent_with(None, tmp_path / "probe.sqlite").get_usage_history("p"))[0]
    assert probe.status == "completed"
    # A budget with a single token left after the parent's first draft: its child cannot start.
    limited = parent_with({"max_tokens": first["total_tokens"] + 1}, db)
    paused = await limited.run("go", thread_id="p")
    assert paused.status == "paused" and paused.gate is not None
    (held,) = paused.gate["issues"]
    assert held["code"] == "SUBAGENT_PAUSED"
    assert "token budget" in held["message"] and "over its limit of 1 " in held["message"]
    assert (await runs_in(db))["p.c1.0"]["status"] == "paused"

    # A person answers with a plan that goes on: the parent's allowance reaches the child, which
    # continues with one more of the parent's budget (before, it stopped at the same 1 token
    # again, and the parent paused again).
    granted = await limited.resume("p", UserPlan(instructions="go on"))
    assert (await runs_in(db))["p.c1.0"]["status"] == "completed"
    child_result = await limited.get_result("p.c1.0")
    assert child_result.final_text == "a long answer from the child"
    # The child's tokens count in the parent's: the parent's own next call is over its budget
    # now, and its own gate asks (a budget this small allows no more of the tree).
    purposes = [r.get("purpose", "draft") for r in await limited.get_usage_history("p")]
    assert purposes == ["draft", "subagent"]
    assert granted.status == "paused" and granted.gate is not None
    assert [i["code"] for i in granted.gate["issues"]] == ["BUDGET"]


async def test_children_called_in_one_turn_run_together_under_the_limit(
    tmp_path: Path, db: Path
) -> None:
    running = 0
    most = 0
    both_in = asyncio.Event()
    seen: list[int] = []

    async def slow_lookup(args: dict[str, Any], ctx: dict[str, Any]) -> str:
        """Look a thing up (waits until two children are inside it at once)."""
        nonlocal running, most
        running += 1
        most = max(most, running)
        seen.append(running)
        if running >= 2:
            both_in.set()
        try:
            await asyncio.wait_for(both_in.wait(), 30)  # no sleep: the other child's arrival
        finally:
            running -= 1
        return f"found {args['q']}"

    lookup = ToolSpec(
        "lookup",
        slow_lookup,
        category=ToolCategory.READ_ONLY,
        parameters={"type": "object", "properties": {"q": {"type": "string"}}},
    )
    child = child_agent(tmp_path, [call("lookup", q="x"), text("child found it")],
                        tools=[lookup])  # fmt: skip
    turn = {"tool_calls": [{"name": "helper", "args": {"task": f"find {n}"}} for n in "abc"]}
    parent = parent_agent(
        db,
        [turn, text("all three found")],
        [child.as_tool("helper", "Finds things.")],
        execute_all_tool_calls=True,
        settings=AgentSettings(tool_config={"max_concurrent_calls": 2}),
    )
    result = await parent.run("find three things", thread_id="p")
    assert (result.status, result.final_text) == ("completed", "all three found")
    assert most == 2  # two at once (the limit), never three
    results = (await parent.get_state("p"))["results"]
    # Recorded in the order the model asked, each from its own linked child thread.
    assert [r["call"]["id"] for r in results] == ["c1.0", "c1.1", "c1.2"]
    assert [r["result"]["meta"]["child_thread_id"] for r in results] == [
        "p.c1.0",
        "p.c1.1",
        "p.c1.2",
    ]
    runs = await runs_in(db)
    assert [runs[f"p.c1.{i}"]["task"] for i in range(3)] == ["find a", "find b", "find c"]


async def test_a_parent_that_paused_on_its_child_replays_offline(tmp_path: Path, db: Path) -> None:
    written: list[str] = []
    child = child_agent(
        tmp_path,
        [call("write_note", text="hello"), text("the note is written")],
        tools=[note_tool(written)],
    )
    parent = parent_agent(db, [call("notes", task="write hello"), text("all done")],
                          [child.as_tool("notes", "Writes notes.")])  # fmt: skip
    assert (await parent.run("t", thread_id="p")).status == "paused"
    assert (await parent.resume("p", UserPlan(approve=["*"]))).status == "completed"
    offline = parent_agent(db, [], [child_agent(tmp_path, []).as_tool("notes", "Writes notes.")])
    again = await offline.replay("p", mode="recorded")
    assert (again.status, again.final_text) == ("completed", "all done")
    assert written == ["hello"]  # the child's change was not made again


async def test_a_child_call_run_again_reattaches_to_its_thread(tmp_path: Path, db: Path) -> None:
    # One answer only: a second run of the child would find its script exhausted.
    child = child_agent(tmp_path, [text("the only answer")])
    tool = child.as_tool("helper", "Helps.")
    parent = parent_agent(db, [call("helper", task="t"), text("done")], [tool])
    assert (await parent.run("go", thread_id="p")).status == "completed"
    spec = tool.tools()[0]
    again = {"thread_id": "p", "iteration": 1, "call_id": "c1.0"}

    # The parent's call run again (after a crash): the ended child's answer, nothing rerun.
    assert (await spec.fn({"task": "t"}, again))["content"] == "the only answer"
    # Its row still says running (the crash came before the row was updated): it is resumed,
    # has nothing left to do, and its answer comes back.
    store = RunStore(db)
    try:
        await store.update_run("p.c1.0", status="running")
        assert (await spec.fn({"task": "t"}, again))["content"] == "the only answer"
        # A child whose row was written but no step taken before the crash starts its task.
        await store.create_run(
            "p.c7.0", "t", parent_thread_id="p", origin="child", parent_call_id="c7.0"
        )
    finally:
        store.close()
    late = {"thread_id": "p", "iteration": 7, "call_id": "c7.0"}
    assert (await spec.fn({"task": "t"}, late))["content"] == "the only answer"
    assert len(await runs_in(db)) == 3


async def test_a_paused_child_called_without_a_plan_stays_paused(tmp_path: Path, db: Path) -> None:
    written: list[str] = []
    child = child_agent(tmp_path, [call("write_note", text="x"), text("no")],
                        tools=[note_tool(written)])  # fmt: skip
    tool = child.as_tool("notes", "Writes notes.")
    parent = parent_agent(db, [call("notes", task="t"), text("x")], [tool])
    assert (await parent.run("t", thread_id="p")).status == "paused"
    spec = tool.tools()[0]
    held = await spec.fn({"task": "t"}, {"thread_id": "p", "iteration": 1, "call_id": "c1.0"})
    assert held["meta"]["code"] == "SUBAGENT_PAUSED" and written == []


def test_claiming_copies_only_child_tools_another_agent_took() -> None:
    taken = ChildToolset(object(), name="a", description="A.")
    taken.bind("a parent", lambda *a, **k: None)  # type: ignore[arg-type]
    free = ChildToolset(object(), name="b", description="B.")
    claimed = Subagents.claim({"a": taken, "b": free})
    assert claimed["a"] is not taken and claimed["a"].tools()[0].name == "a"
    assert claimed["b"] is free
    assert Subagents.claim("calculator") == "calculator"
    with pytest.raises(ConfigError, match="belongs to another agent"):
        taken.bind("another parent", lambda *a, **k: None)  # type: ignore[arg-type]


def test_a_childs_budget_is_what_its_parent_has_left() -> None:
    parent = BudgetConfig(max_tokens=1000, max_cost=1.0)
    cap = tree_budget(parent, {"total_tokens": 990, "cost": 0.75}, BudgetConfig(max_cost=0.1))
    assert cap is not None and (cap.max_tokens, cap.max_cost) == (10, 0.1)
    spent = tree_budget(parent, {"total_tokens": 5000, "cost": 3.0}, BudgetConfig())
    assert spent is not None and (spent.max_tokens, spent.max_cost) == (1, 1e-9)


def test_the_parents_allowance_is_handed_down_to_its_child() -> None:
    parent = BudgetConfig(max_tokens=1000, max_cost=1.0)
    used = {"total_tokens": 1500, "cost": 1.5}
    # Granted at a BUDGET stop of the parent at 1,500 tokens: up to 2,500 and 2.5 for the tree.
    allowance = {"granted_at": 3.0, "tokens": 2500.0, "cost": 2.5}
    cap = tree_budget(parent, used, BudgetConfig(), allowance=allowance)
    assert cap is not None and (cap.max_tokens, cap.max_cost) == (1000, 1.0)
    # The child's own lower limits still hold; a bad allowance counts as none.
    own = tree_budget(parent, used, BudgetConfig(max_tokens=50), allowance=allowance)
    assert own is not None and own.max_tokens == 50
    bad = tree_budget(parent, used, BudgetConfig(), allowance={"tokens": "lots", "cost": -1})
    assert bad is not None and (bad.max_tokens, bad.max_cost) == (1, 1e-9)
    # An answered BUDGET stop of the child: one more of the parent's budget from here.
    again = tree_budget(parent, {"total_tokens": 999, "cost": 0.99}, BudgetConfig(), granted=True)
    assert again is not None and (again.max_tokens, again.max_cost) == (1000, 1.0)


async def test_the_allowance_travels_from_the_parents_state_to_its_child_tool(
    tmp_path: Path, db: Path
) -> None:
    seen: list[Any] = []

    async def spawn(task: str, **kwargs: Any) -> ToolResult:
        seen.append(kwargs["allowance"])
        return ToolResult(status="ok", content="done")

    toolset = child_agent(tmp_path, [text("x")]).as_tool("helper", "Helps.")
    toolset.bind("a parent", spawn)
    spec = toolset.tools()[0]
    parent = Agent(
        model=ScriptedModel([call("helper", task="t"), text("ok")]),
        tools=[spec],
        checkpoint_path=db,
        memory_path=None,
        settings=AgentSettings(),
    )
    first = await parent.run("go", thread_id="p")
    assert first.status == "completed", first.gate
    assert seen == [None]  # no allowance: none handed down
    # The same cycle, as if a person had granted the parent an allowance at a BUDGET stop.
    before_act = next(e for e in await parent.ahistory("p") if e.next == ("act",))
    allowance = {"granted_at": 1.0, "tokens": 5000.0, "cost": 0.5}
    fork = await parent.afork("p", before_act.checkpoint_id, {"budget_allowance": allowance})
    assert (await parent.resume(fork)).status == "completed"
    assert seen == [None, allowance]


async def test_the_parents_edits_and_rules_are_not_handed_to_its_child(
    tmp_path: Path, db: Path
) -> None:
    written: list[str] = []
    child = child_agent(
        tmp_path, [call("write_note", text="hello"), text("written")], tools=[note_tool(written)]
    )
    parent = parent_agent(db, [call("notes", task="write hello"), text("all done")],
                          [child.as_tool("notes", "Writes notes.")])  # fmt: skip
    paused = await parent.run("take a note", thread_id="p")
    assert paused.gate is not None
    (waiting,) = paused.gate["pending"]
    # The child's waiting call has the same engine id (c1.0) as the parent's: an edit of the
    # parent's call must not become an edit of the child's, nor its rule a rule of the child's.
    edit = {waiting["call"]["id"]: {"task": "write hello"}}
    plan = UserPlan(approve=["*"], edit_args=edit, always_allow="args")
    done = await parent.resume("p", plan)
    assert done.status == "completed" and written == ["hello"]
    assert [r["tool"] for r in await parent.store.list_rules()] == ["notes"]


async def test_a_denied_childs_spending_counts_in_its_parents_usage(
    tmp_path: Path, db: Path
) -> None:
    # The child spends one model call, then waits at its gate; the person denies it. What it
    # spent is the tree's all the same: before, nothing rolled it up, and the next child had
    # the parent's whole budget again.
    child = child_agent(tmp_path, [call("write_note", text="x"), text("no")],
                        tools=[note_tool([])])  # fmt: skip
    parent = parent_agent(db, [call("notes", task="t"), text("skipped it")],
                          [child.as_tool("notes", "Writes notes.")])  # fmt: skip
    assert (await parent.run("t", thread_id="p")).status == "paused"
    spent = (await parent.get_result("p.c1.0")).usage
    assert spent["total_tokens"] > 0 and spent["requests"] == 1

    done = await parent.resume("p", UserPlan(deny=["*"]))
    assert (done.status, done.final_text) == ("completed", "skipped it")
    own = await parent.get_usage_history("p")
    rolled = [r for r in own if r.get("purpose") == "subagent"]
    assert [r["total_tokens"] for r in rolled] == [spent["total_tokens"]]
    drafts = sum(r["total_tokens"] for r in own if r.get("purpose", "draft") == "draft")
    assert done.usage["total_tokens"] == drafts + spent["total_tokens"]
    assert done.usage["requests"] == 2 + 1  # the parent's two drafts and the child's one


async def test_a_child_cut_off_by_its_timeout_counts_what_it_spent(
    tmp_path: Path, db: Path
) -> None:
    release = asyncio.Event()

    async def stuck(args: dict[str, Any], ctx: dict[str, Any]) -> str:
        """Wait for a release that never comes."""
        await asyncio.wait_for(release.wait(), 60)
        return "never"

    wait_tool = ToolSpec("wait_here", stuck, category=ToolCategory.READ_ONLY, timeout=120,
                         parameters={"type": "object", "properties": {}})  # fmt: skip
    child = child_agent(tmp_path, [call("wait_here"), text("never")], tools=[wait_tool])
    parent = parent_agent(db, [call("helper", task="t"), text("it timed out")],
                          [child.as_tool("helper", "Waits.", timeout=0.5)])  # fmt: skip
    paused = await parent.run("t", thread_id="p")
    # Its retries spent (each re-attached to the same child), the parent's gate hears of it.
    assert paused.status == "paused" and paused.gate is not None
    assert [i["code"] for i in paused.gate["issues"]] == ["TOOL_ERROR"]
    (outcome,) = (await parent.get_state("p"))["results"]
    assert outcome["result"]["meta"]["code"] == "TIMEOUT"
    assert "the subagent run p.c1.0 did not finish within 0.5s" in str(outcome["result"]["error"])
    spent = (await parent.get_result("p.c1.0")).usage
    assert spent["requests"] == 1 and spent["total_tokens"] > 0  # resumed, never re-asked
    rolled = [r for r in await parent.get_usage_history("p") if r.get("purpose") == "subagent"]
    assert [r["total_tokens"] for r in rolled] == [spent["total_tokens"]]
    assert paused.usage["requests"] == 1 + 1
    assert (await runs_in(db))["p.c1.0"]["status"] == "failed"


async def test_a_child_stopped_before_its_first_checkpoint_is_a_timeout_with_no_usage(
    tmp_path: Path, db: Path
) -> None:
    # Its run row was written, no step was: the stopped child's result says so, spent nothing.
    child = child_agent(tmp_path, [text("never")])
    tool = child.as_tool("helper", "Helps.")
    parent = parent_agent(db, [call("helper", task="t"), text("done")], [tool])
    assert (await parent.run("go", thread_id="p")).status == "completed"
    store = RunStore(db)
    try:
        await store.create_run(
            "p.c7.0", "t", parent_thread_id="p", origin="child", parent_call_id="c7.0"
        )
    finally:
        store.close()
    spawn = parent._subagents._shared  # the parent's copy of the child, on its database
    (shared,) = [pair[1] for pair in spawn.values()]
    result = await Subagent(shared)._stopped("p.c7.0", 2.0)
    assert result["meta"]["code"] == "TIMEOUT" and result["meta"]["child_usage"] == {}
    assert "did not finish within 2s" in str(result["error"])
