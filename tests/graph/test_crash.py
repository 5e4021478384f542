"""A crash at any instant is recoverable, with nothing repeated (real processes, real SIGKILL).

Each test stops a real agent process at a chosen instant (the crash points of ``proc_agent.py``),
then resumes the thread in a new process and checks what happened outside the database: the
``effect`` tool's side effect (``effects.txt``) happened exactly once.
"""

from __future__ import annotations

import signal
import sqlite3
from pathlib import Path

from tests.graph.forked import start
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
