"""The run store's interface, the same assertions on both backends (SQLite and PostgreSQL)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest

from ai_agent.checkpoints import (
    CallPosition,
    ModelRequest,
    RunStoreProtocol,
    RunSummary,
    open_run_store,
)
from ai_agent.errors import LeaseLostError, RunError, ThreadBusyError
from ai_agent.state import Message, ToolCall, ToolResult
from tests.postgres.cluster import Cluster


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str | Path:
    if request.param == "sqlite":
        return tmp_path / "c.sqlite"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
async def store(location: str | Path) -> AsyncIterator[RunStoreProtocol]:
    opened = open_run_store(location)
    yield opened
    opened.close()


POSITION = CallPosition(step=3, stage="draft", checkpoint_id="cp")


def dead_pid() -> int:
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(child.stdout)


async def test_runs_round_trip(store: RunStoreProtocol) -> None:
    assert store.migrated_from is None
    await store.create_run("t1", "task one")
    await store.create_run("t2", "task two", parent_thread_id="t1", origin="fork", status="paused")
    await store.update_run("t1", status="paused", gate={"severity": 0.9}, error=None)
    run = await store.get_run("t1")
    assert run is not None
    assert (run["status"], run["gate"], run["task"], run["origin"]) == (
        "paused",
        {"severity": 0.9},
        "task one",
        "run",
    )
    child = await store.get_run("t2")
    assert child is not None and (child["parent_thread_id"], child["origin"]) == ("t1", "fork")
    assert await store.get_run("none") is None
    assert [r["thread_id"] for r in await store.list_runs()] == ["t1", "t2"]
    assert [r["thread_id"] for r in await store.list_runs(limit=None)] == ["t1", "t2"]
    assert [r["thread_id"] for r in await store.list_runs(limit=1)] == ["t1"]
    assert [r["thread_id"] for r in await store.list_runs(status="paused")] == ["t1", "t2"]
    assert [r["thread_id"] for r in await store.list_runs(parent_thread_id="t1")] == ["t2"]


async def test_run_summaries_belong_to_the_row_they_were_written_with(
    store: RunStoreProtocol,
) -> None:
    summary = RunSummary(stop_reason="finished", model="m", tokens=12, cost=0.5)
    for thread in ("s1", "s2"):
        await store.create_run(thread, "task")
    await store.update_run("s1", status="completed", summary=summary)
    await store.update_run("s2", status="paused", summary={**summary, "cost": None})
    assert await store.run_summaries(["s1", "s2", "none"]) == {
        "s1": summary,
        "s2": {**summary, "cost": None},
    }
    await store.update_run("s1", status="running")  # the row moved on: the summary is stale
    assert await store.run_summaries(["s1", "s2"]) == {"s2": {**summary, "cost": None}}


async def test_a_child_run_names_its_parents_step(store: RunStoreProtocol) -> None:
    await store.create_run("p", "the parent")
    await store.create_run(
        "p.c2.0", "the subtask", parent_thread_id="p", origin="child",
        parent_iteration=2, parent_call_id="c2.0",
    )  # fmt: skip
    child = await store.get_run("p.c2.0")
    assert child is not None
    assert (child["origin"], child["parent_thread_id"]) == ("child", "p")
    assert (child["parent_iteration"], child["parent_call_id"]) == (2, "c2.0")
    parent = await store.get_run("p")
    assert parent is not None and (parent["parent_iteration"], parent["parent_call_id"]) == (
        None,
        None,
    )
    assert [r["thread_id"] for r in await store.list_runs(parent_thread_id="p")] == ["p.c2.0"]


async def test_creating_a_run_that_exists_says_so(store: RunStoreProtocol) -> None:
    """Of two processes starting one new thread, the second gets a RunError (no driver error)."""
    await store.create_run("t", "first")
    with pytest.raises(RunError, match="thread t already exists; resume it"):
        await store.create_run("t", "second")
    run = await store.get_run("t")
    assert run is not None and run["task"] == "first"


async def test_a_held_lease_makes_others_busy_until_released(store: RunStoreProtocol) -> None:
    lease = await store.acquire("t")
    with pytest.raises(ThreadBusyError, match=r"is being worked on by process \d+"):
        await store.acquire("t")
    renewed = await store.renew(lease, seconds=600)
    assert renewed.expires_at > lease.expires_at
    await store.release(renewed)
    again = await store.acquire("t")
    await store.release(lease)  # a stale holder cannot release someone else's lease
    with pytest.raises(ThreadBusyError):
        await store.acquire("t")
    await store.release(again)


async def test_an_expired_lease_can_be_taken(store: RunStoreProtocol) -> None:
    await store.acquire("t", seconds=-1)
    lease = await store.acquire("t")
    assert lease.thread_id == "t"


async def test_a_stale_holders_writes_are_refused_after_a_takeover(
    store: RunStoreProtocol, location: str | Path
) -> None:
    """Every write of a lease holder is checked against its lease, in its own transaction."""
    await store.create_run("t", "task")
    call = ToolCall(id="c1", name="note", args={})
    stale = await store.acquire("t", seconds=-1)  # it stalled past its lease
    other = open_run_store(location)  # another process
    taker = await other.acquire("t")
    plan = await other.submit_plan("t", {"approve": ["*"]}, gate_checkpoint_id=None)
    writes: list[Callable[[], Awaitable[Any]]] = [
        lambda: store.update_run("t", status="failed", error="stale"),
        lambda: store.intent("t", 1, call),
        lambda: store.outcome("t", 1, call, ToolResult(status="ok", content="x")),
        lambda: store.forget("t", 1, "c1"),
        lambda: store.save_output("t", 1, call, "x"),
        lambda: store.record_model_call(
            "t",
            POSITION,
            "h",
            ModelRequest(messages=[], tools=[], params={}),
            message=None,
            usage={},
            error=None,
            latency_ms=1,
        ),
        lambda: store.record_tool_call("t", POSITION, call, "a", iteration=1, duration_ms=1),
        lambda: store.claim_plan(plan["id"], "w"),
        lambda: store.finish_plan(plan["id"], status="done"),
    ]
    for write in writes:
        with pytest.raises(
            LeaseLostError,
            match=r"the lease on thread t was taken over .*"
            r"\(process \d+ on .* holds it now and carries the run on\)",
        ):
            await write()
    with pytest.raises(LeaseLostError):  # nor can it renew the lease it lost
        await store.renew(stale)
    run = await other.get_run("t")
    assert run is not None and (run["status"], run["error"]) == ("running", None)
    assert await other.lookup("t", 1, "c1") is None
    assert (await other.model_calls("t"), await other.tool_calls("t")) == ([], [])
    assert await other.list_outputs("t") == []
    queued = await other.get_plan(plan["id"])
    assert queued is not None and queued["status"] == "queued"
    await other.update_run("t", status="paused")  # the holder's own writes go through
    await other.release(taker)
    with pytest.raises(LeaseLostError, match="no process holds it now; `ai-agent resume t`"):
        await other.renew(taker)  # a released lease is not renewed as if it were new
    other.close()


async def test_the_journal_records_intent_then_outcome(store: RunStoreProtocol) -> None:
    call = ToolCall(id="c1", name="note", args={"text": "x"})
    assert await store.lookup("t", 0, "c1") is None
    await store.intent("t", 0, call)
    entry = await store.lookup("t", 0, "c1")
    assert entry is not None and (entry["status"], entry["result"]) == ("intent", None)
    await store.intent("t", 0, call)  # a re-run after a crash replaces the intent
    result = ToolResult(status="ok", content="noted")
    await store.outcome("t", 0, call, result)
    entry = await store.lookup("t", 0, "c1")
    assert entry is not None and (entry["status"], entry["result"]) == ("done", result)
    await store.forget("t", 0, "c1")  # only an intent can be forgotten
    assert await store.lookup("t", 0, "c1") is not None
    await store.intent("t", 1, call)
    await store.forget("t", 1, "c1")
    assert await store.lookup("t", 1, "c1") is None
    assert await store.delete_journal("t") == 1


async def test_recorded_calls_store_bodies_once(store: RunStoreProtocol) -> None:
    hello = Message(role="user", content="hello")
    answer = Message(role="assistant", content="hi")
    request = ModelRequest(messages=[hello], tools=[{"name": "t"}], params={"temperature": 0})
    seq = await store.record_model_call(
        "t", POSITION, "h1", request, message=answer, usage={"total_tokens": 3}, error=None,
        latency_ms=1.5,
    )  # fmt: skip
    longer = ModelRequest(messages=[hello, answer, hello], tools=[{"name": "t"}], params={})
    await store.record_model_call(
        "t", POSITION, "h2", longer, message=None, usage={}, error={"kind": "x"}, latency_ms=2,
        replayed=True,
    )  # fmt: skip
    await store.record_model_call(
        "u", POSITION, "h1", request, message=answer, usage={}, error=None, latency_ms=1
    )
    calls = await store.model_calls("t")
    assert [(c["request_hash"], c["replayed"], c["error"]) for c in calls] == [
        ("h1", False, None),
        ("h2", True, {"kind": "x"}),
    ]
    assert calls[0]["message"] == answer and calls[0]["seq"] == seq
    assert await store.model_request(calls[1]["seq"]) == longer
    with pytest.raises(KeyError):
        await store.model_request(10_000)
    call = ToolCall(id="c1", name="note", args={"text": "x"})
    await store.intent("t", 0, call)
    await store.record_tool_call("t", POSITION, call, "ah", iteration=0, duration_ms=3)
    await store.outcome("t", 0, call, ToolResult(status="ok", content="ok"))
    (tool,) = await store.tool_calls("t")
    assert (tool["call"], tool["iteration"], tool["stage"]) == (call, 0, "draft")
    assert await store.delete_calls("t") == 3
    assert await store.model_calls("t") == []
    (kept,) = await store.model_calls("u")  # the other thread's bodies are still there
    assert await store.model_request(kept["seq"]) == request
    await store.vacuum()


async def test_a_recorded_tool_call_reads_its_outcome_from_the_journal(
    store: RunStoreProtocol,
) -> None:
    """The journal entry is the one record of a call's outcome; the recorded call names it."""
    call = ToolCall(id="c1", name="note", args={"text": "x"})
    await store.intent("t", 2, call)
    seq = await store.record_tool_call("t", POSITION, call, "ah", iteration=2, duration_ms=3)
    assert await store.tool_calls("t") == []  # no outcome yet: none is recorded
    result = ToolResult(status="ok", content="noted")
    await store.outcome("t", 2, call, result)
    (tool,) = await store.tool_calls("t")
    assert (tool["seq"], tool["call"], tool["result"], tool["args_hash"]) == (
        seq,
        call,
        result,
        "ah",
    )
    assert (tool["duration_ms"], tool["replayed"], tool["step"]) == (3, False, 3)
    # A finished run's journal goes, but the entries its kept recorded calls name.
    await store.intent("t", 3, ToolCall(id="c2", name="note", args={}))
    assert await store.delete_journal("t") == 1
    assert [t["result"] for t in await store.tool_calls("t")] == [result]
    assert await store.delete_calls("t") == 1
    assert await store.delete_journal("t") == 1
    assert await store.lookup("t", 2, "c1") is None


def text_rows(location: str | Path) -> int:
    """How many large texts the database holds (``agent_texts``), read past the store."""
    if isinstance(location, Path):
        with sqlite3.connect(location) as conn:
            return int(conn.execute("SELECT count(*) FROM agent_texts").fetchone()[0])
    with psycopg.connect(location) as pg:
        row = pg.execute("SELECT count(*) FROM agent_texts").fetchone()
        return int(row[0]) if row else 0


async def test_recorded_bodies_store_a_large_text_once(
    store: RunStoreProtocol, location: str | Path
) -> None:
    """A long text in two messages of two threads' requests is one row, gone with the last."""
    plan = "a line of a long plan. " * 1000
    lookalike = "\x00ai-agent:s" + "0" * 64  # not a text: it must come back as it was
    call = ToolCall(id="c1", name="note", args={"text": plan})
    request = ModelRequest(
        messages=[
            Message(role="user", content=plan, kind="plan"),
            Message(role="assistant", content=lookalike, tool_calls=[call]),
        ],
        tools=[{"name": "note", "description": plan}],
        params={},
    )
    for thread in ("t", "u"):
        await store.record_model_call(
            thread, POSITION, "h", request, message=None, usage={}, error=None, latency_ms=1
        )
    assert text_rows(location) == 2  # the plan and the look-alike, each once
    for thread in ("t", "u"):
        (recorded,) = await store.model_calls(thread)
        assert await store.model_request(recorded["seq"]) == request
    await store.delete_calls("t")
    assert text_rows(location) == 2
    await store.delete_calls("u")
    assert text_rows(location) == 0


async def test_the_plan_queue(store: RunStoreProtocol) -> None:
    plan = {"approve": ["*"], "allow_continue": True}
    first = await store.submit_plan("t", plan, gate_checkpoint_id="cp1")
    assert (first["status"], first["plan"], first["attempts"]) == ("queued", plan, 0)
    with pytest.raises(RunError, match=rf"already queued \(plan {first['id']}\)"):
        await store.submit_plan("t", plan, gate_checkpoint_id="cp1")
    other = await store.submit_plan("u", plan, gate_checkpoint_id=None)
    assert [p["id"] for p in await store.list_plans(status="queued")] == [first["id"], other["id"]]
    assert [p["id"] for p in await store.list_plans(thread_id="u", limit=None)] == [other["id"]]
    assert await store.claim_plan(first["id"], "w1")
    assert not await store.claim_plan(first["id"], "w2")  # one claim wins
    assert await store.claim_plan(first["id"], "w2", reclaim=True)  # w1 died: w2 takes it over
    claimed = await store.get_plan(first["id"])
    assert claimed is not None
    assert (claimed["status"], claimed["claimed_by"], claimed["attempts"]) == ("claimed", "w2", 2)
    with pytest.raises(RunError):  # still open: no second plan for t
        await store.submit_plan("t", plan, gate_checkpoint_id="cp1")
    await store.finish_plan(first["id"], status="done", outcome="completed")
    done = await store.get_plan(first["id"])
    assert done is not None and (done["status"], done["outcome"]) == ("done", "completed")
    assert done["finished_at"] is not None
    again = await store.submit_plan("t", plan, gate_checkpoint_id="cp2")  # the next gate's plan
    assert again["id"] > other["id"]
    assert await store.get_plan(10_000) is None


async def test_clipped_outputs_are_kept_whole(store: RunStoreProtocol) -> None:
    call = ToolCall(id="c1", name="read", args={})
    ref = await store.save_output("t", 2, call, "x" * 10)
    assert ref == "out-2-c1"
    assert await store.save_output("t", 2, call, "y" * 12) == ref  # a re-run replaces it
    kept = await store.get_output("t", ref)
    assert kept is not None
    assert (kept["content"], kept["chars"], kept["tool"], kept["iteration"]) == (
        "y" * 12,
        12,
        "read",
        2,
    )
    assert await store.get_output("t", "out-9-none") is None
    await store.save_output("t", 3, ToolCall(id="c2", name="read", args={}), "z")
    assert await store.list_outputs("t") == ["out-2-c1", "out-3-c2"]
    assert await store.list_outputs("other") == []


async def test_a_lease_of_a_dead_process_on_this_host_can_be_taken(
    store: RunStoreProtocol,
) -> None:
    lease = await store.acquire("t")
    pid = dead_pid()
    # Make the holder a process that has exited (same host), as after a crash.
    await _set_lease_pid(store, "t", pid)
    taken = await store.acquire("t")
    assert taken.owner != lease.owner


async def _set_lease_pid(store: RunStoreProtocol, thread_id: str, pid: int) -> None:
    from ai_agent.checkpoints import RunStore

    if isinstance(store, RunStore):
        with store._tx() as conn:
            conn.execute("UPDATE agent_leases SET pid = ? WHERE thread_id = ?", (pid, thread_id))
        return
    import psycopg

    with psycopg.connect(store.url) as conn:  # type: ignore[attr-defined]
        conn.execute("UPDATE agent_leases SET pid = %s WHERE thread_id = %s", (pid, thread_id))


def test_the_cluster_fixture_uses_a_password(pg_cluster: Cluster) -> None:
    assert pg_cluster.password.startswith("canary-")
