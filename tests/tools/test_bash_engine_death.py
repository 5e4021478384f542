"""A command dies with the engine: SIGKILL the engine mid-command and the effect never happens.

A real engine process (``proc_bash.py``) runs an unattended run whose ``run_bash`` call starts a
command that marks its start, sleeps, then makes its effect. The test kills the engine with
SIGKILL once the command has started, waits until no process of the command is left (whether
it finished or was killed), and checks that the effect never happened. The resumed run then
asks a person about the call, saying plainly that its effect may already have happened.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("proc_bash.py")
MODES = [
    "none",
    pytest.param(
        "bwrap",
        marks=pytest.mark.skipif(shutil.which("bwrap") is None, reason="no bubblewrap"),
    ),
]


def start(db: Path, work: Path, sandbox: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), str(db), str(work), sandbox, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in cmdline and state != "Z":
            found.append(int(entry))
    return found


def wait_for(condition: object, what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.mark.parametrize("sandbox", MODES)
def test_a_sigkilled_engine_takes_its_command_with_it(tmp_path: Path, sandbox: str) -> None:
    work = tmp_path / "work"  # the private working directory conftest made
    db = tmp_path / "state" / "c.sqlite"
    # A marker unique to this test, so the processes of its command can be found in /proc.
    marker = f"{2 + os.getpid() % 7}.{time.monotonic_ns() % 100000:05d}"
    # A background grandchild too: it must die as well.
    command = f"touch started; (sleep {marker}; touch late) & sleep {marker}; touch effect"
    engine = start(db, work, sandbox, "run", "t1", command)
    try:
        wait_for(lambda: (work / "started").exists() or engine.poll() is not None, "the start")
        assert engine.poll() is None, engine.communicate()
        engine.send_signal(signal.SIGKILL)
        engine.wait(timeout=30)
        # Done either way: killed with the engine, or finished (the bug) after the sleep.
        wait_for(lambda: not processes_with(marker), "the command's processes to end")
    finally:
        for pid in processes_with(marker):
            os.kill(pid, signal.SIGKILL)
        engine.communicate()
    assert not (work / "effect").exists() and not (work / "late").exists()
    resumed = start(db, work, sandbox, "resume", "t1", command)
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 3, (out, err)
    gate = json.loads(out.strip().splitlines()[-1])["gate"]
    assert [i["code"] for i in gate["issues"]] == ["UNKNOWN_OUTCOME"]
    message = gate["issues"][0]["message"]
    assert "its effects may already have happened" in message, message
    assert "may happen twice" in message
