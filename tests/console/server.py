"""The real ``ai-agent ui`` in a subprocess: started, its printed URL read, stopped by SIGINT."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

START_SECONDS = 60.0  # a limit on a wait for the printed URL, not a measurement


@dataclass(frozen=True)
class Served:
    """A running console: its base URL (``http://127.0.0.1:PORT``) and token."""

    base: str
    token: str
    process: subprocess.Popen[str]

    @property
    def signed_in_url(self) -> str:
        """The URL it printed: the inbox, with the token."""
        return f"{self.base}/inbox?token={self.token}"


@contextmanager
def console(args: Sequence[str], cwd: Path) -> Iterator[Served]:
    """``ai-agent ui --port 0 ARGS`` in ``cwd``, until the block ends."""
    process = subprocess.Popen(
        [sys.executable, "-m", "ai_agent.cli", "ui", "--port", "0", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        line = _printed_url(process)
        url = line.split()[1]  # "console: URL" (and a hint when the token is the person's)
        base, _, token = url.rstrip("/").partition("/?token=")
        yield Served(base, token, process)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            _, err = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:  # pragma: no cover - a console that ignores SIGINT
            process.kill()
            _, err = process.communicate()
        # Ctrl-C stops it cleanly: no traceback, whatever it was doing.
        assert "Traceback" not in err, err


def _printed_url(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], deadline - time.monotonic())
        if not ready:
            break
        line = process.stdout.readline()
        if line.startswith("console: "):
            return line
        if not line:  # it exited
            break
    process.kill()
    _, err = process.communicate()
    raise AssertionError(f"ai-agent ui did not start: {err}")
