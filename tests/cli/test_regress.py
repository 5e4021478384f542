"""``ai-agent test-from-run`` and ``ai-agent eval``, as a person uses them: real processes.

A run is made by the CLI with a scripted model; ``test-from-run`` writes its test and recording;
pytest runs the generated test in a process of its own, in a folder outside this repository.
Then the recording or the agent's code is changed, and the same test must fail, naming the
first divergence.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ai_agent.cli import EXIT, main
from tests.cli.scripts import calc, script

CLI = [sys.executable, "-m", "ai_agent.cli"]


def cli(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *argv], cwd=cwd, capture_output=True, text=True, check=False, timeout=300
    )


def pytest_in(folder: Path, test: str) -> subprocess.CompletedProcess[str]:
    """The generated test run by pytest in its own process (this repository's conftest unseen)."""
    env = {**os.environ, "PYTHONPATH": str(folder)}
    argv = ["-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "--no-cov", test]
    return subprocess.run(
        [sys.executable, *argv],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=300,
    )


@pytest.fixture
def calc_run(tmp_path: Path) -> Path:
    """A completed run ``calc-1`` (6*7 with the calculator) in ``tmp_path/runs.sqlite``."""
    model = script(tmp_path, calc("6*7"), {"text": "The answer is 42."})
    argv = ["what is 6*7", "--tools", "calculator", "--model", model, "--db", "runs.sqlite"]
    done = cli(tmp_path, *argv, "--thread-id", "calc-1", "--quiet")
    assert done.returncode == 0, done.stderr
    return tmp_path


def test_the_generated_test_passes_then_fails_where_the_tool_result_changes(
    calc_run: Path,
) -> None:
    made = cli(
        calc_run, "test-from-run", "calc-1", "--db", "runs.sqlite", "--out", "cases/test_calc.py"
    )
    assert made.returncode == 0, made.stderr
    cases = calc_run / "cases"
    test, recording = cases / "test_calc.py", cases / "test_calc.recording.json"
    assert made.stdout.splitlines()[0] == "cases/test_calc.py"
    source = test.read_text()
    assert "assert replay.tool_calls == [\n" in source
    assert '        ("calculator", {"expression": "6*7"}),\n' in source
    assert 'assert replay.final_text == "The answer is 42."' in source
    (calc_run / "runs.sqlite").unlink()  # the test needs the recording beside it, not the store

    passed = pytest_in(cases, "test_calc.py")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "1 passed" in passed.stdout

    case = json.loads(recording.read_text())
    case["tool_calls"][0]["result"]["content"] = "41"  # as if the calculator now said 41
    recording.write_text(json.dumps(case))
    failed = pytest_in(cases, "test_calc.py")
    assert failed.returncode == 1
    assert "case calc-1: diverged at step 8: draft: the model request differs" in failed.stdout
    assert "-[2] tool calculator #c1.0: 42" in failed.stdout
    assert "+[2] tool calculator #c1.0: 41" in failed.stdout


AGENTS = """
from ai_agent import Agent, Hooks
from ai_agent.testing import ScriptedModel


def make(path):
    return Agent(model=ScriptedModel([]), tools=["calculator"], checkpoint_path=path,
                 memory_path=None{hooks})
"""


def test_a_change_in_the_agents_code_fails_the_generated_test(calc_run: Path) -> None:
    (calc_run / "myagents.py").write_text(AGENTS.format(hooks=""))
    argv = ["--db", "runs.sqlite", "--out", "test_calc.py", "--app", "myagents:make"]
    made = cli(calc_run, "test-from-run", "calc-1", *argv)
    assert made.returncode == 0, made.stderr
    assert "from myagents import make as make_app" in (calc_run / "test_calc.py").read_text()
    assert pytest_in(calc_run, "test_calc.py").returncode == 0

    # The agent's last stage now words the answer differently.
    hooks = ', hooks=Hooks(finalize=lambda task, ctx: "forty-two")'
    (calc_run / "myagents.py").write_text(AGENTS.format(hooks=hooks))
    failed = pytest_in(calc_run, "test_calc.py")
    assert failed.returncode == 1
    assert "case calc-1: diverged: the final answer differs" in failed.stdout
    assert "-The answer is 42." in failed.stdout and "+forty-two" in failed.stdout


def test_eval_reports_each_case_and_fails_when_one_diverges(calc_run: Path) -> None:
    for name in ("same", "changed"):
        made = cli(
            calc_run,
            "test-from-run",
            "calc-1",
            "--db",
            "runs.sqlite",
            "--out",
            f"cases/test_{name}.py",
        )
        assert made.returncode == 0, made.stderr
    changed = calc_run / "cases" / "test_changed.recording.json"
    case = json.loads(changed.read_text())
    case["tool_calls"][0]["result"]["content"] = "41"
    changed.write_text(json.dumps(case))

    human = cli(calc_run, "eval", "cases")
    assert human.returncode == EXIT["diverged"], human.stderr
    lines = human.stdout.splitlines()
    assert lines[0] == (
        "test_changed: diverged at step 8: draft: the model request differs from the recorded one"
    )
    assert "    -[2] tool calculator #c1.0: 42" in lines
    assert "test_same: same" in lines
    assert lines[-1] == "1 of 2 case(s) the same"

    as_json = cli(calc_run, "eval", "cases", "--json")
    assert as_json.returncode == EXIT["diverged"]
    reports: list[dict[str, Any]] = json.loads(as_json.stdout)
    assert [(r["case"], r["same"], r["step"]) for r in reports] == [
        ("test_changed", False, 8),
        ("test_same", True, None),
    ]
    assert reports[1]["tool_calls"] == [{"name": "calculator", "args": {"expression": "6*7"}}]
    assert reports[1]["final_text"] == "The answer is 42."

    changed.unlink()
    assert cli(calc_run, "eval", "cases").returncode == 0


def test_eval_reports_a_damaged_case_and_goes_on(
    calc_run: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(calc_run)
    assert (
        main(["test-from-run", "calc-1", "--db", "runs.sqlite", "--out", "cases/test_ok.py"]) == 0
    )
    (calc_run / "cases" / "test_bad.recording.json").write_text('{"format": "something else"}')
    capsys.readouterr()
    assert main(["eval", "cases"]) == EXIT["usage"]
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("test_bad: cannot be replayed: the recorded case")
    assert "is not a recorded case" in out[0]
    assert out[1] == "test_ok: same"


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["test-from-run", "calc-1", "--out", "t.txt"], "must end in .py"),
        (["test-from-run", "nope"], "no run with thread id nope"),
        (["test-from-run", "calc-1", "--app", "nocolon"], "--app wants MODULE:FACTORY"),
        (["eval", "nowhere"], "nowhere is not a folder"),
        (["eval", "."], r"no recorded cases \(\*.recording.json\)"),
    ],
)
def test_mistakes_are_one_line_with_what_to_do(
    calc_run: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    problem: str,
) -> None:
    import re

    monkeypatch.chdir(calc_run)
    code = main([*argv, "--db", "runs.sqlite"])
    err = capsys.readouterr().err
    assert code == EXIT["usage"], err
    assert re.search(problem, err), err
    assert "Traceback" not in err


def test_test_from_run_keeps_an_existing_test_unless_forced(
    calc_run: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(calc_run)
    (calc_run / "test_run_calc_1.py").write_text("# mine\n")
    assert main(["test-from-run", "calc-1", "--db", "runs.sqlite"]) == EXIT["usage"]
    assert "test_run_calc_1.py exists; pass --force" in capsys.readouterr().err
    assert (calc_run / "test_run_calc_1.py").read_text() == "# mine\n"
    assert main(["test-from-run", "calc-1", "--db", "runs.sqlite", "--force", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == {
        "thread_id": "calc-1",
        "test": "test_run_calc_1.py",
        "recording": "test_run_calc_1.recording.json",
    }
    assert "replay_case" in (calc_run / "test_run_calc_1.py").read_text()
