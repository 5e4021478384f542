"""The plan queue and the Worker, in one process on SQLite (the multi-process and PostgreSQL
cases are in tests/postgres/)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import sqlite3
import time
from pathlib import Path
from typing import Any, cast

import pytest

from ai_agent import Hooks, ToolCategory
from ai_agent.checkpoints import RunStore
from ai_agent.checkpoints.plans import PlanRecord
from ai_agent.errors import (
    InvalidPlanError,
    NothingPendingError,
    PlanRefusedError,
    RunError,
    UnknownThreadError,
)
from ai_agent.graph import Agent, Worker
from ai_agent.graph.worker import WorkerEvent
from tests.graph.conftest import MakeAgent, call, recorder, text

APPROVE = {"approve": ["*"]}


def gated(make_agent: MakeAgent, log: list[dict[str, Any]], **kwargs: Any) -> Agent:
    """An agent whose run pauses for approval of the ``note`` tool (a modification)."""
    tool = recorder(log, category=ToolCategory.MODIFICATION)
    return make_agent([call("note", text="x"), text("noted")], tools=[tool], **kwargs)


async def test_a_queued_plan_is_served_by_a_worker(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    agent = gated(make_agent, log)
    paused = await agent.run("note it")
    assert paused.status == "paused"
    queued = await agent.submit_plan(paused.thread_id, APPROVE)
    assert (queued["status"], queued["thread_id"]) == ("queued", paused.thread_id)
    assert log == []  # nothing runs until a worker takes the plan
    events: list[WorkerEvent] = []
    (outcome,) = await Worker(gated(make_agent, log), on_event=events.append).run(once=True)
    assert (outcome.status, outcome.run_status, outcome.error) == ("done", "completed", None)
    assert len(log) == 1
    assert [e["type"] for e in events] == ["done"]
    (plan,) = await agent.list_plans()
    assert (plan["status"], plan["outcome"], plan["attempts"]) == ("done", "completed", 1)
    assert (await agent.get_result(paused.thread_id)).final_text == "noted"


async def test_submit_checks_the_plan_where_it_is_written(make_agent: MakeAgent) -> None:
    agent = gated(make_agent, [])
    with pytest.raises(UnknownThreadError):
        await agent.submit_plan("nope", APPROVE)
    paused = await agent.run("note it")
    with pytest.raises(InvalidPlanError, match="no tool 'missing' in the catalog"):
        await agent.submit_plan(paused.thread_id, {"activate_tools": ["missing"]})
    with pytest.raises(InvalidPlanError):
        await agent.submit_plan(paused.thread_id, {"grant_scope": "forever"})
    await agent.submit_plan(paused.thread_id, APPROVE)
    with pytest.raises(RunError, match="already queued"):
        await agent.submit_plan(paused.thread_id, APPROVE)
    await Worker(agent).run(once=True)
    with pytest.raises(NothingPendingError):
        await agent.submit_plan(paused.thread_id, APPROVE)


async def test_a_plan_that_no_longer_fits_fails_and_the_run_stays_paused(
    make_agent: MakeAgent,
) -> None:
    extra = recorder([], name="extra")
    submitter = make_agent(
        [call("note", text="x"), text("noted")],
        tools=[recorder([], category=ToolCategory.MODIFICATION), extra],
    )
    paused = await submitter.run("note it")
    await submitter.submit_plan(paused.thread_id, {"approve": ["*"], "activate_tools": ["extra"]})
    worker_agent = gated(make_agent, [])  # has no "extra" tool
    (outcome,) = await Worker(worker_agent).run(once=True)
    assert outcome.status == "failed"
    assert "no tool 'extra' in the catalog" in str(outcome.error)
    assert (await worker_agent.get_result(paused.thread_id)).status == "paused"
    (plan,) = await worker_agent.list_plans(status="failed")
    assert "extra" in str(plan["error"])
    # The gate is still open: a new plan can be queued for it.
    await worker_agent.submit_plan(paused.thread_id, APPROVE)


async def test_a_plan_for_a_gate_the_run_has_left_is_not_applied(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    agent = gated(make_agent, log)
    paused = await agent.run("note it")
    plan = await agent.submit_plan(paused.thread_id, APPROVE)
    with cast(RunStore, agent.store)._tx() as conn:  # as if queued for an earlier gate
        conn.execute(
            "UPDATE agent_plans SET gate_checkpoint_id = 'older' WHERE id = ?", (plan["id"],)
        )
    (outcome,) = await Worker(agent).run(once=True)
    assert outcome.status == "refused" and "has moved on" in str(outcome.error)
    assert log == []


async def test_a_busy_thread_is_skipped_and_left_queued(make_agent: MakeAgent) -> None:
    agent = gated(make_agent, [])
    paused = await agent.run("note it")
    await agent.submit_plan(paused.thread_id, APPROVE)
    lease = await agent.store.acquire(paused.thread_id)  # someone is resuming it by hand
    events: list[WorkerEvent] = []
    assert await Worker(agent, on_event=events.append).run(once=True) == []
    assert [e["type"] for e in events] == ["skipped"]
    assert [p["status"] for p in await agent.list_plans()] == ["queued"]
    await agent.store.release(lease)


async def test_a_claimed_plan_whose_worker_died_is_reclaimed(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    agent = gated(make_agent, log)
    paused = await agent.run("note it")
    plan = await agent.submit_plan(paused.thread_id, APPROVE)
    assert await agent.store.claim_plan(plan["id"], "dead-worker")  # and then it died
    (outcome,) = await Worker(agent).run(once=True)
    assert (outcome.status, outcome.run_status) == ("done", "completed")
    (after,) = await agent.list_plans()
    assert after["attempts"] == 2 and len(log) == 1


async def _applied_then_died(agent: Agent, plan: PlanRecord) -> None:
    """What a worker killed after its run stopped leaves: the plan claimed, the row "running"."""
    assert await agent.store.claim_plan(plan["id"], "dead-worker")
    await agent.resume(plan["thread_id"], APPROVE)  # the dead worker's application of it
    await agent.store.update_run(plan["thread_id"], status="running")  # what it had written


async def test_a_plan_applied_by_a_worker_that_died_before_recording_it_is_recorded(
    make_agent: MakeAgent,
) -> None:
    log: list[dict[str, Any]] = []
    agent = gated(make_agent, log)
    paused = await agent.run("note it")
    plan = await agent.submit_plan(paused.thread_id, APPROVE)
    await _applied_then_died(agent, plan)
    assert len(log) == 1

    (outcome,) = await Worker(agent).run(once=True)

    assert (outcome.status, outcome.run_status, outcome.error) == ("done", "completed", None)
    assert len(log) == 1  # recorded, not run again
    (after,) = await agent.list_plans()
    assert (after["status"], after["outcome"], after["attempts"]) == ("done", "completed", 2)
    record = await agent.store.get_run(paused.thread_id)
    assert record is not None
    assert (record["status"], record["final_text"]) == ("completed", "noted")


async def test_a_plan_applied_before_its_run_paused_again_is_recorded_with_the_new_gate(
    make_agent: MakeAgent,
) -> None:
    log: list[dict[str, Any]] = []
    tool = recorder(log, category=ToolCategory.MODIFICATION)
    script = [call("note", text="a"), call("note", text="b"), text("noted twice")]
    agent = make_agent(script, tools=[tool])
    paused = await agent.run("note two things")
    plan = await agent.submit_plan(paused.thread_id, APPROVE)
    await _applied_then_died(agent, plan)  # the first note ran; the second waits at a new gate

    (outcome,) = await Worker(agent).run(once=True)

    assert (outcome.status, outcome.run_status) == ("done", "paused")
    assert [entry["args"]["text"] for entry in log] == ["a"]
    record = await agent.store.get_run(paused.thread_id)
    assert record is not None and record["status"] == "paused"
    assert record["gate"] is not None  # the new gate's report, for the inbox
    # The second gate is answered as any other: a new plan, served by a worker.
    await agent.submit_plan(paused.thread_id, APPROVE)
    outcomes = await Worker(agent).run(once=True)
    assert [o.run_status for o in outcomes] == ["completed"]
    assert [entry["args"]["text"] for entry in log] == ["a", "b"]


@pytest.mark.parametrize("ending", ["completed", "failed"])
async def test_a_run_and_the_plan_that_drove_it_are_recorded_in_one_write(
    make_agent: MakeAgent, monkeypatch: pytest.MonkeyPatch, ending: str
) -> None:
    # A worker killed right after its run's outcome was written must not leave the plan
    # claimed: the next worker could not tell that from a run resumed by hand meanwhile, and
    # would mark the plan failed (9 times in a 10,000-run drain with 388 kills).
    def persist(*args: Any) -> None:
        raise ValueError("the hook's own bug")  # the run fails after its work (a HookError)

    agent = gated(make_agent, [], hooks=Hooks(persist=persist) if ending == "failed" else None)
    paused = await agent.run("note it")
    await agent.submit_plan(paused.thread_id, APPROVE)
    store, seen = agent.store, []
    record = store.update_run

    async def update_run(thread_id: str, **fields: Any) -> None:
        await record(thread_id, **fields)
        if fields["status"] != "running":  # the outcome: what a kill right now would leave
            run = await store.get_run(thread_id)
            assert run is not None
            seen.append((run["status"], [p["status"] for p in await agent.list_plans()]))

    monkeypatch.setattr(store, "update_run", update_run)
    (outcome,) = await Worker(agent).run(once=True)

    assert (outcome.status, outcome.run_status) == ("done", ending)
    assert seen[-1] == (ending, ["done"])
    (plan,) = await agent.list_plans()
    assert plan["outcome"] == ending
    assert (plan["error"] is not None) == (ending == "failed")


async def test_a_reclaimed_plan_whose_run_was_recorded_by_someone_else_is_not_settled(
    make_agent: MakeAgent,
) -> None:
    agent = gated(make_agent, [])
    paused = await agent.run("note it")
    plan = await agent.submit_plan(paused.thread_id, APPROVE)
    assert await agent.store.claim_plan(plan["id"], "dead-worker")  # died before applying it
    await agent.resume(paused.thread_id, APPROVE)  # a person resumed it by hand meanwhile

    (outcome,) = await Worker(agent).run(once=True)

    assert outcome.status == "failed" and "nothing to resume" in (outcome.error or "")


async def test_a_plan_whose_worker_died_is_served_before_the_queue(make_agent: MakeAgent) -> None:
    agent = gated(make_agent, [])
    waiting = await agent.run("note first")  # queued first: the older plan
    await agent.submit_plan(waiting.thread_id, APPROVE)
    orphan = await agent.run("note second")
    plan = await agent.submit_plan(orphan.thread_id, APPROVE)
    assert await agent.store.claim_plan(plan["id"], "dead-worker")  # and then it died
    outcomes = await Worker(agent).run(once=True)
    # Behind the queue it would wait until the queue ran dry, which under load is never.
    assert [o.thread_id for o in outcomes] == [orphan.thread_id, waiting.thread_id]


async def test_a_claimed_plan_another_worker_is_serving_is_left_alone(
    make_agent: MakeAgent,
) -> None:
    agent = gated(make_agent, [])
    paused = await agent.run("note it")
    plan = await agent.submit_plan(paused.thread_id, APPROVE)
    lease = await agent.store.acquire(paused.thread_id)  # a live worker took it and claimed it
    assert await agent.store.claim_plan(plan["id"], "live-worker")
    events: list[WorkerEvent] = []
    assert await Worker(agent, on_event=events.append).run(once=True) == []
    assert events == []  # not even tried: its lease says it is in progress
    await agent.store.release(lease)
    (after,) = await agent.list_plans()
    assert (after["status"], after["attempts"]) == ("claimed", 1)


async def test_several_plans_at_once(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    agent = gated(make_agent, log)
    threads = [(await agent.run(f"note {i}")).thread_id for i in range(3)]
    for thread in threads:
        await agent.submit_plan(thread, APPROVE)
    outcomes = await Worker(agent, concurrency=2, poll=0.01).run(once=True)
    assert sorted(o.thread_id for o in outcomes) == sorted(threads)
    assert {o.run_status for o in outcomes} == {"completed"} and len(log) == 3


async def test_stop_ends_a_serving_worker(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    agent = gated(make_agent, log)
    worker = Worker(agent, poll=0.01)
    serving = asyncio.create_task(worker.run())
    paused = await agent.run("note it")
    await agent.submit_plan(paused.thread_id, APPROVE)
    for _ in range(500):
        if worker.outcomes:
            break
        await asyncio.sleep(0.01)
    worker.stop()
    assert [o.run_status for o in await serving] == ["completed"]


async def test_a_failing_store_is_reported_and_the_worker_goes_on(
    make_agent: MakeAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = gated(make_agent, [])
    paused = await agent.run("note it")
    await agent.submit_plan(paused.thread_id, APPROVE)

    async def broken(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(agent, "serve_plan", broken)
    events: list[WorkerEvent] = []
    assert await Worker(agent, on_event=events.append).run(once=True) == []
    assert events[0]["type"] == "error" and "disk gone" in str(events[0]["error"])


def test_worker_options_are_checked(make_agent: MakeAgent) -> None:
    with pytest.raises(RunError, match="concurrency"):
        Worker(make_agent(), concurrency=0)
    with pytest.raises(RunError, match="poll"):
        Worker(make_agent(), poll=0)
    # NaN passed "poll <= 0": a worker that polled the database without ever waiting.
    for poll, grace, outage in ((math.nan, 1.0, 1.0), (math.inf, 1.0, 1.0), (1.0, math.nan, 1.0)):
        with pytest.raises(RunError, match="finite number"):
            Worker(make_agent(), poll=poll, grace=grace, outage=outage)
    with pytest.raises(RunError, match="finite number"):
        Worker(make_agent(), outage=-1.0)


# Plan tokens: only a plan written by someone who saw the gate report is applied ---------------


def forge(db: Path, thread_id: str, plan: dict[str, Any], gate_checkpoint_id: str | None) -> None:
    """Insert a plan row as an attacker with write access to the store would: raw SQL."""
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(
            "INSERT INTO agent_plans (thread_id, plan, status, gate_checkpoint_id, submitted_at, "
            "attempts) VALUES (?, ?, 'queued', ?, ?, 0)",
            (thread_id, json.dumps(plan), gate_checkpoint_id, time.time()),
        )


@pytest.mark.parametrize(
    "plan",
    [APPROVE, {**APPROVE, "gate_token": "0" * 32}, {**APPROVE, "approve_everything": True}],
    ids=["no-token", "guessed-token", "not-a-plan"],
)
async def test_a_plan_row_written_into_the_store_is_refused(
    make_agent: MakeAgent, db: Path, caplog: pytest.LogCaptureFixture, plan: dict[str, Any]
) -> None:
    log: list[dict[str, Any]] = []
    agent = gated(make_agent, log)
    paused = await agent.run("note it")
    record = await agent.store.get_run(paused.thread_id)
    assert record is not None
    snapshot_id = (await agent.ahistory(paused.thread_id))[-1].checkpoint_id
    forge(db, paused.thread_id, plan, snapshot_id)  # even naming the right checkpoint
    caplog.set_level(logging.WARNING, logger="ai_agent")
    events: list[WorkerEvent] = []
    (outcome,) = await Worker(gated(make_agent, log), on_event=events.append).run(once=True)
    assert outcome.status == "refused" and log == []  # the gated call did not run
    assert "gate token" in str(outcome.error) or "written into the queue" in str(outcome.error)
    assert [e["type"] for e in events] == ["refused"]
    assert (await agent.get_result(paused.thread_id)).status == "paused"
    (row,) = await agent.list_plans()
    assert (row["status"], row["error"]) == ("refused", outcome.error)
    (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert f"refused plan {row['id']} for run {paused.thread_id}" in warning.getMessage()
    # The honest path still works: submit_plan attaches the token of the paused gate.
    queued = await agent.submit_plan(paused.thread_id, APPROVE)
    assert queued["plan"]["gate_token"] == gate_token_of(paused)
    (done,) = await Worker(gated(make_agent, log)).run(once=True)
    assert (done.status, done.run_status) == ("done", "completed") and len(log) == 1


def gate_token_of(result: Any) -> str:
    token: str = result.gate["token"]
    assert len(token) == 32
    return token


async def test_a_plan_for_an_earlier_gate_is_refused_as_stale(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    turns = [call("note", text="one"), call("note", text="two"), text("done")]
    agent = make_agent(turns, tools=[recorder(log, category=ToolCategory.MODIFICATION)])
    first = await agent.run("two notes")
    queued = await agent.submit_plan(first.thread_id, APPROVE)
    old_token = queued["plan"]["gate_token"]
    assert old_token == gate_token_of(first)
    # Someone answers the first gate directly; the run moves on to a second gate.
    second = await agent.resume(first.thread_id, APPROVE)
    assert second.status == "paused" and len(log) == 1
    assert gate_token_of(second) != old_token
    (outcome,) = await Worker(agent).run(once=True)
    assert outcome.status == "refused" and len(log) == 1
    assert "stale" in str(outcome.error) and "earlier gate" in str(outcome.error)
    with pytest.raises(PlanRefusedError, match="stale"):
        await agent.submit_plan(first.thread_id, {**APPROVE, "gate_token": old_token})
    with pytest.raises(PlanRefusedError, match="stale"):
        await agent.resume(first.thread_id, {**APPROVE, "gate_token": old_token})
    assert len(log) == 1
    await agent.submit_plan(first.thread_id, APPROVE)
    (done,) = await Worker(agent).run(once=True)
    assert done.run_status == "completed" and len(log) == 2


async def test_the_gate_token_survives_the_gate_being_run_again(make_agent: MakeAgent) -> None:
    agent = gated(make_agent, [])
    paused = await agent.run("note it")
    token = gate_token_of(paused)
    # A plan that fails validation leaves the interrupt pending; the token still holds.
    with pytest.raises(InvalidPlanError):
        await agent.resume(paused.thread_id, {"approve": ["nope"], "gate_token": token})
    done = await agent.resume(paused.thread_id, {**APPROVE, "gate_token": token})
    assert done.status == "completed"
    state = await agent.get_state(paused.thread_id)
    # The grant was made by the gate's re-run, from the report it computed again: same token.
    assert [g["gate"] for g in state["grants"]] == [token]
    assert state["plans"][-1]["plan"]["gate_token"] == token
