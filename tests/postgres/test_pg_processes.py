"""The engine's multi-process invariants, on PostgreSQL: each process its own environment, one
database between them (as on several machines)."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import psycopg

from tests.postgres.procs import finish, lines, result_of, start_app, wait_for

APPROVE = json.dumps({"approve": ["*"]})


def test_a_run_paused_in_one_process_resumes_in_another(pg_url: str, tmp_path: Path) -> None:
    machine_a, machine_b = tmp_path / "a", tmp_path / "b"
    machine_a.mkdir()
    machine_b.mkdir()
    code, out, _ = finish(start_app(pg_url, machine_a, "run", "t1", HOME=str(machine_a)))
    assert code == 3, out
    assert result_of(out)["gate"]["pending"][0]["call"]["name"] == "effect"
    started = time.perf_counter()
    code, out, _ = finish(
        start_app(pg_url, machine_b, "resume", "t1", APPROVE, HOME=str(machine_b))
    )
    assert code == 0, out
    print(
        f"resume in another process: {time.perf_counter() - started:.2f}s (process start included)"
    )
    assert result_of(out)["final_text"] == "wrote it"
    assert lines(machine_a / "effects.txt") == []
    assert len(lines(machine_b / "effects.txt")) == 1


def test_two_processes_resuming_one_thread_run_the_gated_action_once(
    pg_url: str, tmp_path: Path
) -> None:
    assert finish(start_app(pg_url, tmp_path, "run", "t2"))[0] == 3
    first = start_app(pg_url, tmp_path, "resume", "t2", APPROVE, EFFECT_WAIT_FOR_RELEASE="1")
    wait_for(tmp_path / "started.txt", first)  # the first holds the lease mid-call
    code2, out2, _ = finish(start_app(pg_url, tmp_path, "resume", "t2", APPROVE))
    (tmp_path / "release").touch()
    code1, _, _ = finish(first)
    assert (code1, code2) == (0, 5)
    assert "is being worked on by process" in out2
    assert len(lines(tmp_path / "effects.txt")) == 1
    assert finish(start_app(pg_url, tmp_path, "resume", "t2", APPROVE))[0] == 6


def test_simultaneous_resumes_race_and_exactly_one_proceeds(pg_url: str, tmp_path: Path) -> None:
    for trial in range(2):
        work = tmp_path / f"trial{trial}"
        work.mkdir()
        thread = f"race{trial}"
        assert finish(start_app(pg_url, work, "run", thread))[0] == 3
        procs = [
            start_app(pg_url, work, "resume", thread, APPROVE, EFFECT_SLEEP="0.5") for _ in range(3)
        ]
        codes = sorted(finish(p)[0] for p in procs)
        assert codes.count(0) == 1, codes
        assert set(codes) <= {0, 5, 6}, codes
        assert len(lines(work / "effects.txt")) == 1


def test_sigkill_mid_call_gives_unknown_outcome_not_a_silent_rerun(
    pg_url: str, tmp_path: Path
) -> None:
    proc = start_app(pg_url, tmp_path, "run", "t3", UNATTENDED="1", EFFECT_SLEEP="60")
    wait_for(tmp_path / "started.txt", proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert lines(tmp_path / "effects.txt") == []
    # Same host, dead pid: the lease is taken over at once, and the call is not re-run.
    code, out, _ = finish(start_app(pg_url, tmp_path, "resume", "t3", UNATTENDED="1"))
    assert code == 3, out
    gate = result_of(out)["gate"]
    assert [i["code"] for i in gate["issues"]] == ["UNKNOWN_OUTCOME"]
    assert len(lines(tmp_path / "started.txt")) == 1
    deny = json.dumps({"deny": ["*"]})
    code, out, _ = finish(start_app(pg_url, tmp_path, "resume", "t3", deny, UNATTENDED="1"))
    assert code == 0, out
    assert len(lines(tmp_path / "started.txt")) == 1


def _stored(url: str) -> dict[str, list[tuple[object, ...]]]:
    """Everything the processes wrote: checkpoints, their writes, the run store's rows."""
    tables = {
        "checkpoints": "thread_id, checkpoint_id",
        "checkpoint_writes": "thread_id, checkpoint_id, task_id, idx",
        "agent_runs": "thread_id",
        "agent_journal": "thread_id, iteration, call_id",
        "agent_tool_calls": "seq",
        "agent_model_calls": "seq",
        "agent_outputs": "thread_id, ref",
    }
    with psycopg.connect(url) as conn:
        return {
            table: conn.execute(f"SELECT * FROM {table} ORDER BY {order}").fetchall()
            for table, order in tables.items()
        }


def test_a_holder_stalled_past_its_lease_writes_nothing_after_a_takeover(
    pg_url: str, tmp_path: Path
) -> None:
    stalled = start_app(pg_url, tmp_path, "run", "t4", UNATTENDED="1", EFFECT_WAIT_FOR_RELEASE="1")
    wait_for(tmp_path / "started.txt", stalled)  # it holds the lease, mid-call
    stalled.send_signal(signal.SIGSTOP)
    with psycopg.connect(pg_url) as conn:  # it stalls past its lease: the lease runs out
        conn.execute("UPDATE agent_leases SET expires_at = 0 WHERE thread_id = 't4'")
    code, out, _ = finish(start_app(pg_url, tmp_path, "resume", "t4", UNATTENDED="1"))
    assert code == 3, out  # taken over: the call's outcome is unknown, a person decides
    assert [i["code"] for i in result_of(out)["gate"]["issues"]] == ["UNKNOWN_OUTCOME"]
    before = _stored(pg_url)
    (tmp_path / "release").touch()
    stalled.send_signal(signal.SIGCONT)  # the stalled holder wakes up, its call finishes
    code, out, _ = finish(stalled)
    assert code == 5, out
    assert "the lease on thread t4 was taken over" in out
    assert _stored(pg_url) == before  # not one more row, checkpoint or status change
