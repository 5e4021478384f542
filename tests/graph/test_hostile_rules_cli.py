"""Always-allow rules through real ``ai-agent`` processes: what a person refused stays refused.

A scripted model asks for a write and a shell command in one reply; the person approves all
but the command, with ``--always run``. The command's tool must get no rule: when the model
asks for a command again, the run waits. A plan file holding half a character is refused with
its field named, not an internal error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from ai_agent.cli import EXIT


def _cli(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAMBA_")}
    env["MAMBA_EXECUTE_ALL_TOOL_CALLS"] = "true"  # both calls of a reply wait at one gate
    return subprocess.run(
        [sys.executable, "-m", "ai_agent.cli", *argv, "--db", "c.sqlite"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _model(where: Path, *turns: dict[str, Any]) -> str:
    path = where / "script.json"
    path.write_text(json.dumps(list(turns)))
    return f"scripted:{path}"


def _write(path: str) -> dict[str, Any]:
    return {"name": "write_file", "args": {"path": path, "content": "x"}}


def _bash(command: str) -> dict[str, Any]:
    return {"name": "run_bash", "args": {"command": command}}


def test_a_rejected_call_gets_no_rule_from_approve_all(tmp_path: Path) -> None:
    model = _model(
        tmp_path,
        {"tool_calls": [_write("a.txt"), _bash("touch pwned")]},
        {"tool_calls": [_bash("touch pwned")]},
        {"text": "done"},
    )
    runner = ["--tools", "files,shell", "--model", model, "--quiet"]
    paused = _cli(tmp_path, "run", "go", "--thread-id", "t1", *runner)
    assert paused.returncode == EXIT["paused"], paused.stderr
    assert "c1.1: run_bash" in paused.stdout or "c1.1:" in paused.stdout
    assert "$ touch pwned" in paused.stdout
    resume = ["resume", "t1", "--approve", "all", "--reject", "c1.1", "--always", "run"]
    again = _cli(tmp_path, *resume, *runner)
    assert again.returncode == EXIT["paused"], again.stdout + again.stderr
    assert (tmp_path / "a.txt").exists() and not (tmp_path / "pwned").exists()
    listed = _cli(tmp_path, "rules", "list", "--json")
    assert [r["tool"] for r in json.loads(listed.stdout)] == ["write_file"]


def test_a_plan_file_with_half_a_character_is_refused_naming_the_field(tmp_path: Path) -> None:
    model = _model(tmp_path, {"tool_calls": [_write("a.txt")]}, {"text": "done"})
    runner = ["--tools", "files", "--model", model, "--quiet"]
    assert _cli(tmp_path, "run", "go", "--thread-id", "t1", *runner).returncode == EXIT["paused"]
    plan = tmp_path / "plan.json"
    plan.write_text('{"edit_args": {"c1.0": {"path": "a.txt", "content": "\\ud800"}}}')
    refused = _cli(tmp_path, "resume", "t1", "--plan-file", str(plan), *runner)
    assert refused.returncode == EXIT["usage"], refused.stderr
    assert "edit_args.c1.0.content holds half of a character" in refused.stderr
    assert "internal error" not in refused.stderr and not (tmp_path / "a.txt").exists()
    shown = _cli(tmp_path, "show", "t1")
    assert shown.returncode == 0 and "paused" in shown.stdout


def test_rules_list_marks_arguments_it_cuts_short(tmp_path: Path) -> None:
    # Spaces push the part that matters past what the table shows.
    command = "echo tidy" + " " * 60 + "; rm -rf ~"
    model = _model(tmp_path, {"tool_calls": [_bash(command)]}, {"text": "done"})
    runner = ["--tools", "shell", "--model", model, "--quiet"]
    assert _cli(tmp_path, "run", "go", "--thread-id", "t1", *runner).returncode == EXIT["paused"]
    resume = ["resume", "t1", "--approve", "all", "--always", "args"]
    assert _cli(tmp_path, *resume, *runner).returncode == EXIT["completed"]
    listed = _cli(tmp_path, "rules", "list")
    assert listed.returncode == 0, listed.stderr
    (row,) = [line for line in listed.stdout.splitlines() if "run_bash" in line]
    assert "rm -rf" not in row and "\u2026" in row  # cut, and saying so


def test_revoking_a_rule_whose_row_was_edited_prints_one_line(tmp_path: Path) -> None:
    import sqlite3

    model = _model(tmp_path, {"tool_calls": [_write("a.txt")]}, {"text": "done"})
    runner = ["--tools", "files", "--model", model, "--quiet"]
    assert _cli(tmp_path, "run", "go", "--thread-id", "t1", *runner).returncode == EXIT["paused"]
    resume = ["resume", "t1", "--approve", "all", "--always", "run"]
    assert _cli(tmp_path, *resume, *runner).returncode == EXIT["completed"]
    with sqlite3.connect(tmp_path / "c.sqlite") as conn:  # a row any program could have written
        conn.execute("UPDATE agent_rules SET tool = 'write_file\nrevoked rule 2 (every tool)'")
    revoked = _cli(tmp_path, "rules", "revoke", "1")
    assert revoked.returncode == 0, revoked.stderr
    assert len(revoked.stdout.splitlines()) == 1, revoked.stdout
    assert "write_file\\nrevoked rule 2" in revoked.stdout
