"""``ai-agent resume --queue``, ``ai-agent plans`` and ``ai-agent worker``, by calling main()."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from pathlib import Path

import pytest

from ai_agent.cli import EXIT, main
from ai_agent.graph import Agent
from tests.cli.scripts import calc, script
from tests.graph.conftest import recorder


def paused(tmp_path: Path, thread: str = "p1") -> str:
    model = script(tmp_path, calc("6*7"), {"text": "42"})
    # calculator is not active: the gate pauses on TOOL_MISSING until a plan activates it.
    assert main(["multiply", "--model", model, "--thread-id", thread, "--quiet"]) == EXIT["paused"]
    return model


def test_queue_then_a_worker_resumes_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = paused(tmp_path)
    capsys.readouterr()
    assert main(["resume", "p1", "--activate", "calculator", "--queue", "--model", model]) == 0
    assert capsys.readouterr().out.strip() == ("queued plan 1 for run p1; a worker will resume it")
    assert main(["plans"]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert listing[0].split() == ["plan", "thread", "status", "run", "worker", "error"]
    assert listing[1].split() == ["1", "p1", "queued"]
    assert main(["worker", "--once", "--model", model]) == 0
    err = capsys.readouterr().err
    assert "serving .agents/checkpoints.sqlite (concurrency 1, poll 1s)" in err
    assert "plan 1 for run p1: resumed, run completed" in err
    assert main(["plans", "--json", "--status", "done"]) == 0
    (plan,) = json.loads(capsys.readouterr().out)
    assert (plan["thread_id"], plan["outcome"]) == ("p1", "completed")
    assert main(["plans", "--thread", "other"]) == 0
    assert capsys.readouterr().out.strip() == "no plans"


def test_queue_json_and_worker_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    model = paused(tmp_path)
    capsys.readouterr()
    assert main(["resume", "p1", "--activate", "calculator", "--queue", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "queued"
    assert main(["worker", "--once", "--json", "--model", model, "--concurrency", "2"]) == 0
    out = capsys.readouterr()
    assert [o["run_status"] for o in json.loads(out.out)] == ["completed"]
    assert out.err == ""


def test_a_plan_a_worker_cannot_apply_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paused(tmp_path)
    # Queued by a program whose Agent has a tool the CLI worker does not know.
    submitter = Agent(tools=[recorder([], name="extra")], memory_path=None)
    plan = {"activate_tools": ["calculator", "extra"]}
    asyncio.run(submitter._closing(submitter.submit_plan("p1", plan)))
    capsys.readouterr()
    assert main(["worker", "--once"]) == 0
    err = capsys.readouterr().err
    assert "plan 1 for run p1: not applied: invalid plan: no tool 'extra' in the catalog" in err
    assert main(["show", "p1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "paused"


def test_queue_and_worker_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paused(tmp_path)
    capsys.readouterr()
    assert main(["resume", "p1", "--queue"]) == EXIT["usage"]
    assert "--queue needs a plan" in capsys.readouterr().err
    assert main(["resume", "p1", "--activate", "nope", "--queue"]) == EXIT["usage"]
    assert "no tool 'nope'" in capsys.readouterr().err
    assert main(["worker", "--once", "--concurrency", "0"]) == EXIT["usage"]
    assert main(["worker", "--once", "--app", "nocolon"]) == EXIT["usage"]
    assert "MODULE:FACTORY" in capsys.readouterr().err
    assert main(["worker", "--once", "--app", "no.such.module:make"]) == EXIT["usage"]
    assert "cannot load --app" in capsys.readouterr().err
    assert main(["worker", "--once", "--app", "json:dumps"]) == EXIT["usage"]
    assert "returned str, not an Agent" in capsys.readouterr().err


def test_the_queue_and_the_worker_show_a_hostile_thread_id_escaped(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    # No entry point accepts such a thread id any more, so it can only come from a row written
    # into the store by something else: the listing and the worker still show it escaped.
    thread = "w1\x1b[2K\r\u202eok"
    paused(tmp_path)
    with sqlite3.connect(".agents/checkpoints.sqlite") as db:
        db.execute(
            "INSERT INTO agent_plans (thread_id, plan, status, submitted_at) "
            "VALUES (?, '{}', 'queued', 0)",
            (thread,),
        )
    capsysbinary.readouterr()
    assert main(["plans"]) == 0
    assert main(["worker", "--once"]) == 0
    captured = capsysbinary.readouterr()
    out, err = captured.out.decode(), captured.err.decode()
    assert not [c for c in out + err if c in "\x1b\r\u202e"]
    assert r"w1\x1b[2K\r\u202eok  queued" in out
    assert r"plan 1 for run w1\x1b[2K\r\u202eok: " in err


def test_a_forged_plan_is_refused_and_listed_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = paused(tmp_path)
    db = Path(".agents/checkpoints.sqlite")
    with contextlib.closing(sqlite3.connect(db)) as conn, conn:  # raw SQL, as an attacker would
        conn.execute(
            "INSERT INTO agent_plans (thread_id, plan, status, submitted_at, attempts) "
            "VALUES ('p1', ?, 'queued', 0, 0)",
            (json.dumps({"activate_tools": ["calculator"]}),),
        )
    capsys.readouterr()
    assert main(["worker", "--once", "--model", model]) == 0
    err = capsys.readouterr().err
    assert "plan 1 for run p1: refused: the plan carries no gate token" in err
    assert main(["plans", "--status", "refused"]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert listing[1].split()[:3] == ["1", "p1", "refused"]
    assert "no gate token" in listing[1]
    assert main(["show", "p1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "paused"
    # The person's own `resume --queue` carries the token and is served.
    assert main(["resume", "p1", "--activate", "calculator", "--queue", "--model", model]) == 0
    assert main(["worker", "--once", "--model", model]) == 0
    assert "plan 2 for run p1: resumed, run completed" in capsys.readouterr().err
