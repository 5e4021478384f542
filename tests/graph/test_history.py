"""Browsing a run's checkpoints and forking it."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import pytest

from ai_agent import ToolCategory, UserPlan
from ai_agent.errors import RunError, UnknownCheckpointError, UnknownThreadError
from ai_agent.testing import FunctionModel
from tests.graph.conftest import MakeAgent, call, recorder, text


def by_plan(messages: list[dict[str, Any]], info: dict[str, Any]) -> Any:
    """Asks to write once, then answers with the latest plan instructions it was given."""
    if info["turn"] == 0:
        return call("note", text="draft")
    said = [m["content"] for m in messages if m["role"] == "user"][1:]
    return text(f"answer after {said[-1] if said else 'nothing'}")


async def paused_run(make_agent: MakeAgent, log: list[dict[str, Any]]) -> Any:
    agent = make_agent(
        model=FunctionModel(by_plan),
        tools=[recorder(log, category=ToolCategory.MODIFICATION)],
    )
    paused = await agent.run("write a note")
    assert paused.status == "paused"
    return agent, paused


async def test_history_lists_checkpoints_oldest_first_with_what_changed(
    make_agent: MakeAgent,
) -> None:
    agent = make_agent([call("calculator", expression="2+2"), text("4")], tools=["calculator"])
    result = await agent.run("add")
    entries = await agent.ahistory(result.thread_id)
    assert [(e.step, e.stage) for e in entries] == [
        (-1, "input"),
        (0, "start"),
        (1, "recall"),
        (2, "draft"),
        (3, "decide"),
        (4, "discover"),
        (5, "act"),
        (6, "reflect"),
        (7, "gate"),
        (8, "draft"),
        (9, "decide"),
        (10, "finalize"),
        (11, "persist"),
    ]
    assert entries[0].parent_id is None
    assert all(e.parent_id == p.checkpoint_id for p, e in itertools.pairwise(entries))
    summaries = {e.stage + str(e.step): e.summary for e in entries}
    assert summaries["start0"] == "user 'add'"
    assert summaries["draft2"] == 'model asks for calculator({"expression": "2+2"})'
    assert summaries["decide3"] == "run calculator"
    assert summaries["act5"] == "tool calculator: 4"
    assert summaries["gate7"] == "gate passes at 0.00"
    assert summaries["draft8"] == "model answers '4'"
    assert summaries["finalize10"] == "status completed; final text '4'"
    assert entries[-1].next == () and entries[2].next == ("draft",)
    assert entries[3].trace[0]["stage"] == "draft" and entries[3].iteration == 1
    assert all(e.time.endswith("+00:00") for e in entries)
    assert entries[3].to_dict()["stage"] == "draft"


async def test_history_marks_the_pause_and_the_plan(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    agent, paused = await paused_run(make_agent, log)
    await agent.resume(paused.thread_id, UserPlan(approve=["*"], instructions="be brief"))
    entries = await agent.ahistory(paused.thread_id)
    waiting = [e for e in entries if e.paused]
    assert [e.stage for e in waiting] == ["reflect"]
    assert waiting[0].summary == "paused for a plan"
    gate = entries[entries.index(waiting[0]) + 1]
    assert gate.summary == (
        "gate intervenes at 1.00 (APPROVAL_REQUIRED); plan (resume): approve *; "
        "instructions 'be brief'"
    )


async def test_sync_history_works_inside_a_running_event_loop(make_agent: MakeAgent) -> None:
    agent = make_agent([text("hi")])
    async with agent:  # the agent's own connection stays open meanwhile
        result = await agent.run("greet")
        entries = agent.history(result.thread_id)  # blocking, on a private connection
    assert entries[-1].stage == "persist"
    with pytest.raises(UnknownThreadError):
        agent.history("ghost")


async def test_fork_mid_run_with_a_different_plan_finishes_differently(
    make_agent: MakeAgent,
) -> None:
    log: list[dict[str, Any]] = []
    agent, paused = await paused_run(make_agent, log)
    original = await agent.resume(paused.thread_id, UserPlan(approve=["*"], instructions="A"))
    assert original.final_text == "answer after A"
    before = await agent.ahistory(paused.thread_id)
    at_gate = next(e for e in before if e.paused)

    fork = await agent.afork(paused.thread_id, at_gate.checkpoint_id)
    forked = await agent.get_result(fork)
    assert forked.status == "paused"  # the fork waits at the same gate
    assert forked.gate is not None and f"ai-agent resume {fork}" in forked.gate["prompt"]
    finished = await agent.resume(fork, UserPlan(approve=["*"], instructions="B"))

    assert finished.final_text == "answer after B"
    assert [e["args"] for e in log] == [{"text": "draft"}, {"text": "draft"}]
    # The original is untouched: same checkpoints, same answer.
    assert await agent.ahistory(paused.thread_id) == before
    assert (await agent.get_result(paused.thread_id)).final_text == "answer after A"
    fork_history = await agent.ahistory(fork)
    assert [e.checkpoint_id for e in fork_history[: len(before) - 8]] == [
        e.checkpoint_id for e in before[: len(before) - 8]
    ]
    record = await agent.store.get_run(fork)
    assert record is not None
    assert (record["origin"], record["parent_thread_id"], record["fork_checkpoint_id"]) == (
        "fork",
        paused.thread_id,
        at_gate.checkpoint_id,
    )


async def test_a_fork_from_before_a_grant_does_not_inherit_it(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    turns = [call("note", text="one"), call("note", text="two"), text("done")]
    agent = make_agent(turns, tools=[recorder(log, category=ToolCategory.MODIFICATION)])
    paused = await agent.run("two notes")
    done = await agent.resume(paused.thread_id, UserPlan(approve=["*"], grant_scope="tool"))
    assert done.status == "completed"  # the tool grant let the second note through
    assert (await agent.get_state(paused.thread_id))["grants"][0]["scope"] == "tool"

    at_gate = next(e for e in await agent.ahistory(paused.thread_id) if e.paused)
    fork = await agent.afork(paused.thread_id, at_gate.checkpoint_id)
    assert (await agent.get_state(fork))["grants"] == []
    once = await agent.resume(fork, UserPlan(approve=["*"]))  # a call-scoped grant this time
    assert once.status == "paused"  # the second note needs approval again
    assert once.gate is not None and once.gate["issues"][0]["code"] == "APPROVAL_REQUIRED"


async def test_fork_with_a_state_update(make_agent: MakeAgent) -> None:
    seen: list[list[str]] = []

    def reply(messages: list[dict[str, Any]], info: dict[str, Any]) -> Any:
        seen.append([m["content"] for m in messages])
        return text("ok")

    agent = make_agent(model=FunctionModel(reply))
    original = await agent.run("hello")
    recall = next(e for e in await agent.ahistory(original.thread_id) if e.stage == "recall")
    update = {"messages": [{"role": "user", "content": "answer in French", "kind": "plan"}]}
    fork = await agent.afork(original.thread_id, recall.checkpoint_id, update)
    record = await agent.store.get_run(fork)
    assert record is not None and record["status"] == "forked"
    waiting = await agent.get_result(fork)  # not resumed yet: nothing failed
    assert (waiting.status, waiting.stop_reason, waiting.error) == ("forked", None, None)
    result = await agent.resume(fork)
    assert result.status == "completed"
    assert seen == [["hello"], ["hello", "answer in French"]]
    history = await agent.ahistory(fork)
    assert any(e.stage == "update" for e in history)


async def test_fork_errors_say_what_to_do(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    agent, paused = await paused_run(make_agent, log)
    entries = await agent.ahistory(paused.thread_id)
    with pytest.raises(UnknownThreadError):
        await agent.afork("ghost", entries[0].checkpoint_id)
    with pytest.raises(UnknownCheckpointError, match="ai-agent history"):
        await agent.afork(paused.thread_id, "nope")
    with pytest.raises(RunError, match="paused at the gate"):
        await agent.afork(paused.thread_id, entries[-1].checkpoint_id, {"reflection": "x"})
    with pytest.raises(RunError, match="run's input"):
        await agent.afork(paused.thread_id, entries[0].checkpoint_id, {"reflection": "x"})
    with pytest.raises(RunError, match="nonsense not in the run state"):
        await agent.afork(paused.thread_id, entries[3].checkpoint_id, {"nonsense": 1})
    with pytest.raises(RunError, match="cannot apply the update"):
        await agent.afork(paused.thread_id, entries[3].checkpoint_id, {"messages": 5})
    with pytest.raises(RunError, match=r"await agent.afork"):
        agent.fork(paused.thread_id, entries[0].checkpoint_id)


BIG_ARGS = {"id": "c1", "name": "calculator", "args": {"n": [-(2**20000)]}}


@pytest.mark.parametrize(
    ("update", "problem"),
    [
        ({"task": None}, "task must be a valid string (it is null)"),
        ({"iteration": "abc"}, 'iteration must be a valid integer (it is "abc")'),
        ({"status": "done"}, "status must be 'running', 'paused', 'completed', 'failed' or"),
        ({"messages": {"replace": [{"role": "user"}]}}, "messages.replace.0.content is missing"),
        # Before: "Integer exceeds 64-bit range", from the checkpoint's serializer, naming no key.
        ({"iteration": 2**64}, "iteration must be a whole number of at most 64 bits (it is 1844"),
        (
            {"messages": [{"role": "assistant", "content": "", "tool_calls": [BIG_ARGS]}]},
            "messages.0.tool_calls.0.args.n.0 must be a whole number of at most 64 bits (it is "
            "20001 bits long)",
        ),
    ],
)
async def test_fork_refuses_an_update_of_the_wrong_type_before_copying_anything(
    make_agent: MakeAgent, update: dict[str, Any], problem: str
) -> None:
    # Accepted, the value would reach a stage of the resumed fork and fail there (a TypeError).
    agent = make_agent(model=FunctionModel(lambda messages, info: text("ok")))
    original = await agent.run("hello")
    recall = next(e for e in await agent.ahistory(original.thread_id) if e.stage == "recall")
    with pytest.raises(RunError, match="cannot apply the update to the fork: ") as refused:
        await agent.afork(original.thread_id, recall.checkpoint_id, update)
    assert problem in str(refused.value) and "nothing was forked" in str(refused.value)
    assert [r["thread_id"] for r in await agent.store.list_runs()] == [original.thread_id]
    replaced = {"messages": {"replace": [{"role": "user", "content": "only this"}]}}
    fork = await agent.afork(original.thread_id, recall.checkpoint_id, replaced)  # right: taken
    assert (await agent.resume(fork)).status == "completed"


async def test_sync_fork_outside_an_event_loop(make_agent: MakeAgent, db: Path) -> None:
    agent = make_agent([text("one")])
    result = await agent.run("x")
    first = (await agent.ahistory(result.thread_id))[0]
    fork = await asyncio.to_thread(agent.fork, result.thread_id, first.checkpoint_id)
    again = await agent.resume(fork)
    assert again.final_text == "one"
