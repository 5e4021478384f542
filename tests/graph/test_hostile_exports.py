"""Inspecting, forking, replaying and exporting runs whose data was not made to be friendly.

Real SQLite files in tmp_path, runs made with scripted models and the CLI's ``main``: a fork of
a run paused on a command that names its own thread, a subagent's run replayed on its own, a
recorded tool result edited in the run store, and a test file asked for under an odd name.
Each failed before its fix: the fork's gate showed another command than the one waiting, the
child's replay diverged on its parent's model and its case carried the parent's conversation,
the replay ended in "internal error: KeyError", and the test file was an internal error.
"""

from __future__ import annotations

import ast
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ai_agent import Agent
from ai_agent.cli import EXIT, main
from ai_agent.graph import export_case
from ai_agent.testing import FunctionModel, ScriptedModel
from tests.cli.scripts import script, stored_calculation


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "internal error" not in err and "Traceback" not in err, err
    return code, out, err


# A fork's gate shows the waiting call as it will run -----------------------------------------


def test_a_forks_gate_shows_the_waiting_command_as_it_will_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A run named "build" waits on `rm -rf build/cache`. Its fork's prompt must name the fork
    # where it says how to resume, and nowhere else: it rewrote every "build" in the prompt, so
    # a person deciding on the fork was shown `rm -rf <fork id>/cache`, a command that is not
    # the one an approval runs.
    command = {"tool_calls": [{"name": "run_bash", "args": {"command": "rm -rf build/cache"}}]}
    model = script(tmp_path, command, {"text": "cleaned"})
    db = str(tmp_path / "runs.sqlite")
    code, _, _ = cli(
        capsys, "run", "clean up", "--db", db, "--model", model, "--tools", "run_bash",
        "--thread-id", "build", "--quiet",
    )  # fmt: skip
    assert code == EXIT["paused"]
    _, out, _ = cli(capsys, "history", "build", "--db", db, "--json")
    paused = [entry for entry in json.loads(out)["checkpoints"] if entry["paused"]][-1]
    _, out, _ = cli(capsys, "fork", "build", paused["checkpoint_id"], "--db", db, "--json")
    fork = json.loads(out)["thread_id"]

    _, out, _ = cli(capsys, "show", fork, "--db", db)
    prompt = out[out.index(f"Run {fork} paused at iteration 1") :]
    assert "$ rm -rf build/cache" in prompt
    assert "destructive command: rm -rf build/cache" in prompt
    assert f"Resume with: ai-agent resume {fork} --plan" in prompt
    assert prompt.count(fork) == 2  # where it is named, and how to resume it


# A subagent's run is replayed and exported from its own recording ----------------------------


def parent_and_child(db: Path) -> tuple[Agent, Agent]:
    """A parent (a scripted model) whose tool is a child agent with a model of another kind."""
    turns = [
        {"tool_calls": [{"name": "calculator", "args": {"expression": "6*7"}}]},
        {"text": "6*7 is 42"},
    ]
    child = Agent(
        model=FunctionModel(lambda messages, info: turns[info["turn"]]),
        tools=["calculator"],
        system_prompt="You answer arithmetic exactly.",
        memory_path=None,
    )
    parent = Agent(
        model=ScriptedModel(
            [
                {"tool_calls": [{"name": "research", "args": {"task": "What is 6*7?"}}]},
                {"text": "The answer is 42."},
            ]
        ),
        tools=[child.as_tool("research", "Answers arithmetic questions exactly.")],
        checkpoint_path=db,
        memory_path=None,
    )
    return parent, child


async def test_a_subagents_run_replays_and_exports_from_its_own_recording(
    tmp_path: Path,
) -> None:
    # The child's run names its parent's thread, but none of its steps are the parent's: its
    # recording was read as a fork's, the parent's calls first, so a recorded replay compared
    # the child's requests with the parent's model ("params: llm scripted" against "function")
    # and stopped at once, and its case file carried the parent's conversation.
    db = tmp_path / "runs.sqlite"
    parent, _ = parent_and_child(db)
    async with parent:
        done = await parent.run("What is 6*7?", thread_id="dinner")
    assert done.status == "completed"
    replayer = Agent(
        model=ScriptedModel([]),
        tools=["calculator"],
        system_prompt="You answer arithmetic exactly.",
        checkpoint_path=db,
        memory_path=None,
    )
    async with replayer:
        replay = await replayer.replay("dinner.c1.0")
        case = await export_case(replayer.archive.database, "dinner.c1.0")
    assert replay.divergence is None, replay.divergence
    assert (replay.status, replay.final_text) == ("completed", "6*7 is 42")
    assert len(case["model_calls"]) == 2
    assert "Answers arithmetic questions exactly." not in json.dumps(case)


# A recorded tool result that no tool returns ---------------------------------------------------


@pytest.mark.parametrize(
    ("result", "problem"),
    [
        ({"content": "42"}, "without its 'status'"),
        ({"status": "maybe", "content": "42"}, "holds 'maybe', not one of"),
        ({"status": "ok", "content": "42", "meta": 5}, "result.meta, holds a whole number"),
        ({"status": "error", "error": 5}, "result.error, holds a whole number"),
        ({"status": "ok", "content": "42", "execution_time_ms": "soon"}, "holds text"),
    ],
)
def test_a_recorded_tool_result_of_another_shape_stops_the_replay_naming_the_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], result: dict[str, Any], problem: str
) -> None:
    db, _ = stored_calculation(tmp_path)
    capsys.readouterr()
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE agent_journal SET result = ? WHERE thread_id = 't1'", [json.dumps(result)]
        )
    code, out, err = cli(capsys, "replay", "t1", "--db", str(db))
    assert code != EXIT["completed"]
    assert "the result of recorded tool call 1 of thread t1" in out + err
    assert problem in out + err
    assert "ai-agent replay t1 --live" in out + err
    # The call never ran in the replay: its journal keeps no intent for a resume to ask about.
    with sqlite3.connect(db) as conn:
        left = conn.execute("SELECT count(*) FROM agent_journal WHERE thread_id != 't1'")
        assert left.fetchone()[0] == 0


# The test file of a run, asked for under an odd name -------------------------------------------


def test_a_test_file_named_with_three_quotes_keeps_its_docstring(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The recording's name (from --out) was written into the docstring as it was: three
    # quotes ended the docstring and the command said "internal error: SyntaxError".
    db, _ = stored_calculation(tmp_path)
    capsys.readouterr()
    test = tmp_path / ('test_x"""+__import__("os").system("echo owned")+""".py')
    code, _, _ = cli(capsys, "test-from-run", "t1", "--db", str(db), "--out", str(test))
    assert code == 0
    module = ast.parse(test.read_text(encoding="utf-8"))
    docstring = ast.get_docstring(module) or ""
    assert test.stem + ".recording.json" in docstring
    assert not [
        node
        for node in ast.walk(module)
        if isinstance(node, ast.Attribute) and node.attr == "system"
    ]
