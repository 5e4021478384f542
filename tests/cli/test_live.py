"""The CLI's live view: the answer streams to stdout once, progress and tool output to stderr."""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path
from typing import Any

import pytest

from ai_agent.cli import EXIT, main
from ai_agent.cli._live import LivePrinter
from ai_agent.cli._printing import streaming
from ai_agent.events import (
    FinalDelta,
    GatePaused,
    ModelRetry,
    StageStarted,
    ToolOutput,
    ToolStarted,
)
from tests.cli.scripts import calc, script


def test_stream_prints_the_answer_once_and_progress_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = script(tmp_path, calc("6*7"), {"text": "6 times 7 is 42."})
    code = main(["multiply", "--tools", "calculator", "--model", model, "--stream"])
    out = capsys.readouterr()
    assert code == EXIT["completed"]
    assert out.out == "6 times 7 is 42.\n"
    assert "[1] draft: waiting for the model" in out.err
    assert "[1] act: running calculator" in out.err
    assert "[1] act: calculator ok" in out.err


def test_a_final_text_other_than_the_stream_is_printed_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = script(tmp_path, calc("1+1"), {"text": "never"})
    db = str(tmp_path / "c.sqlite")
    assert main(["add", "--model", model, "--thread-id", "d", "--db", db, "--stream"]) == 3
    capsys.readouterr()
    code = main(["resume", "d", "--deny", "--model", model, "--db", db, "--stream"])
    out = capsys.readouterr()
    assert code == EXIT["cancelled"]
    assert out.out.startswith("Run cancelled at the gate")


def test_a_stream_that_ran_out_of_iterations_says_why_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = script(tmp_path, calc("1+1"), calc("2+2"))
    code = main(
        ["loop", "--tools", "calculator", "--model", model, "--stream", "--max-iterations", "1"]
    )
    out = capsys.readouterr()
    assert code == EXIT["max_iterations"]
    assert out.out == ""
    assert "error: Stopped after 1 iteration(s)" in out.err


def test_stream_resume_of_a_paused_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = script(tmp_path, calc("6*7"), {"text": "42"})
    db = str(tmp_path / "c.sqlite")
    assert main(["multiply", "--model", model, "--thread-id", "p", "--db", db, "--stream"]) == 3
    paused = capsys.readouterr()
    assert "gate: paused for a plan" in paused.err
    code = main(
        ["resume", "p", "--activate", "calculator", "--model", model, "--db", db, "--stream"]
    )
    out = capsys.readouterr()
    assert code == EXIT["completed"]
    assert out.out == "42\n"


def test_no_stream_asks_for_whole_replies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = script(tmp_path, {"text": "whole"})
    assert main(["hi", "--model", model, "--no-stream"]) == 0
    assert capsys.readouterr().out == "whole\n"
    assert main(["hi", "--model", model, "--no-stream", "--stream"]) == EXIT["usage"]


def _args(**kw: Any) -> argparse.Namespace:
    base = {"no_stream": False, "json": False, "quiet": False, "stream": False}
    return argparse.Namespace(**{**base, **kw})


def test_the_default_is_live_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    assert not streaming(_args())
    assert streaming(_args(stream=True))
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert streaming(_args())
    assert not streaming(_args(json=True))
    assert not streaming(_args(quiet=True))
    assert not streaming(_args(no_stream=True))


def test_the_printer_keeps_tool_output_and_status_lines_apart() -> None:
    out, err = io.StringIO(), io.StringIO()
    printer = LivePrinter(out=out, err=err)
    printer(ToolOutput("run_bash", "c1", "partial line", "stdout", 1))
    printer(ModelRetry("503 from the server", 1.5, 2))
    printer(StageStarted("decide", 2))  # no line for it
    printer(GatePaused(2))
    assert err.getvalue() == (
        "partial line\n"
        "[2] draft: 503 from the server; retrying in 1.5s\n"
        "[2] gate: paused for a plan\n"
    )
    assert out.getvalue() == ""


def test_the_printer_escapes_what_arrives_in_pieces_as_the_whole_would_be() -> None:
    out, err = io.StringIO(), io.StringIO()
    printer = LivePrinter(out=out, err=err)
    # A typed backslash, then a real ESC in the next piece; a C1 CSI; a bidi override.
    for piece in ("all good \\", "\x1b[2J done\r", "\x9b2J \u202e", "end \\"):
        printer(FinalDelta(piece))
    printer(ToolOutput("run_bash", "c1", "ok\x1b[2K\rfake\x1b]0;t", "stdout", 1))
    printer(ToolOutput("run_bash", "c1", "\x07 tail\\", "stdout", 1))
    printer(ToolStarted("ev\x1bil", "c2", 1))
    printer.end_tool_output()
    printer.end_answer()
    # The lone backslash at the end waits for the next piece, and shows as it is at the end.
    assert out.getvalue() == r"all good \\\x1b[2J done\r\x9b2J \u202eend " + "\\\n"
    assert err.getvalue() == (
        r"ok\x1b[2K\rfake\x1b]0;t\x07 tail" + "\\\n" + r"[1] act: running ev\x1bil" + "\n"
    )
    assert printer.streamed == "all good \\\x1b[2J done\r\x9b2J \u202eend \\"
