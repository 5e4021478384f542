"""Approvals bind to exactly what a person was shown, once.

A person approves a call as the gate report showed it: this run, this gate, this tool, these
arguments. The model's own call ids carry no authority: a later reply that reuses an id, or two
calls that share one in a single reply, are told apart by the engine's own call identity.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import pytest

from ai_agent import Agent, Hooks, RunResult, ToolCategory, UserPlan
from ai_agent.config import AgentSettings
from ai_agent.state import GateReport
from ai_agent.testing import MockOpenAIServer, Reply
from tests.graph.conftest import MakeAgent, recorder, text


def gate(result: RunResult) -> GateReport:
    assert result.gate is not None, result
    return result.gate


def turn(*calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    """A scripted reply whose calls carry the model's own ids: ``(id, tool, args)``."""
    return {"tool_calls": [{"id": i, "name": name, "args": args} for i, name, args in calls]}


def shown_ids(result: RunResult) -> list[str]:
    return [p["call"]["id"] for p in gate(result)["pending"]]


# A reused model id ----------------------------------------------------------------------------


async def test_an_approval_does_not_carry_over_to_a_reused_call_id(make_agent: MakeAgent) -> None:
    victim = Path("victim")
    victim.mkdir()
    (victim / "data.txt").write_text("keep me")
    turns = [
        turn(("call_1", "run_bash", {"command": "echo harmless"})),
        turn(("call_1", "run_bash", {"command": "rm -rf victim"})),
        text("done"),
    ]
    agent = make_agent(turns, tools=["run_bash"])
    paused = await agent.run("tidy up")
    (approved,) = shown_ids(paused)
    again = await agent.resume(paused.thread_id, UserPlan(approve=[approved]))
    # The second reply reused the id "call_1" with other arguments: a person is asked again.
    assert again.status == "paused"
    assert [i["code"] for i in gate(again)["issues"]] == ["APPROVAL_REQUIRED"]
    (waiting,) = gate(again)["pending"]
    assert waiting["call"]["args"] == {"command": "rm -rf victim"}
    assert waiting["call"]["id"] != approved
    assert (victim / "data.txt").read_text() == "keep me"
    done = await agent.resume(again.thread_id, UserPlan(deny=["*"]))
    assert done.status == "completed" and (victim / "data.txt").exists()


async def test_a_reused_id_with_other_arguments_asks_again(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    turns = [
        turn(("call_1", "note", {"text": "harmless"})),
        turn(("call_1", "note", {"text": "harmful"})),
        text("done"),
    ]
    agent = make_agent(turns, tools=[recorder(log, category=ToolCategory.MODIFICATION)])
    paused = await agent.run("write")
    again = await agent.resume(paused.thread_id, UserPlan(approve=shown_ids(paused)))
    assert again.status == "paused"
    assert gate(again)["issues"][0]["code"] == "APPROVAL_REQUIRED"
    assert [e["args"] for e in log] == [{"text": "harmless"}]


async def test_a_call_approval_is_spent_when_the_call_runs(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    same = ("call_1", "note", {"text": "same"})
    agent = make_agent(
        [turn(same), turn(same), text("done")],
        tools=[recorder(log, category=ToolCategory.MODIFICATION)],
        hooks=Hooks(reflect=lambda task, ctx: None),  # not the no-progress check: the policy
    )
    paused = await agent.run("write")
    again = await agent.resume(paused.thread_id, UserPlan(approve=["*"]))
    # The same model id with the same arguments, later in the run: the approval was used up.
    assert again.status == "paused" and len(log) == 1
    assert gate(again)["issues"][0]["code"] == "APPROVAL_REQUIRED"
    (grant,) = (await agent.get_state(again.thread_id))["grants"]
    assert (grant["scope"], grant["spent"]) == ("call", True)
    done = await agent.resume(again.thread_id, UserPlan(approve=["*"]))
    assert done.status == "completed" and len(log) == 2


# Broader grants: this tool (with these arguments) in this run, no other ----------------------


@pytest.mark.parametrize(("scope", "ran"), [("args", 2), ("tool", 3)])
async def test_broad_grants_reach_later_calls_of_this_run_and_no_other_thread(
    make_agent: MakeAgent, scope: Literal["args", "tool"], ran: int
) -> None:
    log: list[dict[str, Any]] = []
    turns = [
        turn(("call_1", "note", {"text": "same"})),
        turn(("call_7", "note", {"text": "same"})),
        turn(("call_1", "note", {"text": "other"})),
        text("done"),
    ]
    agent = make_agent(
        turns,
        tools=[recorder(log, category=ToolCategory.MODIFICATION)],
        hooks=Hooks(reflect=lambda task, ctx: None),
    )
    paused = await agent.run("write")
    result = await agent.resume(paused.thread_id, UserPlan(approve=["*"], grant_scope=scope))
    assert len(log) == ran  # args: the same arguments again; tool: any call of the tool
    assert result.status == ("paused" if scope == "args" else "completed")

    # A fork taken after the grant, just before the second call: another thread, no grant.
    entries = await agent.ahistory(paused.thread_id)
    before_second = next(e for e in entries if e.stage == "decide" and e.iteration == 2)
    fork = await agent.afork(paused.thread_id, before_second.checkpoint_id)
    forked = await agent.resume(fork)
    assert forked.status == "paused" and len(log) == ran
    assert gate(forked)["issues"][0]["code"] == "APPROVAL_REQUIRED"
    (grant,) = (await agent.get_state(paused.thread_id))["grants"]
    assert (grant["scope"], grant["thread_id"]) == (scope, paused.thread_id)


# Two calls with one model id in one reply -----------------------------------------------------


def assert_valid_tool_protocol(body: dict[str, Any]) -> None:
    """What OpenAI requires of a conversation: each call answered by exactly one tool message."""
    messages = body["messages"]
    for at, message in enumerate(messages):
        if message["role"] != "assistant" or not message.get("tool_calls"):
            continue
        ids = [c["id"] for c in message["tool_calls"]]
        assert len(set(ids)) == len(ids), f"repeated tool call ids {ids}"
        answers = []
        for later in messages[at + 1 :]:
            if later["role"] != "tool":
                break
            answers.append(later["tool_call_id"])
        assert sorted(answers) == sorted(ids), (ids, answers)


def answers_by_call(body: dict[str, Any]) -> dict[str, tuple[str, list[str]]]:
    """Each call the model made in the request -> (its arguments, the tool messages for it)."""
    calls = {
        c["id"]: c["function"]["arguments"]
        for m in body["messages"]
        for c in m.get("tool_calls") or []
    }
    return {
        call_id: (
            args,
            [m["content"] for m in body["messages"] if m.get("tool_call_id") == call_id],
        )
        for call_id, args in calls.items()
    }


def twin_agent(server: MockOpenAIServer, log: list[dict[str, Any]], execute_all: bool) -> Agent:
    settings = AgentSettings(model_backend={"base_url": server.base_url, "model": "m"})
    return Agent(
        tools=[recorder(log, category=ToolCategory.MODIFICATION)],
        settings=settings,
        checkpoint_path="c.sqlite",
        memory_path=None,
        execute_all_tool_calls=execute_all,
    )


TWINS = Reply(
    tool_calls=[
        {"id": "call_1", "name": "note", "args": {"text": "a"}},
        {"id": "call_1", "name": "note", "args": {"text": "b"}},
    ]
)


async def test_two_calls_sharing_an_id_both_run_when_both_are_approved() -> None:
    log: list[dict[str, Any]] = []
    with MockOpenAIServer([TWINS, Reply(text="done")]) as server:
        async with twin_agent(server, log, execute_all=True) as agent:
            paused = await agent.run("write a and b")
            ids = shown_ids(paused)
            assert len(set(ids)) == 2  # the person can tell them apart
            done = await agent.resume(paused.thread_id, UserPlan(approve=ids))
    assert done.status == "completed"
    assert [e["args"] for e in log] == [{"text": "a"}, {"text": "b"}]  # two side effects
    body = server.requests[-1].body
    assert_valid_tool_protocol(body)
    seen = answers_by_call(body)
    assert sorted(seen.values()) == [
        ('{"text": "a"}', ["noted {'text': 'a'}"]),
        ('{"text": "b"}', ["noted {'text': 'b'}"]),
    ]
    assert "call_1" in seen  # the model sees its own id where it can


async def test_two_calls_sharing_an_id_are_approved_one_by_one() -> None:
    log: list[dict[str, Any]] = []
    with MockOpenAIServer([TWINS, Reply(text="done")]) as server:
        async with twin_agent(server, log, execute_all=True) as agent:
            paused = await agent.run("write a and b")
            first, second = shown_ids(paused)
            done = await agent.resume(paused.thread_id, UserPlan(approve=[first], deny=[second]))
    assert done.status == "completed"
    assert [e["args"] for e in log] == [{"text": "a"}]
    body = server.requests[-1].body
    assert_valid_tool_protocol(body)
    assert sorted(answers_by_call(body).values()) == [
        ('{"text": "a"}', ["noted {'text': 'a'}"]),
        ('{"text": "b"}', ["Tool execution cancelled"]),
    ]


async def test_two_calls_sharing_an_id_one_per_cycle() -> None:
    log: list[dict[str, Any]] = []
    with MockOpenAIServer([TWINS, Reply(text="done")]) as server:
        async with twin_agent(server, log, execute_all=False) as agent:
            paused = await agent.run("write a and b")
            (only,) = shown_ids(paused)
            done = await agent.resume(paused.thread_id, UserPlan(approve=[only]))
    assert done.status == "completed"
    assert [e["args"] for e in log] == [{"text": "a"}]
    body = server.requests[-1].body
    assert_valid_tool_protocol(body)
    (skipped,) = [v for v in answers_by_call(body).values() if v[0] == '{"text": "b"}']
    assert skipped[1] == [
        "Skipped: one action per cycle. Call it again next cycle if it is still needed."
    ]
