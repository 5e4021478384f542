"""A worker against a hostile or failing PostgreSQL: writes refused, the server gone, rows edited.

Real parts only: the private server of ``conftest.py`` (or one of a test's own, where the test
stops it), ``ai-agent worker`` as a process of its own, and rows changed with plain SQL, as an
attacker or a broken disk would change them.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from ai_agent.checkpoints.postgres import PostgresRunStore
from tests.postgres.cluster import Cluster, start_cluster
from tests.postgres.procs import env, finish, start_cli
from tests.postgres.test_pg_worker import APP, paused_run, plans, submit

WORKER = ("worker", "--app", APP, "--poll", "0.05")


def refuse_plan_writes(url: str, message: str) -> None:
    """Make every write of a plan row fail, counting the tries in the sequence ``tries``.

    A sequence moves on even when its transaction rolls back, so the test can tell how many
    polls met the failure.
    """
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE SEQUENCE tries")
        conn.execute(
            "CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN PERFORM nextval('tries'); "
            f"RAISE EXCEPTION '{message}'; END $$ LANGUAGE plpgsql"
        )
        conn.execute(
            "CREATE TRIGGER refuse BEFORE UPDATE ON agent_plans "
            "FOR EACH ROW EXECUTE FUNCTION refuse()"
        )


def tries(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT last_value, is_called FROM tries").fetchone()
    return int(row[0]) if row and row[1] else 0


def until(done: Any, proc: subprocess.Popen[str], what: str, timeout: float = 60) -> None:
    """Wait until ``done()`` holds, failing if ``proc`` ends first (a deadline, not a timing)."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"never: {what}"
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)


def stop_worker(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    proc.send_signal(signal.SIGTERM)
    return finish(proc)


def json_lines(err: str) -> list[dict[str, Any]]:
    """The worker's events on stderr (``--json``), leaving out the log records among them."""
    told = [json.loads(line) for line in err.splitlines()]  # --json: every line is JSON
    return [t for t in told if t["type"] != "log"]


def test_json_worker_tells_a_plan_it_cannot_serve_once(pg_url: str, tmp_path: Path) -> None:
    paused_run(pg_url, tmp_path, "t1")
    submit(pg_url, tmp_path, "t1", {"approve": ["*"]})
    refuse_plan_writes(pg_url, "disk on fire")
    worker = start_cli(tmp_path, *WORKER, "--db", pg_url, "--json")
    until(lambda: tries(pg_url) >= 5, worker, "five polls met the failure")
    code, out, err = stop_worker(worker)
    assert code == 0, err
    assert json.loads(out) == []  # nothing was served
    (told,) = json_lines(err)  # told once, though met at every poll
    assert (told["type"], told["plan"], told["thread_id"]) == ("error", 1, "t1")
    assert told["kind"] == "RaiseException" and "disk on fire" in told["error"]
    assert plans(pg_url) == [("t1", "queued", None, 0)]  # still there for when it can be served


def test_a_worker_tells_a_failure_once_and_never_the_password(
    pg_url: str, tmp_path: Path, canary: str
) -> None:
    paused_run(pg_url, tmp_path, "t2")
    submit(pg_url, tmp_path, "t2", {"approve": ["*"]})
    # A server's message that quotes the connection's password (as a driver's may quote its URL).
    refuse_plan_writes(pg_url, f"refused for postgresql://postgres:{canary}@127.0.0.1")
    worker = start_cli(tmp_path, *WORKER, "--db", pg_url)
    until(lambda: tries(pg_url) >= 5, worker, "five polls met the failure")
    code, out, err = stop_worker(worker)
    assert code == 0, err
    assert canary not in out + err
    told = [line for line in err.splitlines() if "cannot be served" in line]
    assert len(told) == 1, err
    assert "plan 1 for run t2: cannot be served: RaiseException: refused for" in told[0]
    assert "postgresql://postgres:***@127.0.0.1" in told[0]


def test_a_lease_whose_expiry_is_not_a_time_is_taken_over(pg_url: str) -> None:
    store = PostgresRunStore(pg_url, host="here")
    try:
        for expiry in ("NaN", "Infinity"):
            thread = f"t-{expiry}"
            with psycopg.connect(pg_url) as conn:
                conn.execute(
                    "INSERT INTO agent_leases VALUES (%s, 'x', 'elsewhere', 1, 0, %s::float8)",
                    (thread, expiry),
                )
            # Nobody can hold a lease that never runs out: the run would be locked forever.
            assert not _run(store.working(thread))
            lease = _run(store.acquire(thread))
            assert lease.thread_id == thread
    finally:
        store.close()


def _run(coro: Any) -> Any:
    import asyncio

    return asyncio.run(coro)


# The server going away -------------------------------------------------------------------------
@pytest.fixture
def own_cluster() -> Iterator[Cluster]:
    """A server of the test's own: the test stops and starts it."""
    cluster = start_cluster()
    try:
        yield cluster
    finally:
        if not (cluster.root / "data" / "postmaster.pid").exists():
            _pg_ctl(cluster, "start")  # stop() wants it running
        cluster.stop()


def _pg_ctl(cluster: Cluster, action: str) -> None:
    options = f"-k {cluster.root} -p {cluster.port} -c listen_addresses=127.0.0.1 -c fsync=off"
    data, log = str(cluster.root / "data"), str(cluster.root / "server.log")
    if action == "stop":
        cluster._run(str(cluster.bindir / "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop")
    else:
        cluster._run(
            str(cluster.bindir / "pg_ctl"), "-D", data, "-l", log, "-w", "-o", options, "start"
        )


def _connected(url: str) -> bool:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'ai-agent' "
            "AND datname = current_database()"
        ).fetchone()
    return bool(row and row[0])


def test_a_worker_rides_out_a_server_restart(own_cluster: Cluster, tmp_path: Path) -> None:
    url = own_cluster.create_database("restart")
    paused_run(url, tmp_path, "t3")
    # Its stderr goes to a file, read while it runs: the test waits for a poll to meet the
    # server gone (a second's sleep was not always one poll on a loaded machine).
    told_path = tmp_path / "worker-stderr.jsonl"
    with told_path.open("w") as told_file:
        worker = subprocess.Popen(
            [sys.executable, "-m", "ai_agent.cli", *WORKER, "--db", url, "--json"],
            stdout=subprocess.PIPE,
            stderr=told_file,
            text=True,
            env=env(tmp_path),
        )
    until(lambda: _connected(url), worker, "the worker polls")
    _pg_ctl(own_cluster, "stop")
    until(lambda: "poll_error" in told_path.read_text(), worker, "a poll meets the server gone")
    assert worker.poll() is None  # a worker does not die of a restart
    _pg_ctl(own_cluster, "start")
    submit(url, tmp_path, "t3", {"approve": ["*"]})
    until(lambda: plans(url)[0][1] == "done", worker, "the plan is served after the restart")
    worker.send_signal(signal.SIGTERM)
    out, _ = worker.communicate(timeout=120)
    code, err = worker.returncode, told_path.read_text()
    assert code == 0 and "Traceback" not in err, err
    assert [o["run_status"] for o in json.loads(out)] == ["completed"]
    told = json_lines(err)
    assert [t["type"] for t in told][-1] == "recovered"
    assert {t["type"] for t in told[:-1]} == {"poll_error"}
    assert own_cluster.password not in out + err


def test_a_worker_gives_up_on_a_server_that_stays_away(
    own_cluster: Cluster, tmp_path: Path
) -> None:
    url = own_cluster.create_database("away")
    paused_run(url, tmp_path, "t4")
    worker = start_cli(tmp_path, *WORKER, "--db", url, "--json", "--outage", "0")
    until(lambda: _connected(url), worker, "the worker polls")
    _pg_ctl(own_cluster, "stop")
    code, out, err = finish(worker)  # no traceback (finish checks)
    assert code == 1, err
    assert json.loads(out) == []
    last = json_lines(err)[-1]
    assert (last["type"], last["kind"]) == ("gave_up", "StoreError")
    assert last["error"].startswith("the plan queue cannot be read (")
    assert "internal error" not in err
    assert own_cluster.password not in out + err
