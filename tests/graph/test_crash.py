"""A crash at any instant is recoverable, with nothing repeated (real processes, real SIGKILL).

Each test stops a real agent process at a chosen instant (the crash points of ``proc_agent.py``),
then resumes the thread in a new process and checks what happened outside the database: the
``effect`` tool's side effect (``effects.txt``) happened exactly once.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

from tests.graph.forked import Forked, start
from tests.graph.test_processes import finish, lines, result_of

TRIALS = 6


def crashed(db: Path, work: Path, thread: str, **env: str) -> None:
    """Run THREAD in a process that SIGKILLs itself at the crash point ``env`` names."""
    proc = start(db, work, "run", thread, UNATTENDED="1", **env)
    proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.returncode


def test_a_crash_before_the_first_checkpoint_resumes_from_the_task(tmp_path: Path) -> None:
    for trial in range(TRIALS):
        work = tmp_path / f"trial{trial}"
        work.mkdir()
        db = work / "c.sqlite"
        crashed(db, work, "t", CRASH_AT="create_run")
        code, out = finish(start(db, work, "resume", "t", UNATTENDED="1"))
        assert code == 0, out
        assert result_of(out)["final_text"] == "wrote it"
        assert lines(work / "effects.txt") == [lines(work / "effects.txt")[0]]


def test_a_crash_between_a_steps_writes_and_its_checkpoint_resumes(tmp_path: Path) -> None:
    for trial in range(TRIALS):
        work = tmp_path / f"trial{trial}"
        work.mkdir()
        db = work / "c.sqlite"
        crashed(db, work, "t", CRASH_AT="writes")
        with sqlite3.connect(db) as conn:  # the crash point did store writes without a checkpoint
            assert conn.execute("SELECT count(*) FROM delta_writes").fetchone()[0] > 0
        assert len(lines(work / "effects.txt")) == 1
        code, out = finish(start(db, work, "resume", "t", UNATTENDED="1"))
        assert code == 0, out
        assert result_of(out)["final_text"] == "wrote it"
        assert len(lines(work / "effects.txt")) == 1
        assert len(lines(work / "started.txt")) == 1


def test_two_processes_starting_one_new_thread_at_once_run_it_once(tmp_path: Path) -> None:
    trials = [tmp_path / f"trial{trial}" for trial in range(TRIALS)]
    procs = []
    for work in trials:
        work.mkdir()
        procs += [
            start(work / "c.sqlite", work, "run", "t", UNATTENDED="1", RACE_BEFORE="create_run")
            for _ in range(2)
        ]
    outcomes = [finish(p) for p in procs]
    for trial, work in enumerate(trials):
        (code1, out1), (code2, out2) = outcomes[2 * trial : 2 * trial + 2]
        assert sorted([code1, code2]) == [0, 7], (out1, out2)
        loser = out2 if code1 == 0 else out1
        assert "RunError: thread t already exists" in loser
        assert len(lines(work / "effects.txt")) == 1


def test_a_full_disk_is_a_clear_error_and_the_run_resumes_once_there_is_space(
    tmp_path: Path,
) -> None:
    db = tmp_path / "c.sqlite"
    # The tool's output is big, so the writes after it need new pages of the database.
    code, out = finish(
        start(db, tmp_path, "run", "t", UNATTENDED="1", FULL_AFTER="outcome", EFFECT_BIG="200000")
    )
    assert code == 7, out
    assert f"StorageFullError: the database {db} is full" in out
    assert "free some space, then continue the run with: ai-agent resume t" in out
    assert len(lines(tmp_path / "effects.txt")) == 1
    with sqlite3.connect(db) as conn:  # the run row says what happened
        status, error = conn.execute("SELECT status, error FROM agent_runs").fetchone()
    assert (status, "is full" in error) == ("failed", True)
    # Space is back (a new process has no limit): the run finishes, the tool ran once.
    code, out = finish(start(db, tmp_path, "resume", "t", UNATTENDED="1", EFFECT_BIG="200000"))
    assert code == 0, out
    assert len(lines(tmp_path / "effects.txt")) == 1
    assert len(lines(tmp_path / "started.txt")) == 1


def stored(db: Path) -> dict[str, Any]:
    """Everything the thread's processes have written, to compare before and after."""
    with sqlite3.connect(db) as conn:
        return {
            table: conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
            for table in (
                "delta_checkpoints",
                "delta_writes",
                "agent_runs",
                "agent_journal",
                "agent_tool_calls",
                "agent_model_calls",
                "agent_outputs",
            )
        }


def wait_for(path: Path, proc: Forked) -> None:
    deadline = time.monotonic() + 60
    while not lines(path):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.02)


def test_a_holder_stalled_past_its_lease_writes_nothing_after_a_takeover(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    stalled = start(db, tmp_path, "run", "t", UNATTENDED="1", EFFECT_WAIT_FOR_RELEASE="1")
    wait_for(tmp_path / "started.txt", stalled)  # it holds the lease, mid-call
    stalled.send_signal(signal.SIGSTOP)
    with sqlite3.connect(db) as conn:  # it stalls past its lease: the lease runs out
        conn.execute("UPDATE agent_leases SET expires_at = 0 WHERE thread_id = 't'")
    # Another process takes the thread over: the call's outcome is unknown, a person decides.
    code, out = finish(start(db, tmp_path, "resume", "t", UNATTENDED="1"))
    assert code == 3, out
    assert [i["code"] for i in result_of(out)["gate"]["issues"]] == ["UNKNOWN_OUTCOME"]
    before = stored(db)
    (tmp_path / "release").touch()
    stalled.send_signal(signal.SIGCONT)  # the stalled holder wakes up, its call finishes
    code, out = finish(stalled)
    assert code == 5, out
    assert "LeaseLostError" not in out and "lease on thread t was taken over" in out
    assert stored(db) == before  # not one more row, checkpoint or status change
    # The run goes on where the process that took over left it.
    code, out = finish(start(db, tmp_path, "resume", "t", json.dumps({"deny": ["*"]})))
    assert code == 0, out


def test_a_crash_inside_a_subagent_resumes_the_tree_without_a_silent_rerun(
    tmp_path: Path,
) -> None:
    db = tmp_path / "c.sqlite"
    # The child is in its side-effecting call when the whole process is killed.
    running = start(db, tmp_path, "run", "p", SUBAGENT="1", UNATTENDED="1",
                    EFFECT_WAIT_FOR_RELEASE="1")  # fmt: skip
    wait_for(tmp_path / "started.txt", running)
    running.send_signal(signal.SIGKILL)
    running.communicate(timeout=60)
    (tmp_path / "release").touch()
    assert lines(tmp_path / "effects.txt") == []

    # Resuming the parent re-attaches to the same child, whose call's outcome is unknown: the
    # tree stops at one gate (the parent's) showing the child's issue, and nothing ran again.
    code, out = finish(start(db, tmp_path, "resume", "p", SUBAGENT="1", UNATTENDED="1"))
    assert code == 3, out
    (issue,) = result_of(out)["gate"]["issues"]
    assert issue["code"] == "SUBAGENT_PAUSED"
    assert "effect was running when the process stopped" in issue["message"]
    assert lines(tmp_path / "effects.txt") == []
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT thread_id, origin FROM agent_runs ORDER BY 1").fetchall()
    assert rows == [("p", "run"), ("p.c1.0", "child")]

    # The person approves running it again, with the parent's resume: once, then both finish.
    plan = json.dumps({"approve": ["*"]})
    code, out = finish(start(db, tmp_path, "resume", "p", plan, SUBAGENT="1", UNATTENDED="1"))
    assert code == 0, out
    assert result_of(out)["final_text"] == "the writer wrote it"
    assert len(lines(tmp_path / "effects.txt")) == 1
    assert len(lines(tmp_path / "started.txt")) == 2


def summary_calls(db: Path) -> list[str]:
    """The recorded model calls of act (the output summaries), their replies."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT response FROM agent_model_calls WHERE stage = 'act' ORDER BY seq"
        ).fetchall()
    return [json.loads(row[0])["content"] for row in rows]


def test_a_crash_after_a_model_summary_resumes_with_that_summary(tmp_path: Path) -> None:
    # Once after act's writes were stored, once right after the outcome was journaled (act
    # runs again on resume): either way the summary the first process got is the one kept.
    for point in ("writes", "outcome"):
        work = tmp_path / point
        work.mkdir()
        db = work / "c.sqlite"
        env = {"MODEL_SUMMARY": "1", "EFFECT_BIG": "5000"}
        crashed(db, work, "t", CRASH_AT=point, **env)
        (first,) = summary_calls(db)
        assert first.startswith("x repeated; summary by ")
        code, out = finish(start(db, work, "resume", "t", UNATTENDED="1", **env))
        assert code == 0, out
        assert result_of(out)["final_text"] == "wrote it"
        assert summary_calls(db) == [first]  # not asked again
        assert len(lines(work / "effects.txt")) == 1
        with sqlite3.connect(db) as conn:
            (result,) = conn.execute("SELECT result FROM agent_journal").fetchone()
        assert json.loads(result)["content"].endswith("\n" + first)
