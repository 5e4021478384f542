"""`ai-agent resume THREAD --plan-file` with a plan that edits a waiting call's arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ai_agent.cli import EXIT, main
from tests.cli.scripts import calc, script


@pytest.fixture
def paused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """A run paused at the gate (thread e1, call c1.0 waiting), and its model option."""
    model = script(tmp_path, calc("2+3"), {"text": "done"})
    assert main(["add", "--model", model, "--thread-id", "e1", "--quiet"]) == EXIT["paused"]
    capsys.readouterr()
    return model


def _show(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    assert main(["show", "e1", "--json"]) == 0
    shown: dict[str, object] = json.loads(capsys.readouterr().out)
    return shown


def test_a_plan_file_with_edited_arguments_runs_the_edited_call(
    tmp_path: Path, paused: str, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "plan.json"
    edit = {"activate_tools": ["calculator"], "edit_args": {"c1.0": {"expression": "2*3"}}}
    plan.write_text(json.dumps(edit))
    assert main(["resume", "e1", "--model", paused, "--plan-file", str(plan)]) == 0
    capsys.readouterr()
    assert main(["history", "e1", "--json"]) == 0
    summaries = [e["summary"] for e in json.loads(capsys.readouterr().out)["checkpoints"]]
    assert any(
        'c1.0 edited: {"expression": "2+3"} -> {"expression": "2*3"}' in s for s in summaries
    ), summaries
    assert main(["export", "e1", "--html", str(tmp_path / "e1.html")]) == 0
    page = (tmp_path / "e1.html").read_text()
    assert "2*3" in page and "edited from" in page


def test_edited_arguments_that_do_not_fit_are_named_and_the_run_stays_paused(
    tmp_path: Path, paused: str, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"edit_args": {"c1.0": {"expression": 23}}}))
    assert main(["resume", "e1", "--model", paused, "--plan-file", str(plan)]) == EXIT["usage"]
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "edit_args.c1.0.expression" in err and "the run is still paused" in err
    assert _show(capsys)["status"] == "paused"
