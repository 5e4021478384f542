"""The invariants that need real processes: resume elsewhere, racing resumes, a crash mid-call."""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any, Protocol

from tests.graph import forked
from tests.graph.forked import Forked


def start(db: Path, work: Path, *args: str, **env: str) -> Forked:
    """``proc_agent.py DB WORK ARGS...`` in a process of its own (forked: see ``forked.py``)."""
    return forked.start(db, work, *args, **env)


class Proc(Protocol):
    """What the tests use of a process: ``subprocess.Popen``, or ``forked.Forked``."""

    @property
    def returncode(self) -> int | None: ...

    def communicate(
        self, input: str | None = None, timeout: float | None = None
    ) -> tuple[str, str]: ...


def finish(proc: Proc) -> tuple[int, str]:
    out, err = proc.communicate(timeout=120)
    assert "Traceback" not in err, err
    assert proc.returncode is not None
    return proc.returncode, out


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def result_of(out: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return data


def outcomes_of(out: str) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(out.strip().splitlines()[-1])
    return data


def test_pause_in_one_process_and_resume_in_another(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    code, out = finish(start(db, tmp_path, "run", "t1"))
    assert code == 3
    paused = result_of(out)
    assert paused["gate"]["pending"][0]["call"]["name"] == "effect"
    assert lines(tmp_path / "effects.txt") == []
    code, out = finish(start(db, tmp_path, "resume", "t1", json.dumps({"approve": ["*"]})))
    assert code == 0, out
    assert result_of(out)["final_text"] == "wrote it"
    assert len(lines(tmp_path / "effects.txt")) == 1


def test_two_processes_resuming_one_thread_run_the_gated_action_once(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    assert finish(start(db, tmp_path, "run", "t2"))[0] == 3
    plan = json.dumps({"approve": ["*"]})
    first = start(db, tmp_path, "resume", "t2", plan, EFFECT_WAIT_FOR_RELEASE="1")
    deadline = time.monotonic() + 60
    while not (tmp_path / "started.txt").exists():  # the first holds the lease mid-call
        assert time.monotonic() < deadline and first.poll() is None
        time.sleep(0.05)
    second = start(db, tmp_path, "resume", "t2", plan)
    code2, out2 = finish(second)
    (tmp_path / "release").touch()
    code1, _ = finish(first)
    assert (code1, code2) == (0, 5)
    assert "is being worked on by process" in out2
    assert len(lines(tmp_path / "effects.txt")) == 1
    # Afterwards there is nothing left to resume.
    assert finish(start(db, tmp_path, "resume", "t2", plan))[0] == 6


def test_simultaneous_resumes_race_and_exactly_one_proceeds(tmp_path: Path) -> None:
    plan = json.dumps({"approve": ["*"]})
    for trial in range(3):
        work = tmp_path / f"trial{trial}"
        work.mkdir()
        db = work / "c.sqlite"
        assert finish(start(db, work, "run", "race"))[0] == 3
        procs = [start(db, work, "resume", "race", plan, EFFECT_SLEEP="0.5") for _ in range(3)]
        codes = sorted(finish(p)[0] for p in procs)
        assert codes.count(0) == 1, codes
        assert set(codes) <= {0, 5, 6}, codes
        assert len(lines(work / "effects.txt")) == 1


def test_sigkill_mid_call_gives_unknown_outcome_not_a_silent_rerun(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    proc = start(db, tmp_path, "run", "t3", UNATTENDED="1", EFFECT_SLEEP="60")
    deadline = time.monotonic() + 60
    while not lines(tmp_path / "started.txt"):  # created first, the pid line comes after
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    proc.communicate()
    assert lines(tmp_path / "started.txt") and lines(tmp_path / "effects.txt") == []
    # Resume after the crash: the call may have had effects, so it must not run silently.
    code, out = finish(start(db, tmp_path, "resume", "t3", UNATTENDED="1"))
    assert code == 3, out
    gate = result_of(out)["gate"]
    assert [i["code"] for i in gate["issues"]] == ["UNKNOWN_OUTCOME"]
    assert gate["issues"][0]["severity"] == 1.0
    assert len(lines(tmp_path / "started.txt")) == 1  # not re-run
    # A person decides: deny it, and the run finishes without running it again.
    code, out = finish(
        start(db, tmp_path, "resume", "t3", json.dumps({"deny": ["*"]}), UNATTENDED="1")
    )
    assert code == 0, out
    assert len(lines(tmp_path / "started.txt")) == 1


def test_after_a_crash_an_approved_rerun_runs_once_more(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    proc = start(db, tmp_path, "run", "t4", UNATTENDED="1", EFFECT_SLEEP="60")
    while not lines(tmp_path / "started.txt"):  # created first, the pid line comes after
        time.sleep(0.05)
    proc.kill()
    proc.communicate()
    assert finish(start(db, tmp_path, "resume", "t4", UNATTENDED="1"))[0] == 3
    code, _ = finish(
        start(db, tmp_path, "resume", "t4", json.dumps({"approve": ["*"]}), UNATTENDED="1")
    )
    assert code == 0
    assert len(lines(tmp_path / "started.txt")) == 2
    assert len(lines(tmp_path / "effects.txt")) == 1


def _kill_when_started(proc: Forked, started: Path, count: int) -> None:
    deadline = time.monotonic() + 60
    while len(lines(started)) < count:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.kill()
    proc.communicate()


def test_an_approval_from_before_a_crash_never_reruns_the_call(tmp_path: Path) -> None:
    """Approving a call lets it run once; after a crash mid-call a person must decide again,
    and an approval of one re-run does not cover a second interrupted attempt."""
    db, started = tmp_path / "c.sqlite", tmp_path / "started.txt"
    assert finish(start(db, tmp_path, "run", "t5"))[0] == 3
    tool_wide = json.dumps({"approve": ["*"], "grant_scope": "tool"})
    _kill_when_started(
        start(db, tmp_path, "resume", "t5", tool_wide, EFFECT_SLEEP="60"), started, 1
    )
    code, out = finish(start(db, tmp_path, "resume", "t5"))
    assert code == 3, out
    assert [i["code"] for i in result_of(out)["gate"]["issues"]] == ["UNKNOWN_OUTCOME"]
    assert len(lines(started)) == 1
    again = json.dumps({"approve": ["*"]})
    _kill_when_started(start(db, tmp_path, "resume", "t5", again, EFFECT_SLEEP="60"), started, 2)
    code, out = finish(start(db, tmp_path, "resume", "t5"))
    assert code == 3, out
    assert [i["code"] for i in result_of(out)["gate"]["issues"]] == ["UNKNOWN_OUTCOME"]
    assert len(lines(started)) == 2
    code, _ = finish(start(db, tmp_path, "resume", "t5", again))
    assert code == 0
    assert (len(lines(started)), len(lines(tmp_path / "effects.txt"))) == (3, 1)


def test_a_worker_process_refuses_a_forged_plan_and_serves_the_honest_one(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    assert finish(start(db, tmp_path, "run", "t6"))[0] == 3
    # Another process with write access to the store queues an approve-everything plan.
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(
            "INSERT INTO agent_plans (thread_id, plan, status, submitted_at, attempts) "
            "VALUES ('t6', ?, 'queued', ?, 0)",
            (json.dumps({"approve": ["*"]}), time.time()),
        )
    code, out = finish(start(db, tmp_path, "worker", "-"))
    assert code == 0, out
    (refused,) = outcomes_of(out)
    assert refused["status"] == "refused" and "gate token" in refused["error"]
    assert lines(tmp_path / "started.txt") == [] and lines(tmp_path / "effects.txt") == []
    # The person queues the plan from a process of their own; a worker process serves it.
    code, out = finish(start(db, tmp_path, "submit", "t6", json.dumps({"approve": ["*"]})))
    assert code == 0, out
    assert len(result_of(out)["plan"]["gate_token"]) == 32
    code, out = finish(start(db, tmp_path, "worker", "-"))
    (served,) = outcomes_of(out)
    assert (served["status"], served["run_status"]) == ("done", "completed")
    assert len(lines(tmp_path / "effects.txt")) == 1
