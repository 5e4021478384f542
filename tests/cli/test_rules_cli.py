"""`ai-agent resume --always`, `ai-agent rules list` and `ai-agent rules revoke`."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from ai_agent.cli import EXIT, main
from tests.cli.scripts import script


def _write(path: str, content: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "write_file", "args": {"path": path, "content": content}}]}


def _run(tmp_path: Path, thread: str, capsys: pytest.CaptureFixture[str]) -> tuple[str, int]:
    """A run of the files tools that writes a.txt; its model option and exit code."""
    model = script(tmp_path, _write("a.txt", "x"), {"text": "written"})
    code = main(
        ["write it", "--tools", "files", "--model", model, "--thread-id", thread, "--quiet"]
    )
    capsys.readouterr()
    return model, code


def test_a_rule_made_on_resume_is_listed_honoured_and_revoked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model, code = _run(tmp_path, "r1", capsys)
    assert code == EXIT["paused"]
    resume = ["resume", "r1", "--tools", "files", "--model", model, "--approve", "all"]
    assert main([*resume, "--always", "args", "--quiet"]) == EXIT["completed"]
    capsys.readouterr()
    assert main(["rules", "list"]) == 0
    listed = capsys.readouterr().out
    assert "write_file with these exact arguments, in any run" in listed
    assert ': {"content": "x", "path": "a.t' in listed and "run r1, cycle 1, call c1.0" in listed
    # The same call in another run: no gate.
    assert _run(tmp_path, "r2", capsys)[1] == EXIT["completed"]
    assert main(["rules", "list", "--json"]) == 0
    (rule,) = json.loads(capsys.readouterr().out)
    assert main(["rules", "revoke", str(rule["id"])]) == 0
    assert f"revoked rule {rule['id']}" in capsys.readouterr().out
    assert _run(tmp_path, "r3", capsys)[1] == EXIT["paused"]  # asked again
    assert main(["rules", "list"]) == 0
    assert capsys.readouterr().out == "no rules\n"
    assert main(["rules", "list", "--all"]) == 0
    assert "write_file" in capsys.readouterr().out


def test_always_for_a_modification_tool_needs_the_confirmation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model, _ = _run(tmp_path, "c1", capsys)
    resume = ["resume", "c1", "--tools", "files", "--model", model, "--approve", "all"]
    assert main([*resume, "--always", "tool"]) == EXIT["usage"]
    err = capsys.readouterr().err
    assert "confirm it (confirm_always, `--confirm-always`" in err and "Traceback" not in err
    assert main([*resume, "--always", "tool", "--confirm-always", "--quiet"]) == EXIT["completed"]
    capsys.readouterr()
    assert main(["rules", "list"]) == 0
    assert "write_file, in every run" in capsys.readouterr().out


def test_bad_rule_commands_say_what_to_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model, _ = _run(tmp_path, "b1", capsys)
    assert main(["resume", "b1", "--model", model, "--always", "run"]) == EXIT["usage"]
    assert "--always makes a rule for each call you approve" in capsys.readouterr().err
    assert main(["rules", "revoke", "42"]) == EXIT["usage"]
    assert "there is no rule 42" in capsys.readouterr().err
    assert main(["rules", "revoke", "x;drop"]) == EXIT["usage"]
    assert "a rule's id is a number" in capsys.readouterr().err


def test_a_tampered_rule_is_listed_as_not_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model, _ = _run(tmp_path, "t1", capsys)
    resume = ["resume", "t1", "--tools", "files", "--model", model, "--approve", "all"]
    assert main([*resume, "--always", "args", "--quiet"]) == EXIT["completed"]
    capsys.readouterr()
    with sqlite3.connect(".agents/checkpoints.sqlite") as conn:
        conn.execute("UPDATE agent_rules SET args_hash = 'anything'")
    assert main(["rules", "list"]) == 0
    assert "NOT USED: rule 1 is for some arguments but holds no digest of them" in (
        capsys.readouterr().out
    )
