"""SIGTERM stops ``run`` and ``resume`` as Ctrl-C does: the run is left resumable and says so.

Supervisors stop programs with SIGTERM (``timeout``, systemd, ``docker stop``, a CI job
cancelled). It used to end the process on the spot: the run stayed ``running`` in ``runs``
with its lease held (another machine's ``resume`` was busy until the lease ran out), and the
exit status (-15) said nothing of resuming it.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from ai_agent.testing import Fault, MockOpenAIServer


def _start(tmp_path: Path, base_url: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAMBA_")}
    argv = ["run", "hi", "--thread-id", "s1", "--db", "c.sqlite", "--base-url", base_url]
    return subprocess.Popen(
        [sys.executable, "-m", "ai_agent.cli", *argv, "--model", "m", "--no-stream", "--quiet"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_sigterm_while_the_model_is_asked_leaves_the_run_resumable(tmp_path: Path) -> None:
    with MockOpenAIServer([Fault.hang()]) as server:
        proc = _start(tmp_path, server.base_url)
        deadline = time.monotonic() + 60
        while not server.requests:  # the run waits for the model: mid-run
            assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted; resume it with: ai-agent resume s1" in err
    with sqlite3.connect(tmp_path / "c.sqlite") as conn:
        ((status, error),) = conn.execute("SELECT status, error FROM agent_runs").fetchall()
        leases = conn.execute("SELECT * FROM agent_leases").fetchall()
    assert status == "failed" and "`ai-agent resume s1`" in error
    assert leases == []  # given back: any machine may resume it now
