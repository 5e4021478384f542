"""Numbers on the command line and times in edited rows: each means what it says, or is refused.

``int()`` and ``float()`` read digits of every script (``int("\\u0661")`` is 1), ``float()`` reads
``nan`` and ``inf``, and SQLite's LIMIT takes -1 for "no limit": each of those was accepted
and meant something other than what was typed. A row's time edited to 9e999 (SQLite keeps
Infinity) made ``rules list`` an internal error and ``--json`` print ``Infinity``, which is
not JSON.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ai_agent.cli import EXIT, main
from tests.cli.scripts import calc, script, stored_calculation

DB = ".agents/checkpoints.sqlite"


def strict_json(text: str) -> Any:
    """``text`` read as JSON, which has no NaN or Infinity (Python's reader would take them)."""

    def refuse(constant: str) -> None:
        pytest.fail(f"{constant} is not JSON: {text}")

    return json.loads(text, parse_constant=refuse)


def _write(path: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "write_file", "args": {"path": path, "content": "x"}}]}


def ruled(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A database with rule 1 (write_file with these arguments) made by a real resume."""
    model = script(tmp_path, _write("a.txt"), {"text": "written"})
    argv = ["--tools", "files", "--model", model, "--quiet"]
    assert main(["write it", "--thread-id", "r1", *argv]) == EXIT["paused"]
    resume = ["resume", "r1", "--approve", "all", "--always", "args", *argv]
    assert main(resume) == EXIT["completed"]
    capsys.readouterr()


@pytest.mark.parametrize("rule", ["\u0661", "\u00b9", "\u00b2", "\uff11", "+1", " 1"])
def test_a_rule_id_in_other_digits_revokes_nothing(
    rule: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ruled(tmp_path, capsys)
    assert main(["rules", "revoke", rule]) == EXIT["usage"]
    err = capsys.readouterr().err
    assert "a rule's id is a number, such as 3" in err and "internal error" not in err
    assert main(["rules", "list", "--json"]) == 0
    (kept,) = json.loads(capsys.readouterr().out)
    assert (kept["id"], kept["revoked_at"]) == (1, None)


def _usage_error(capsys: pytest.CaptureFixture[str], argv: list[str], option: str) -> None:
    assert main(argv) == EXIT["usage"]
    err = capsys.readouterr().err
    assert f"argument {option}:" in err, err
    assert "internal error" not in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["runs", "--limit", "-1"], "--limit"),  # SQLite: no limit at all
        (["runs", "--limit", "0"], "--limit"),  # "no runs" where there are some
        (["runs", "--limit", "99999999999999999999"], "--limit"),  # was an internal error
        (["runs", "--limit", "\u0662"], "--limit"),
        (["plans", "--limit", "-5"], "--limit"),
        (["plans", "--limit", "99999999999999999999"], "--limit"),
        (["prune", "--keep-last", "\u0661"], "--keep-last"),
        (["prune", "--older-than", "nan"], "--older-than"),  # pruned nothing, exit 0
        (["prune", "--older-than", "\u0661"], "--older-than"),
        (["worker", "--once", "--poll", "nan"], "--poll"),  # polled in a loop: a core's time
        (["worker", "--once", "--outage", "nan"], "--outage"),  # never gave up
        (["worker", "--once", "--grace", "nan"], "--grace"),
        (["worker", "--once", "--grace", "-1"], "--grace"),
        (["worker", "--once", "--concurrency", "\u0662"], "--concurrency"),
        (["x", "--max-iterations", "\u0663"], "--max-iterations"),
    ],
)
def test_numbers_are_ascii_digits_within_their_range(
    argv: list[str], option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, model = stored_calculation(tmp_path)
    capsys.readouterr()
    db = ["--db", str(tmp_path / "c.sqlite")]
    runner = ["--model", model, "--quiet"] if argv[0] in ("x", "worker") else []
    _usage_error(capsys, [*argv, *db, *runner], option)


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["--poll", "nan"], "--poll"),
        (["--request-timeout", "nan"], "--request-timeout"),
        (["--port", "\u0668\u0660"], "--port"),
    ],
)
def test_console_numbers_are_checked_before_anything_else(
    argv: list[str], option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("ai_agent.console")
    # Not loopback: were the number taken, the host's check would refuse before serving.
    _usage_error(capsys, ["ui", "--host", "192.0.2.1", *argv], option)


def test_a_number_within_its_range_is_taken(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, _ = stored_calculation(tmp_path)
    capsys.readouterr()
    assert main(["runs", "--limit", "1", "--db", str(db), "--json"]) == 0
    assert [r["thread_id"] for r in json.loads(capsys.readouterr().out)] == ["t1"]
    assert main(["prune", "--older-than", "1.5e3", "--db", str(db), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pruned"] == []


def test_a_rule_whose_times_were_edited_out_of_range_is_still_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ruled(tmp_path, capsys)
    with sqlite3.connect(DB) as conn:
        conn.execute("UPDATE agent_rules SET created_at = 9e999, revoked_at = -1e300")
    assert main(["rules", "list", "--all"]) == 0
    out = capsys.readouterr().out
    assert "write_file with these exact arguments" in out and "unknown" in out
    assert main(["rules", "list", "--all", "--json"]) == 0
    (rule,) = strict_json(capsys.readouterr().out)
    assert (rule["created_at"], rule["revoked_at"]) == (None, -1e300)


def test_json_output_holds_no_infinity_from_an_edited_plan_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = script(tmp_path, calc("6*7"), {"text": "42"})
    assert main(["multiply", "--model", model, "--thread-id", "p1", "--quiet"]) == EXIT["paused"]
    assert main(["resume", "p1", "--activate", "calculator", "--queue", "--quiet"]) == 0
    capsys.readouterr()
    with sqlite3.connect(DB) as conn:
        conn.execute("UPDATE agent_plans SET submitted_at = 9e999, claimed_at = -9e999")
    assert main(["plans", "--json"]) == 0
    (plan,) = strict_json(capsys.readouterr().out)
    # As `runs` shows a time it cannot read: null.
    assert (plan["submitted_at"], plan["claimed_at"], plan["status"]) == (None, None, "queued")
