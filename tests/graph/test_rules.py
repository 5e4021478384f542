"""Always-allow rules: a person's approval stored in the run store, honoured by act's screening.

Each test makes real runs over a SQLite file: a plan that asks for a rule stores it, a later
matching call (a later turn, another run) runs without a gate, the call's records name the rule,
a revoked rule lets nothing through, and a tampered row fails closed with the reason.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ai_agent import Agent, RunResult, ToolCategory, ToolSpec, UserPlan
from ai_agent.errors import InvalidPlanError
from ai_agent.graph import Worker
from ai_agent.testing import ScriptedModel
from tests.conftest import tool_rule
from tests.graph.conftest import MakeAgent, call, text


def _note(log: list[dict[str, Any]], *, dangerous: str | None = None) -> ToolSpec:
    """A modification tool; a call whose text is ``dangerous`` is escalated to a person."""

    def fn(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        log.append(args)
        return {"status": "ok", "content": f"noted {args['text']}"}

    def escalate(args: dict[str, Any]) -> str | None:
        return "this note wipes the others" if args.get("text") == dangerous else None

    return ToolSpec(
        "note",
        fn,
        description="Record a note.",
        category=ToolCategory.MODIFICATION,
        parameters={"type": "object", "properties": {"text": {"type": "string"}}},
        escalate=escalate,
    )


def _agent(make_agent: MakeAgent, log: list[dict[str, Any]], *turns: Any, **kw: Any) -> Agent:
    return make_agent(list(turns), tools=[_note(log, **kw)])


def _waiting(result: RunResult) -> str:
    assert result.status == "paused" and result.gate is not None, result
    (pending,) = result.gate["pending"]
    return pending["call"]["id"]


async def _allowed_by(agent: Agent, thread_id: str) -> list[int]:
    return [o["rule"] for o in (await agent.get_state(thread_id))["results"] if "rule" in o]


async def test_a_run_rule_lets_later_calls_of_the_run_through_and_no_other_run(
    make_agent: MakeAgent,
) -> None:
    log: list[dict[str, Any]] = []
    turns = [call("note", text="a"), call("note", text="b"), text("done")]
    agent = _agent(make_agent, log, *turns)
    paused = await agent.run("notes", thread_id="r1")
    done = await agent.resume("r1", UserPlan(approve=["*"], always_allow="run"))
    assert done.status == "completed" and [e["text"] for e in log] == ["a", "b"]
    (made,) = await agent.store.list_rules()
    assert (made["scope"], made["thread_id"], made["tool"]) == ("run", "r1", "note")
    assert made["source"] == f"run r1, cycle 1, call {_waiting(paused)}"
    assert await _allowed_by(agent, "r1") == [made["id"]]  # the second call, not the approved one
    trace = (await agent.get_state("r1"))["trace"]
    assert any(
        f"allowed by rule {made['id']} (note, in run r1)" in t.get("detail", "") for t in trace
    )
    summaries = [e.summary for e in await agent.ahistory("r1")]
    assert any("plan (resume): approve *; always allow (run)" in s for s in summaries)
    other = _agent(make_agent, log, call("note", text="c"), text("done"))
    assert (await other.run("notes", thread_id="r2")).status == "paused"


async def test_an_args_rule_lets_the_same_arguments_through_in_another_run(
    make_agent: MakeAgent,
) -> None:
    log: list[dict[str, Any]] = []
    agent = _agent(make_agent, log, call("note", text="same"), text("done"))
    await agent.run("notes", thread_id="a1")
    await agent.resume("a1", UserPlan(approve=["*"], always_allow="args"))
    again = _agent(make_agent, log, call("note", text="same"), text("done"))
    done = await again.run("notes", thread_id="a2")
    assert done.status == "completed" and [e["text"] for e in log] == ["same", "same"]
    (made,) = await again.store.list_rules()
    assert made["args"] == {"text": "same"}
    assert await _allowed_by(again, "a2") == [made["id"]]
    other = _agent(make_agent, log, call("note", text="different"), text("done"))
    assert (await other.run("notes", thread_id="a3")).status == "paused"


async def test_an_always_rule_for_a_modification_tool_needs_a_confirmation(
    make_agent: MakeAgent,
) -> None:
    log: list[dict[str, Any]] = []
    agent = _agent(make_agent, log, call("note", text="x"), text("done"))
    await agent.run("notes", thread_id="t1")
    with pytest.raises(InvalidPlanError, match=r"confirm it \(confirm_always"):
        await agent.resume("t1", UserPlan(approve=["*"], always_allow="tool"))
    assert await agent.store.list_rules() == [] and log == []
    assert (await agent.get_result("t1")).status == "paused"
    plan = UserPlan(approve=["*"], always_allow="tool", confirm_always=True)
    assert (await agent.resume("t1", plan)).status == "completed"
    later = _agent(make_agent, log, call("note", text="y"), text("done"))
    assert (await later.run("notes", thread_id="t2")).status == "completed"
    assert [e["text"] for e in log] == ["x", "y"]


async def test_a_tool_rule_never_covers_a_call_the_tool_escalates(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    agent = _agent(make_agent, log, call("note", text="x"), text("done"), dangerous="wipe")
    await agent.run("notes", thread_id="e1")
    plan = UserPlan(approve=["*"], always_allow="tool", confirm_always=True)
    await agent.resume("e1", plan)
    later = _agent(make_agent, log, call("note", text="wipe"), text("done"), dangerous="wipe")
    paused = await later.run("notes", thread_id="e2")
    assert paused.status == "paused" and [e["text"] for e in log] == ["x"]
    assert paused.gate is not None
    assert "this note wipes the others" in paused.gate["issues"][0]["message"]


async def test_a_revoked_rule_lets_nothing_through(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    agent = _agent(make_agent, log, call("note", text="same"), text("done"))
    await agent.run("notes", thread_id="v1")
    await agent.resume("v1", UserPlan(approve=["*"], always_allow="args"))
    (made,) = await agent.store.list_rules()
    await agent.store.revoke_rule(made["id"])
    again = _agent(make_agent, log, call("note", text="same"), text("done"))
    assert (await again.run("notes", thread_id="v2")).status == "paused"


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ("scope = 'everything'", "has an unknown scope 'everything'"),
        ("confirmed = 0", "(a modification tool) run in every run, but nobody confirmed that"),
        ("confirmed = 'yes'", "cannot be read (its confirmation is neither 0 nor 1)"),
        ("args = '[1]'", "cannot be read (its arguments are not a JSON object)"),
    ],
)
async def test_a_tampered_rule_fails_closed_and_the_gate_says_why(
    make_agent: MakeAgent, db: Path, change: str, problem: str
) -> None:
    log: list[dict[str, Any]] = []
    agent = _agent(make_agent, log, call("note", text="x"), text("done"))
    await agent.run("notes", thread_id="m1")
    await agent.resume("m1", UserPlan(approve=["*"], always_allow="tool", confirm_always=True))
    with sqlite3.connect(db) as conn:
        conn.execute(f"UPDATE agent_rules SET {change}")
    later = _agent(make_agent, log, call("note", text="y"), text("done"))
    paused = await later.run("notes", thread_id="m2")
    assert paused.status == "paused" and [e["text"] for e in log] == ["x"]
    assert paused.gate is not None
    message = paused.gate["issues"][0]["message"]
    assert problem in message and "it is not used (revoke it: ai-agent rules revoke" in message


async def test_always_allow_without_an_approved_call_is_refused(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    agent = _agent(make_agent, log, call("note", text="x"), text("done"))
    await agent.run("notes", thread_id="n1")
    with pytest.raises(InvalidPlanError, match="it approves none"):
        await agent.resume("n1", UserPlan(instructions="go on", always_allow="run"))


async def test_a_queued_rule_is_stored_when_the_worker_applies_the_plan(
    make_agent: MakeAgent,
) -> None:
    log: list[dict[str, Any]] = []
    agent = _agent(make_agent, log, call("note", text="q"), text("done"))
    await agent.run("notes", thread_id="w1")
    await agent.submit_plan("w1", {"approve": ["*"], "always_allow": "args"})
    assert await agent.store.list_rules() == []  # queued, not applied: no rule yet
    (outcome,) = await Worker(agent).run(once=True)
    assert outcome.run_status == "completed"
    (made,) = await agent.store.list_rules()
    assert made["args"] == {"text": "q"}


async def test_an_edited_call_makes_a_rule_for_the_arguments_that_ran(
    make_agent: MakeAgent,
) -> None:
    log: list[dict[str, Any]] = []
    agent = _agent(make_agent, log, call("note", text="draft"), text("done"))
    paused = await agent.run("notes", thread_id="d1")
    plan = UserPlan(edit_args={_waiting(paused): {"text": "final"}}, always_allow="args")
    await agent.resume("d1", plan)
    (made,) = await agent.store.list_rules()
    assert made["args"] == {"text": "final"}


async def test_a_replay_uses_no_rule(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    agent = _agent(make_agent, log, call("note", text="p"), text("done"))
    await agent.run("notes", thread_id="p1")
    original = await agent.resume("p1", UserPlan(approve=["*"]))
    await agent.store.add_rule(tool_rule("note", "k"))
    replayer = make_agent(model=ScriptedModel([]), tools=[_note(log)])
    replay = await replayer.replay(original.thread_id)
    assert replay.divergence is None and replay.status == "completed"
    assert await _allowed_by(replayer, replay.thread_id) == []
