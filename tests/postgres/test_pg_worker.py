"""Workers on PostgreSQL, as separate processes: a plan queued on one machine is served by a worker
on another; two workers racing for one thread run the gated action once; SIGTERM is clean."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import psycopg

from tests.postgres.procs import finish, lines, start_app, start_cli, wait_for

APP = "tests.postgres.app:make_agent"


def paused_run(url: str, work: Path, thread: str) -> None:
    code, out, _ = finish(start_app(url, work, "run", thread))
    assert code == 3, out


def plans(url: str) -> list[tuple[str, str, str | None, int]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT thread_id, status, outcome, attempts FROM agent_plans ORDER BY id"
        ).fetchall()
    return [(r[0], r[1], r[2], r[3]) for r in rows]


def leases(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM agent_leases").fetchone()
    return int(row[0]) if row else 0


def submit(url: str, work: Path, thread: str, plan: dict[str, object]) -> None:
    """Queue a plan from a process of its own (``ai-agent resume --queue`` with the app's tools)."""
    code, out, err = finish(
        start_cli(
            work,
            "resume",
            thread,
            "--db",
            url,
            "--plan-file",
            str(_plan_file(work, plan)),
            "--queue",
            "--tools",
            "",
        )
    )
    assert code == 0, (out, err)
    assert "queued plan" in out


def _plan_file(work: Path, plan: dict[str, object]) -> Path:
    path = work / "plan.json"
    path.write_text(json.dumps(plan))
    return path


def test_a_plan_queued_on_one_machine_is_served_by_a_worker_on_another(
    pg_url: str, tmp_path: Path
) -> None:
    machine_a, machine_b = tmp_path / "a", tmp_path / "b"
    machine_a.mkdir()
    machine_b.mkdir()
    paused_run(pg_url, machine_a, "t1")
    submit(pg_url, machine_a, "t1", {"approve": ["*"]})
    assert plans(pg_url) == [("t1", "queued", None, 0)]
    code, _, err = finish(
        start_cli(machine_b, "worker", "--db", pg_url, "--app", APP, "--once", HOME=str(machine_b))
    )
    assert code == 0, err
    assert "run completed" in err
    assert plans(pg_url) == [("t1", "done", "completed", 1)]
    assert lines(machine_a / "effects.txt") == []
    assert len(lines(machine_b / "effects.txt")) == 1
    assert leases(pg_url) == 0


def test_two_workers_racing_for_one_thread_run_the_gated_action_once(
    pg_url: str, tmp_path: Path
) -> None:
    paused_run(pg_url, tmp_path, "t2")
    submit(pg_url, tmp_path, "t2", {"approve": ["*"]})
    worker = ["worker", "--db", pg_url, "--app", APP, "--once", "--json"]
    first = start_cli(tmp_path, *worker, EFFECT_WAIT_FOR_RELEASE="1")
    wait_for(tmp_path / "started.txt", first)  # the first holds the thread mid-call
    code2, out2, err2 = finish(start_cli(tmp_path, *worker))
    (tmp_path / "release").touch()
    code1, out1, _ = finish(first)
    assert (code1, code2) == (0, 0)
    assert [o["run_status"] for o in json.loads(out1)] == ["completed"]
    assert json.loads(out2) == []  # the second skipped it cleanly
    assert "skipped" not in err2  # --json: no status lines
    assert len(lines(tmp_path / "effects.txt")) == 1
    assert plans(pg_url) == [("t2", "done", "completed", 1)]


def test_workers_started_together_serve_each_plan_once(pg_url: str, tmp_path: Path) -> None:
    threads = ["r1", "r2", "r3"]
    for thread in threads:
        paused_run(pg_url, tmp_path, thread)
        submit(pg_url, tmp_path, thread, {"approve": ["*"]})
    worker = ["worker", "--db", pg_url, "--app", APP, "--once", "--json", "--concurrency", "2"]
    procs = [start_cli(tmp_path, *worker, EFFECT_SLEEP="0.3") for _ in range(3)]
    served = []
    for proc in procs:
        code, out, err = finish(proc)
        assert code == 0, err
        served += [o["thread_id"] for o in json.loads(out)]
    assert sorted(served) == threads
    assert len(lines(tmp_path / "effects.txt")) == 3
    assert sorted(plans(pg_url)) == [(t, "done", "completed", 1) for t in threads]
    assert leases(pg_url) == 0


def test_sigterm_lets_the_run_finish_and_leaves_no_lease(pg_url: str, tmp_path: Path) -> None:
    paused_run(pg_url, tmp_path, "t3")
    worker = start_cli(
        tmp_path, "worker", "--db", pg_url, "--app", APP, "--poll", "0.1",
        EFFECT_WAIT_FOR_RELEASE="1",
    )  # fmt: skip
    submit(pg_url, tmp_path, "t3", {"approve": ["*"]})
    wait_for(tmp_path / "started.txt", worker)
    worker.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    assert worker.poll() is None  # still finishing the run in progress
    (tmp_path / "release").touch()
    code, _, err = finish(worker)
    assert code == 0, err
    assert "stopping" in err
    assert plans(pg_url) == [("t3", "done", "completed", 1)]
    assert leases(pg_url) == 0


def test_a_second_sigterm_cancels_and_the_next_worker_takes_over_safely(
    pg_url: str, tmp_path: Path
) -> None:
    paused_run(pg_url, tmp_path, "t4")
    submit(pg_url, tmp_path, "t4", {"approve": ["*"]})
    worker = start_cli(
        tmp_path, "worker", "--db", pg_url, "--app", APP, "--poll", "0.1", EFFECT_SLEEP="1"
    )
    wait_for(tmp_path / "started.txt", worker)
    worker.send_signal(signal.SIGTERM)
    time.sleep(0.1)
    worker.send_signal(signal.SIGTERM)
    code, _, err = finish(worker)
    assert code == 0, err
    assert leases(pg_url) == 0  # released on the way out
    assert plans(pg_url) == [("t4", "claimed", None, 1)]
    # The next worker finds the plan claimed with a free lease: its worker is gone. It reclaims
    # the plan and continues the run from its last checkpoint (past the gate: the plan was
    # applied, so it is not applied twice). The call was cut off mid-way, so its outcome is
    # unknown: the run stops for a person instead of running the call again.
    code, out, err = finish(start_cli(tmp_path, "worker", "--db", pg_url, "--app", APP, "--once"))
    assert code == 0, err
    assert plans(pg_url) == [("t4", "done", "paused", 2)]
    assert leases(pg_url) == 0
    assert len(lines(tmp_path / "started.txt")) == 1
    code, out, _ = finish(start_cli(tmp_path, "show", "t4", "--db", pg_url, "--json"))
    shown = json.loads(out)
    assert shown["status"] == "paused"
    assert [i["code"] for i in shown["gate"]["issues"]] == ["UNKNOWN_OUTCOME"]


def test_pickup_latency_of_a_polling_worker(pg_url: str, tmp_path: Path) -> None:
    paused_run(pg_url, tmp_path, "t5")
    worker = start_cli(tmp_path, "worker", "--db", pg_url, "--app", APP, "--poll", "0.1")
    deadline = time.monotonic() + 60
    while not _connected(pg_url):  # the worker is up and polling
        assert time.monotonic() < deadline and worker.poll() is None
        time.sleep(0.05)
    submit(pg_url, tmp_path, "t5", {"approve": ["*"]})
    while plans(pg_url)[0][1] != "done":
        assert time.monotonic() < deadline and worker.poll() is None
        time.sleep(0.02)
    with psycopg.connect(pg_url) as conn:
        row = conn.execute(
            "SELECT submitted_at, claimed_at, finished_at FROM agent_plans"
        ).fetchone()
    assert row is not None
    worker.send_signal(signal.SIGTERM)
    assert finish(worker)[0] == 0
    pickup, resume = row[1] - row[0], row[2] - row[1]
    print(f"worker pickup {pickup * 1000:.0f} ms, resume to completion {resume * 1000:.0f} ms")
    assert pickup < 5


def _connected(url: str) -> bool:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'ai-agent' "
            "AND datname = current_database()"
        ).fetchone()
    return bool(row and row[0])
