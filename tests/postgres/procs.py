"""Starting the test processes: the run/resume process of ``app.py`` and the CLI (worker ...).

Each process gets its own environment, as a process on another machine would: the same
database URL and the effect directory, nothing else shared.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def env(work: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "EFFECT_DIR": str(work), **extra}


def start_app(url: str, work: Path, *args: str, **extra: str) -> subprocess.Popen[str]:
    """``python -m tests.postgres.app URL run|resume THREAD [PLAN]``."""
    return subprocess.Popen(
        [sys.executable, "-m", "tests.postgres.app", url, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(work, **extra),
    )


def start_cli(work: Path, *args: str, **extra: str) -> subprocess.Popen[str]:
    """``python -m ai_agent.cli ARGS``."""
    return subprocess.Popen(
        [sys.executable, "-m", "ai_agent.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(work, **extra),
    )


def finish(proc: subprocess.Popen[str], timeout: float = 120) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    assert "Traceback" not in err, err
    return proc.returncode, out, err


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def result_of(out: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return data


def wait_for(path: Path, proc: subprocess.Popen[str], timeout: float = 60) -> None:
    """Until ``path`` exists (the effect started), failing if ``proc`` ends first."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
