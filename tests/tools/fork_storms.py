"""Shared parts of the process-limit tests: the system Python, the sandbox modes, a fork storm."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

PYTHON = "/usr/bin/python3"
# Each test runs with no sandbox and, where bubblewrap is installed, inside it.
MODES = [
    "none",
    pytest.param(
        "bwrap",
        marks=pytest.mark.skipif(shutil.which("bwrap") is None, reason="no bubblewrap"),
    ),
]
needs_system_python = pytest.mark.skipif(not Path(PYTHON).exists(), reason="no system python3")


def fork_loop(attempts: int) -> str:
    """Python that forks in a loop and prints how many forks it got (``os`` imported already).

    Each child waits, so they add up; bounded at ``attempts`` so that, where no limit holds,
    it still ends.
    """
    return f"""import time
forked = 0
try:
    for _ in range({attempts}):
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        forked += 1
finally:
    print("forked", forked, flush=True)
"""


def fork_storm(attempts: int) -> str:
    """A bash command that runs `fork_loop` with the system Python."""
    return f"""{PYTHON} - <<'EOF'
import os
{fork_loop(attempts)}EOF"""
