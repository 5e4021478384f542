"""The command line's --log-level and --log-json."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from ai_agent.cli import main


def script(tmp_path: Path) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps([{"text": "hello"}]))
    return f"scripted:{path}"


def test_log_level_writes_engine_logs_to_stderr_and_restores_the_logger(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["greet", "--model", script(tmp_path), "--quiet", "--log-level", "debug"])
    out = capsys.readouterr()
    assert code == 0 and out.out.strip() == "hello"
    assert " INFO    ai_agent.run [thread=" in out.err and "run completed in" in out.err
    assert " DEBUG   ai_agent.stages " in out.err
    logger = logging.getLogger("ai_agent")
    assert logger.handlers == [] and logger.level == logging.NOTSET


def test_log_json_writes_json_lines_at_the_settings_level(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["greet", "--model", script(tmp_path), "--quiet", "--log-json"])
    err = capsys.readouterr().err
    records = [json.loads(line) for line in err.splitlines()]
    assert code == 0
    assert {r["level"] for r in records} == {"INFO"}  # the settings' default level
    assert records[-1]["event"] == "run_finished" and records[-1]["status"] == "completed"
    assert all(r["thread_id"] == records[0]["thread_id"] for r in records)


def test_without_the_options_nothing_is_logged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["greet", "--model", script(tmp_path), "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_a_bad_level_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["greet", "--log-level", "loud"]) == 2
    assert "invalid choice" in capsys.readouterr().err
