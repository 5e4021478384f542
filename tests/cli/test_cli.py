"""The command line, tested by calling ``main(argv)``: outputs, exit codes, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ai_agent.cli import EXIT, main
from tests.cli.scripts import calc, script


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_task_alone_means_run_and_prints_the_answer_and_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = script(tmp_path, calc("19.5% of 349"), {"text": "19.5% of 349 = 68.055"})
    code = main(["calc 19.5% of 349", "--tools", "calculator", "--trace", "--model", model])
    out = capsys.readouterr()
    assert code == EXIT["completed"] == 0
    lines = out.out.splitlines()
    assert lines[0].split() == ["stage", "iter", "ms", "tool", "status", "gate", "detail"]
    assert any(
        line.startswith("act ") and "calculator" in line and "68.055" in line for line in lines
    )
    assert lines[-1] == "19.5% of 349 = 68.055"
    # Live status lines go to stderr, never mixed into the answer.
    assert "[1] act: running calculator" in out.err
    assert "[1] draft: waiting for the model" in out.err


def test_json_output_is_the_run_result(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = script(tmp_path, {"text": "hi"})
    code, data = run_json(capsys, "run", "say hi", "--model", model, "--thread-id", "t1")
    assert code == 0
    assert (data["status"], data["thread_id"], data["final_text"]) == ("completed", "t1", "hi")
    assert data["trace"][0]["stage"] == "recall"


def test_pause_then_resume_with_each_kind_of_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = script(tmp_path, calc("6*7"), {"text": "42"})
    code = main(["multiply", "--model", model, "--thread-id", "p1", "--quiet"])
    out = capsys.readouterr().out
    assert code == EXIT["paused"] == 3
    assert "Run p1 paused at iteration 1" in out
    code, shown = run_json(capsys, "show", "p1")
    assert shown["trace"][-1] | {"started_at": 0} == {
        "stage": "gate",
        "iteration": 1,
        "status": "paused",
        "gate_score": 0.8,
        "detail": "TOOL_MISSING",
        "started_at": 0,
    }
    assert "activate calculator (--activate calculator)" not in out  # options are in --json
    code, data = run_json(capsys, "resume", "p1", "--model", model, "--activate", "calculator")
    assert code == 0 and data["final_text"] == "42"
    assert main(["resume", "p1", "--model", model]) == EXIT["usage"]
    assert "nothing to resume" in capsys.readouterr().err


def test_resume_deny_cancels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = script(tmp_path, calc("1+1"), {"text": "never"})
    assert main(["add", "--model", model, "--thread-id", "d1", "--quiet"]) == 3
    capsys.readouterr()
    code = main(["resume", "d1", "--model", model, "--deny", "--reason", "no thanks"])
    out = capsys.readouterr()
    assert code == EXIT["cancelled"] == 4
    assert out.out.startswith("Run cancelled at the gate")
    assert "no thanks" in out.out
    assert "(cancelled)" in out.err


def test_running_out_of_iterations_is_its_own_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = script(tmp_path, calc("1+1"), calc("2+2"), {"text": "never"})
    argv = ["count", "--model", model, "--tools", "calculator", "--max-iterations", "1"]
    code = main([*argv, "--thread-id", "m1"])
    err = capsys.readouterr().err
    assert code == EXIT["max_iterations"] == 7
    assert "error: Stopped after 1 iteration(s) (the max_iterations limit)" in err
    code, data = run_json(capsys, "show", "m1")
    assert (data["status"], data["stop_reason"]) == ("failed", "max_iterations")
    assert main(["show", "m1"]) == 0
    assert "thread m1: failed (max_iterations) after 1 iteration(s)" in capsys.readouterr().out


def test_resume_with_a_plan_file_and_approvals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = script(tmp_path, calc("2+3"), {"text": "5"})
    assert main(["add", "--model", model, "--thread-id", "f1", "--quiet"]) == 3
    capsys.readouterr()
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"activate_tools": ["calculator"], "instructions": "go"}))
    assert main(["resume", "f1", "--model", model, "--plan-file", str(plan)]) == 0
    assert capsys.readouterr().out.strip() == "5"


def test_bad_plans_are_usage_errors_and_keep_the_run_paused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = script(tmp_path, calc("2+3"), {"text": "5"})
    assert main(["add", "--model", model, "--thread-id", "b1", "--quiet"]) == 3
    capsys.readouterr()
    assert main(["resume", "b1", "--model", model, "--approve", "call_9"]) == EXIT["usage"]
    assert "no pending call 'call_9'" in capsys.readouterr().err
    assert main(["resume", "b1", "--model", model]) == EXIT["usage"]
    assert "needs a plan" in capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text("{nope")
    assert main(["resume", "b1", "--model", model, "--plan-file", str(broken)]) == 2
    assert "the plan file" in (err := capsys.readouterr().err) and "is not valid JSON" in err
    code, data = run_json(capsys, "show", "b1")
    assert code == 0 and data["status"] == "paused"


def test_runs_and_show(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = script(tmp_path, {"text": "ok"})
    main(["first task", "--model", model, "--thread-id", "r1", "--quiet"])
    main(["second task", "--model", model, "--thread-id", "r2", "--quiet"])
    capsys.readouterr()
    assert main(["runs"]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listing] == ["r2", "r1"]
    assert "completed" in listing[0] and "second task" in listing[0]
    code, runs = run_json(capsys, "runs", "--status", "completed", "--limit", "1")
    assert code == 0 and [r["thread_id"] for r in runs] == ["r2"]
    assert main(["show", "r1"]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("thread r1: completed after 1 iteration(s)")
    assert shown.rstrip().endswith("ok")


def test_runs_without_a_database_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs"]) == EXIT["usage"]
    assert "no checkpoint database at .agents/checkpoints.sqlite" in capsys.readouterr().err
    assert main(["show", "x", "--db", "missing.sqlite"]) == EXIT["usage"]


def test_show_of_an_unknown_thread(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["t", "--model", script(tmp_path, {"text": "x"}), "--quiet"])
    capsys.readouterr()
    assert main(["show", "ghost"]) == EXIT["usage"]
    assert capsys.readouterr().err.startswith("error: no run with thread id ghost")


def test_tools_lists_the_catalog(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tools"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("read_only: runs without asking (policy: auto)\n  calculator ")
    assert "\nmodification: waits for a person's approval, with a preview" in out
    code, catalog = run_json(capsys, "tools")
    assert code == 0 and "calculator" in [t["name"] for t in catalog]


def test_unreachable_model_server_is_one_clear_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["hello", "--base-url", "http://127.0.0.1:9/v1", "--quiet"])
    err = capsys.readouterr().err
    assert code == EXIT["failed"] == 1
    assert err.strip().splitlines() == [
        "error: cannot reach the model server at http://127.0.0.1:9/v1; start it, or pass "
        "--base-url or set MAMBA_MODEL_BACKEND__BASE_URL"
    ]
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["x", "--threshold", "2"], "gate_threshold must be between 0 and 1"),
        (["x", "--tools", "nope"], "unknown tool 'nope'"),
        (["x", "--max-iterations", "0"], "--max-iterations must be at least 1"),
        (["x", "--model", "scripted:missing.json"], "script file missing.json does not exist"),
        (["x", "--base-url", "not a url"], "model_backend.base_url"),
        (["x", "--config", "nowhere.toml"], "nowhere.toml"),
    ],
)
def test_usage_errors_are_one_line_with_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--quiet"]) == EXIT["usage"]
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_argparse_errors_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["resume"]) == EXIT["usage"]
    assert "the following arguments are required: thread" in capsys.readouterr().err
    assert main([]) == EXIT["usage"]
    assert main(["--help"]) == 0
    assert "Exit codes" in capsys.readouterr().out


def test_internal_errors_are_reported_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ai_agent.graph import build

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("wires crossed")

    monkeypatch.setattr(build, "build_graph", broken)
    model = script(tmp_path, {"text": "x"})
    assert main(["x", "--model", model, "--quiet"]) == EXIT["failed"]
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: wires crossed" in err and "Traceback" not in err
    assert main(["y", "--model", model, "--quiet", "--debug"]) == EXIT["failed"]
    assert "Traceback" in capsys.readouterr().err


def test_ctrl_c_points_at_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ai_agent.graph import agent

    async def interrupted(*args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(agent.Agent, "run", interrupted)
    code = main(["x", "--model", script(tmp_path, {"text": "x"}), "--thread-id", "k1", "--quiet"])
    assert code == 130
    assert "resume it with: ai-agent resume k1" in capsys.readouterr().err
