"""A worker's stderr and memory through outages: JSON lines only, bounded memory, timeouts.

Real parts only, as in ``test_hostile_worker.py`` (whose fixtures and helpers these reuse): a
private PostgreSQL server, ``ai-agent worker`` as a process of its own, the server stopped,
restarted or reconfigured with plain SQL. What a worker remembers is looked at in a `Worker` of
this process, on the same server, with a trigger refusing some plans' claims.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import psycopg
import pytest

from ai_agent.graph import Worker, WorkerEvent
from tests.postgres.cluster import Cluster
from tests.postgres.conftest import MakePgAgent
from tests.postgres.procs import lines, start_cli, wait_for
from tests.postgres.test_hostile_worker import (
    WORKER,
    _connected,
    _pg_ctl,
    json_lines,
    own_cluster,
    stop_worker,
    until,
)
from tests.postgres.test_pg_worker import paused_run, plans, submit

__all__ = ["own_cluster"]  # the fixture, imported for the tests here


def test_a_json_worker_writes_only_json_lines_through_an_outage(
    own_cluster: Cluster, tmp_path: Path
) -> None:
    url = own_cluster.create_database("jsononly")
    paused_run(url, tmp_path, "t1")
    worker = start_cli(tmp_path, *WORKER, "--db", url, "--json")
    until(lambda: _connected(url), worker, "the worker polls")
    _pg_ctl(own_cluster, "stop")
    time.sleep(2)  # the pools find their connections broken and fail to reconnect
    _pg_ctl(own_cluster, "start")
    submit(url, tmp_path, "t1", {"approve": ["*"]})
    until(lambda: plans(url)[0][1] == "done", worker, "the plan is served after the restart")
    code, out, err = stop_worker(worker)
    assert code == 0, err
    told = [json.loads(line) for line in err.splitlines()]  # every line, not only some
    assert all(isinstance(t, dict) for t in told)
    # The pool's own warnings among them ("error connecting in 'ai-agent-run-store': ..."),
    # each one object, its continuation lines inside it.
    pool = [t for t in told if t["type"] == "log" and t["logger"] == "psycopg.pool"]
    assert pool, err
    assert all(t["level"] == "WARNING" and t["message"] for t in pool)
    # Whether a poll failed depends on the timing (the pool may wait the outage out); if one
    # did, the worker said so and then that it recovered.
    events = [t["type"] for t in told if t["type"] != "log"]
    assert events == [] or events[-1] == "recovered", err
    assert own_cluster.password not in out + err


# A long-lived worker's memory ------------------------------------------------------------------
def _refuse_claims(url: str) -> None:
    """Make every claim of a ``bad-*`` plan fail (serving it raises); other writes go through."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN "
            "RAISE EXCEPTION 'disk on fire'; END $$ LANGUAGE plpgsql"
        )
        conn.execute(
            "CREATE TRIGGER refuse BEFORE UPDATE ON agent_plans FOR EACH ROW "
            "WHEN (NEW.status = 'claimed' AND NEW.thread_id LIKE 'bad-%') "
            "EXECUTE FUNCTION refuse()"
        )


def _served_elsewhere(url: str, ids: list[int]) -> None:
    """Another worker (or a person) finishes these plans: they leave the queue."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE agent_plans SET status = 'done' WHERE id = ANY(%s)", (ids,))


def _told(events: list[WorkerEvent]) -> set[int]:
    return {e["plan"] for e in events if e["type"] == "error"}


async def test_a_long_lived_worker_forgets_the_failures_of_plans_gone_from_the_queue(
    make_pg_agent: MakePgAgent, pg_url: str
) -> None:
    agent = make_pg_agent()
    events: list[WorkerEvent] = []
    async with agent:
        stuck = await agent.store.submit_plan("bad-stuck", {}, gate_checkpoint_id=None)
        _refuse_claims(pg_url)
        worker = Worker(agent, poll=0.01, concurrency=4, on_event=events.append)
        serving = asyncio.create_task(worker.run())
        sizes = []
        for round_ in range(12):  # a steady stream of plans that fail here, served elsewhere
            batch = [
                (await agent.store.submit_plan(f"bad-{round_}-{i}", {}, gate_checkpoint_id=None))[
                    "id"
                ]
                for i in range(30)
            ]
            deadline = time.monotonic() + 60
            while not set(batch) <= _told(events):
                assert time.monotonic() < deadline, "the worker never tried the batch"
                assert not serving.done(), serving
                await asyncio.sleep(0.02)
            _served_elsewhere(pg_url, batch)
            sizes.append(len(worker._reported))
        worker.stop()
        await serving
    errors = [e["plan"] for e in events if e["type"] == "error"]
    assert len(errors) == len(set(errors)) == 12 * 30 + 1  # each failure told once
    assert errors.count(stuck["id"]) == 1  # the plan still queued: not told again after pruning
    # 361 plans failed; the worker remembers at most twice its floor of them at any time.
    assert max(sizes) <= 2 * 128, sizes


async def test_plans_that_fail_every_time_do_not_starve_the_queue_behind_them(
    make_pg_agent: MakePgAgent, pg_url: str
) -> None:
    agent = make_pg_agent()
    events: list[WorkerEvent] = []
    async with agent:
        for i in range(6):  # more than a poll looks at: the oldest, failing at every poll
            await agent.store.submit_plan(f"bad-{i}", {}, gate_checkpoint_id=None)
        behind = await agent.store.submit_plan("fine", {}, gate_checkpoint_id=None)
        _refuse_claims(pg_url)
        worker = Worker(agent, poll=0.01, on_event=events.append)
        serving = asyncio.create_task(worker.run())
        deadline = time.monotonic() + 30
        while not any(e.get("plan_id") == behind["id"] for e in events):
            assert time.monotonic() < deadline, [e["type"] for e in events]
            await asyncio.sleep(0.02)
        worker.stop()
        await serving
    # Served (a plan for a run that does not exist fails, and is recorded so) and told once.
    (outcome,) = [e for e in events if e.get("plan_id") == behind["id"]]
    assert outcome["type"] == "failed"
    assert sorted(e["plan"] for e in events if e["type"] == "error") == list(range(1, 7))


# Statement timeouts ----------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["json", "human"])
def test_a_worker_rides_out_statement_timeouts(pg_url: str, tmp_path: Path, mode: str) -> None:
    """Statements time out (a lock held past the server's timeout) mid-run and on the queue."""
    for thread in ("t1", "t2"):
        paused_run(pg_url, tmp_path, thread)
    submit(pg_url, tmp_path, "t1", {"approve": ["*"]})
    with psycopg.connect(pg_url, autocommit=True) as conn:
        (name,) = conn.execute("SELECT current_database()").fetchone() or ("",)
        conn.execute(f"ALTER DATABASE \"{name}\" SET statement_timeout = '300ms'")
    json_mode = ("--json",) if mode == "json" else ()
    worker = start_cli(tmp_path, *WORKER, "--db", pg_url, *json_mode, EFFECT_SLEEP="1")
    wait_for(tmp_path / "started.txt", worker)  # t1's run is in its tool call
    with psycopg.connect(pg_url) as locker:  # another session holds the queue's table
        locker.execute("LOCK TABLE agent_plans IN ACCESS EXCLUSIVE MODE")
        # The run's last write (its plan's outcome) times out; then every read of the queue.
        time.sleep(3)
        assert worker.poll() is None  # a worker does not die of timeouts
    until(lambda: plans(pg_url)[0][1] == "done", worker, "the plan is served after the lock")
    submit(pg_url, tmp_path, "t2", {"approve": ["*"]})
    until(lambda: plans(pg_url)[1][1] == "done", worker, "a new plan is served too")
    code, out, err = stop_worker(worker)
    assert code == 0, err
    assert plans(pg_url)[0][:3] == ("t1", "done", "completed")
    assert plans(pg_url)[1] == ("t2", "done", "completed", 1)
    assert len(lines(tmp_path / "effects.txt")) == 2  # each run's call once: none lost or repeated
    if mode == "json":
        assert [o["run_status"] for o in json.loads(out)] == ["completed", "completed"]
        events = json_lines(err)
        assert [(t["type"], t.get("kind")) for t in events] == [
            ("error", "QueryCanceled"),  # plan 1's run, once
            ("poll_error", "QueryCanceled"),  # the queue, once
            ("recovered", None),
        ]
        assert all("statement timeout" in t["error"] for t in events[:2])
    else:
        told = [line for line in err.splitlines() if "QueryCanceled" in line or "queue" in line]
        assert told[-3:] == [
            "plan 1 for run t1: cannot be served: QueryCanceled: canceling statement due to "
            "statement timeout (retried at every poll; told again only if the error changes)",
            "cannot read the plan queue: QueryCanceled: canceling statement due to statement "
            "timeout (retried at every poll; told again only if the error changes)",
            "the plan queue can be read again",
        ], err
        assert len(told) <= 4, err  # and the engine's one line for the run that failed
