"""What the browser tests share: the CLI that makes paused runs, the console they drive.

Each test makes a real paused run with the CLI and a scripted model in the test's directory,
starts the real ``ai-agent ui`` on it in a subprocess (its worker polls every 0.2 s), and drives
its pages in Debian's chromium (the ``browser`` and ``page`` fixtures of this folder's conftest,
which skip where chromium is missing).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ai_agent.cli import EXIT
from tests.console.server import Served, console

playwright_api = pytest.importorskip("playwright.sync_api")
CHROMIUM = shutil.which("chromium")

CLI = [sys.executable, "-m", "ai_agent.cli"]
WAIT_MS = 60_000  # the longest Playwright waits for what a page should come to show


def script(tmp_path: Path, *turns: dict[str, Any]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(list(turns)))
    return f"scripted:{path}"


def append(text: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "append_file", "args": {"path": "log.txt", "content": text}}]}


def pause(model: str, thread: str, task: str = "log it") -> None:
    """A run paused at the gate, made by the CLI in its own process.

    Not by calling main(): Playwright's sync API keeps an event loop running in this thread.
    """
    argv = [task, "--tools", "files", "--model", model, "--thread-id", thread, "--quiet"]
    done = subprocess.run([*CLI, *argv], capture_output=True, text=True, check=False)
    assert done.returncode == EXIT["paused"], done.stderr


def serve(model: str) -> Any:
    return console(["--model", model, "--tools", "files", "--poll", "0.2"], cwd=Path.cwd())


def sign_in(page: Any, served: Served) -> None:
    page.goto(served.signed_in_url)
    assert page.url == f"{served.base}/inbox"  # the token is gone from the address
