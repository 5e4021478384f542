"""A command whose reader went away (``ai-agent show ID | head``) exits quietly, as Unix tools do.

Each command runs in a real process, through the installed ``ai-agent`` script, with its stdout
on a pipe whose reading end is closed before the command starts: its first write (or the flush
at its end) meets a broken pipe. It must print nothing ("internal error", a traceback, Python's
"Exception ignored" at shutdown) and exit with 141, the status a shell shows for ``seq 1 100000
| head -1``'s ``seq`` (128 + SIGPIPE), so a ``set -o pipefail`` script tells it apart from a
failure the same way.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ai_agent.cli import EXIT, main
from tests.cli.scripts import stored_calculation

TURNS = [
    {"tool_calls": [{"name": "calculator", "args": {"expression": "6*7"}}]},
    {"text": "6*7 = 42"},
]

SCRIPT = Path(sys.executable).with_name("ai-agent")


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A database with one stored run, ``t1``, and the model script that made it."""
    db, model = stored_calculation(tmp_path_factory.mktemp("pipe"))
    return db, Path(model.removeprefix("scripted:"))


def _into_closed_pipe(argv: list[str]) -> subprocess.CompletedProcess[bytes]:
    """Run ``ai-agent argv`` with stdout on a pipe nobody reads any more."""
    reading, writing = os.pipe()
    os.close(reading)
    try:
        return subprocess.run(
            [str(SCRIPT), *argv],
            stdout=writing,
            stderr=subprocess.PIPE,
            timeout=300,
            check=False,
        )
    finally:
        os.close(writing)


@pytest.mark.parametrize(
    "command",
    [
        ["show", "t1"],
        ["runs"],
        ["history", "t1"],
        ["tools"],
        ["--help"],
        ["replay", "t1", "--model", "scripted:{script}", "--tools", "calculator", "--quiet"],
    ],
    ids=lambda c: c[0].lstrip("-"),
)
def test_a_closed_stdout_ends_the_command_quietly(
    stored: tuple[Path, Path], command: list[str]
) -> None:
    db, script = stored
    argv = [part.format(script=script) for part in command]
    if command[0] != "--help":
        argv += ["--db", str(db)]
    done = _into_closed_pipe(argv)
    # A replay's status line goes to stderr, which is still open; nothing else may.
    status = [line for line in done.stderr.decode().splitlines() if "(recorded): completed" in line]
    assert done.stderr.decode().splitlines() == status
    assert done.returncode == EXIT["closed"] == 141


def test_a_broken_pipe_elsewhere_is_reported_as_an_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # A pipe to a tool's process or a server breaking is not a reader of stdout gone away.
    from ai_agent.cli import inspect

    def broken(args: object) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(inspect, "_runs", broken)
    assert main(["runs", "--db", str(tmp_path / "none.sqlite")]) == EXIT["failed"]
    assert "BrokenPipeError" in capsys.readouterr().err


def test_stdout_closed_is_told_by_the_descriptor(monkeypatch: pytest.MonkeyPatch) -> None:
    from ai_agent.cli._common import stdout_closed

    reading, writing = os.pipe()
    with os.fdopen(writing, "w") as out:
        monkeypatch.setattr(sys, "stdout", out)
        assert not stdout_closed()
        os.close(reading)
        assert stdout_closed()
