"""Plans built to hurt, given where a plan arrives: resumed, queued, or edited in the queue's row.

A plan's edited arguments are any JSON data a person wrote, and the run's checkpoint must keep
them: its serializer (msgpack) takes whole numbers from -2**63 to 2**64 - 1 only, and the plan
queue's rows are strict JSON (no NaN, no Infinity). A value outside those used to pass every
check of a plan and fail later, where nothing said what was wrong: a resume ended in "Integer
exceeds 64-bit range" (ValueError past 4,300 digits) instead of a plan error; ``submit_plan``
queued a plan no worker could apply, which stayed claimed, was tried again at every poll and
kept any other plan for its run out of the queue; NaN was queued, then read back as a damaged
row. Each case here must be refused where it arrives, naming the field, with the run paused.
"""

from __future__ import annotations

import contextlib
import json
import math
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ai_agent import Agent, RunResult, ToolCategory, ToolSpec
from ai_agent.errors import InvalidPlanError
from ai_agent.graph import Worker
from ai_agent.graph.worker import WorkerEvent
from tests.graph.conftest import MakeAgent, call, text
from tests.graph.test_pipeline_interrupts import confirming

# Whole numbers no checkpoint can keep, and floats that are no JSON number.
UNSTORABLE = {
    "2**64": 2**64,
    "-2**63-1": -(2**63) - 1,
    "10**5000": 10**5000,  # past Python's 4,300 digits, json.dumps itself raises
    "nan": math.nan,
    "inf": math.inf,
    "-inf": -math.inf,
}
# The edges a checkpoint does keep: these must still run.
STORABLE = {"2**64-1": 2**64 - 1, "-2**63": -(2**63), "float": 0.5}


def counter(log: list[dict[str, Any]]) -> ToolSpec:
    """A modification tool with an argument of any type (its schema leaves ``n`` open)."""

    def fn(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        log.append(args)
        return {"status": "ok", "content": "set"}

    return ToolSpec(
        "set_count",
        fn,
        description="Set the count.",
        category=ToolCategory.MODIFICATION,
        parameters={"type": "object", "properties": {"n": {}}},
    )


async def paused_run(make_agent: MakeAgent, log: list[dict[str, Any]]) -> tuple[Agent, RunResult]:
    agent = make_agent([call("set_count", n=1), text("done")], tools=[counter(log)])
    paused = await agent.run("set the count")
    assert paused.status == "paused", paused
    return agent, paused


def edit_of(paused: RunResult, value: Any) -> dict[str, Any]:
    """A plan that approves the waiting call with ``n`` edited to ``value``."""
    assert paused.gate is not None
    (waiting,) = paused.gate["pending"]
    return {"edit_args": {waiting["call"]["id"]: {"n": value}}}


def call_id(paused: RunResult) -> str:
    assert paused.gate is not None
    return str(paused.gate["pending"][0]["call"]["id"])


@pytest.mark.parametrize("value", UNSTORABLE.values(), ids=UNSTORABLE.keys())
async def test_a_resumed_plan_with_a_value_no_checkpoint_keeps_is_refused_naming_it(
    make_agent: MakeAgent, value: Any
) -> None:
    log: list[dict[str, Any]] = []
    agent, paused = await paused_run(make_agent, log)
    with pytest.raises(InvalidPlanError, match=rf"edit_args\.{call_id(paused)}\.n ") as refused:
        await agent.resume(paused.thread_id, edit_of(paused, value))
    assert "The run is still paused" in str(refused.value)
    assert log == []
    assert (await agent.get_result(paused.thread_id)).status == "paused"
    # The person writes a number the run can keep, and it runs as written.
    done = await agent.resume(paused.thread_id, edit_of(paused, 7))
    assert done.status == "completed" and log == [{"n": 7}]


@pytest.mark.parametrize("value", UNSTORABLE.values(), ids=UNSTORABLE.keys())
async def test_a_queued_plan_with_a_value_no_checkpoint_keeps_is_refused_and_not_queued(
    make_agent: MakeAgent, value: Any
) -> None:
    log: list[dict[str, Any]] = []
    agent, paused = await paused_run(make_agent, log)
    with pytest.raises(InvalidPlanError, match=rf"edit_args\.{call_id(paused)}\.n "):
        await agent.submit_plan(paused.thread_id, edit_of(paused, value))
    # Nothing was queued: the thread's queue is free for the corrected plan, which a worker
    # serves at once (before, the plan sat claimed and blocked the queue of its run).
    assert await agent.list_plans(thread_id=paused.thread_id) == []
    await agent.submit_plan(paused.thread_id, edit_of(paused, 7))
    (outcome,) = await Worker(agent).run(once=True)
    assert (outcome.status, outcome.run_status) == ("done", "completed")
    assert log == [{"n": 7}]


@pytest.mark.parametrize("value", STORABLE.values(), ids=STORABLE.keys())
async def test_the_values_a_checkpoint_keeps_still_run_from_the_queue(
    make_agent: MakeAgent, value: Any
) -> None:
    log: list[dict[str, Any]] = []
    agent, paused = await paused_run(make_agent, log)
    await agent.submit_plan(paused.thread_id, edit_of(paused, value))
    (outcome,) = await Worker(agent).run(once=True)
    assert outcome.run_status == "completed" and log == [{"n": value}]


async def test_a_queued_row_edited_to_an_unstorable_number_is_refused_not_retried_forever(
    make_agent: MakeAgent, db: Path
) -> None:
    log: list[dict[str, Any]] = []
    agent, paused = await paused_run(make_agent, log)
    queued = await agent.submit_plan(paused.thread_id, edit_of(paused, 7))
    # The row edited in place, its token kept: only its number is one no checkpoint keeps.
    plan = {**queued["plan"], **edit_of(paused, 2**64)}
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(
            "UPDATE agent_plans SET plan = ? WHERE id = ?", (json.dumps(plan), queued["id"])
        )
    events: list[WorkerEvent] = []
    # Two passes, as a long-lived worker makes: the plan must be settled by the first.
    for _ in range(2):
        await Worker(agent, on_event=events.append).run(once=True)
    assert [e["type"] for e in events] == ["refused"], events
    assert "edit_args" in str(events[0]["error"]) and log == []
    (row,) = await agent.list_plans(thread_id=paused.thread_id)
    assert (row["status"], row["attempts"]) == ("refused", 1)
    assert (await agent.get_result(paused.thread_id)).status == "paused"
    # The run's queue is free again, and an honest plan is served.
    await agent.submit_plan(paused.thread_id, edit_of(paused, 7))
    (done,) = await Worker(agent).run(once=True)
    assert done.run_status == "completed" and log == [{"n": 7}]


# A node of the user's pipeline that called interrupt() takes any JSON answer, queued the same way.


async def test_a_queued_node_answer_with_a_number_past_64_bits_is_refused_and_not_queued(
    make_agent: MakeAgent,
) -> None:
    agent = make_agent(pipeline=confirming())
    paused = await agent.run("the report")
    with pytest.raises(InvalidPlanError, match=r"node confirm: n must be a whole number of at"):
        await agent.submit_plan(paused.thread_id, {"n": 2**64})
    assert await agent.list_plans(thread_id=paused.thread_id) == []
    await agent.submit_plan(paused.thread_id, {"n": 2**64 - 1})
    (outcome,) = await Worker(make_agent(pipeline=confirming())).run(once=True)
    assert outcome.run_status == "completed"
    state: dict[str, Any] = dict(await agent.get_state(paused.thread_id))
    assert state["confirmed"] == {"n": 2**64 - 1}


async def test_a_node_answer_past_64_bits_given_to_resume_is_refused_naming_it(
    make_agent: MakeAgent,
) -> None:
    agent = make_agent(pipeline=confirming())
    paused = await agent.run("the report")
    with pytest.raises(InvalidPlanError, match=r"node confirm: n.0 must be a whole number of at"):
        await agent.resume(paused.thread_id, {"n": [2**64]})
    assert (await agent.get_result(paused.thread_id)).status == "paused"
    assert (await agent.resume(paused.thread_id, {"n": [7]})).status == "completed"


async def test_a_queued_node_answer_edited_past_64_bits_is_settled_not_retried_forever(
    make_agent: MakeAgent, db: Path
) -> None:
    agent = make_agent(pipeline=confirming())
    paused = await agent.run("the report")
    queued = await agent.submit_plan(paused.thread_id, {"n": 1})
    row = {**queued["plan"], "answer": {"n": 2**64}}  # its interrupt id kept
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(
            "UPDATE agent_plans SET plan = ? WHERE id = ?", (json.dumps(row), queued["id"])
        )
    events: list[WorkerEvent] = []
    for _ in range(2):
        await Worker(make_agent(pipeline=confirming()), on_event=events.append).run(once=True)
    assert [e["type"] for e in events] == ["failed"], events
    assert "64 bits" in str(events[0]["error"])
    (stored,) = await agent.list_plans(thread_id=paused.thread_id)
    assert (stored["status"], stored["attempts"]) == ("failed", 1)
    assert (await agent.get_result(paused.thread_id)).status == "paused"


# The gate token is compared in constant time (hmac.compare_digest), which takes ASCII text only.
ODD_TOKENS = {"accented": "\u00e9" * 32, "arabic-indic-digits": "\u0660" * 32}


@pytest.mark.parametrize("token", ODD_TOKENS.values(), ids=ODD_TOKENS.keys())
async def test_a_gate_token_that_is_not_ascii_is_a_plan_error_where_it_arrives(
    make_agent: MakeAgent, token: str
) -> None:
    log: list[dict[str, Any]] = []
    agent, paused = await paused_run(make_agent, log)
    plan = {"approve": ["*"], "gate_token": token}
    # Before: "comparing strings with non-ASCII characters is not supported" (TypeError).
    with pytest.raises(InvalidPlanError, match="gate_token"):
        await agent.resume(paused.thread_id, plan)
    with pytest.raises(InvalidPlanError, match="gate_token"):
        await agent.submit_plan(paused.thread_id, plan)
    assert log == [] and await agent.list_plans() == []
    assert (await agent.get_result(paused.thread_id)).status == "paused"


async def test_a_queued_row_whose_token_is_not_ascii_is_refused_not_retried_forever(
    make_agent: MakeAgent, db: Path
) -> None:
    log: list[dict[str, Any]] = []
    agent, paused = await paused_run(make_agent, log)
    queued = await agent.submit_plan(paused.thread_id, {"approve": ["*"]})
    row = {**queued["plan"], "gate_token": "\u00e9" * 32}
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(
            "UPDATE agent_plans SET plan = ? WHERE id = ?", (json.dumps(row), queued["id"])
        )
    events: list[WorkerEvent] = []
    for _ in range(2):  # before: an error at every poll, the plan claimed for ever
        await Worker(agent, on_event=events.append).run(once=True)
    assert [e["type"] for e in events] == ["refused"], events
    (stored,) = await agent.list_plans(thread_id=paused.thread_id)
    assert (stored["status"], stored["attempts"]) == ("refused", 1)
    assert log == [] and (await agent.get_result(paused.thread_id)).status == "paused"
