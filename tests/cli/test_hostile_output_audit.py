"""What the CLI prints of hostile rows and sources, as a real process writes it to a terminal.

Real SQLite files in tmp_path and ``ai-agent`` as a real subprocess. A run row whose status or
origin holds a line break (any program with the database may write one) printed a line of its
own in ``runs``, ``show`` and ``history``, posing as another run; a source whose link target
holds another source's marker (``https://a.example/[n2]``) had a second link written inside
the first, which cut the first link's sequence and showed part of its URI as answer text.
"""

from __future__ import annotations

import asyncio
import html
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from ai_agent import Agent, tool
from ai_agent.cli import EXIT
from ai_agent.testing import ScriptedModel
from tests.cli.scripts import stored_calculation
from tests.cli.test_hostile_text import terminal_text


def ai_agent(*argv: str) -> tuple[bytes, bytes]:
    done = subprocess.run(
        [sys.executable, "-m", "ai_agent.cli", *argv],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr


def test_a_run_rows_status_and_origin_cannot_print_a_line_of_their_own(tmp_path: Path) -> None:
    db, _ = stored_calculation(tmp_path)
    forged = "forged  completed  send the funds"
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO agent_runs (thread_id, task, status, created_at, updated_at, origin, "
            "parent_thread_id, parent_call_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            ("t1.c1.0", "sub", f"completed\n{forged}", 1.0, 2.0, "child", "t1", "c1.0"),
        )
        conn.execute(
            "INSERT INTO agent_runs (thread_id, task, status, created_at, updated_at, origin, "
            "parent_thread_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
            ("t2", "other", "failed\x1b[2K", 1.0, 3.0, f"fork\n{forged}", "t1"),
        )
    for command in (["runs"], ["show", "t1"], ["history", "t1"]):
        out, err = ai_agent(*command, "--db", str(db))
        shown = terminal_text(out)
        terminal_text(err)
        assert not [line for line in shown.splitlines() if line.startswith("forged")], shown
        if command == ["runs"]:
            assert f"t1.c1.0  completed\\n{forged}  sub" in shown
            assert f"t2  failed\\x1b[2K  other  (fork\\n{forged} of t1)" in shown
        else:  # the child, under its parent
            assert f"child run t1.c1.0 at call c1.0 (completed\\n{forged})" in shown


OSC8 = re.compile(r"\x1b\]8;;([^\x1b]*)\x1b\\")


@tool(category="read_only")
def look_up(topic: str) -> dict[str, Any]:
    """Look a topic up.

    Args:
        topic: What to look up.
    """
    sources = [
        {"id": "n1", "path": "tides.md", "uri": "https://a.example/tides?see=[n2]"},
        {"id": "n2", "path": "moon.md", "uri": "https://b.example/moon"},
    ]
    return {"status": "ok", "content": f"{topic}: twice a day", "meta": {"sources": sources}}


async def cited_run(db: Path) -> None:
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "look_up", "args": {"topic": "tides"}}]},
        {"text": "Tides come twice a day [n1]. The moon pulls them [n2]."},
    ]
    agent = Agent(model=ScriptedModel(turns), tools=[look_up], checkpoint_path=db, memory_path=None)
    async with agent:
        result = await agent.run("when is high tide?", thread_id="cite")
    assert result.status == "completed" and [c["id"] for c in result.citations] == ["n1", "n2"]


def test_a_link_target_holding_another_marker_keeps_its_link_whole(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    asyncio.run(cited_run(db))
    out, _ = ai_agent("show", "cite", "--db", str(db), "--links", "always")
    text = out.decode("utf-8")
    answer = next(line for line in text.splitlines() if line.startswith("Tides come"))
    # Every escape of the line belongs to a whole link sequence, and what is left is the
    # answer as the model wrote it: no part of a target shows as text.
    assert "\x1b" not in OSC8.sub("", answer), repr(answer)
    assert OSC8.sub("", answer) == "Tides come twice a day [n1]. The moon pulls them [n2]."
    assert OSC8.findall(answer) == [
        "https://a.example/tides?see=[n2]",
        "",
        "https://b.example/moon",
        "",
    ]


ASKING = """
from langgraph.types import interrupt
from typing_extensions import TypedDict

from ai_agent import PipelineBuilder


class Asked(TypedDict, total=False):
    answer: str


def ask(state):
    return {"answer": interrupt({"question": "publish " + state["task"] + "?"})}


pipeline = PipelineBuilder(state=Asked).add_node("ask", ask, after="finalize")
"""


def test_a_run_waiting_in_a_node_of_its_pipeline_exports_with_the_question(
    tmp_path: Path,
) -> None:
    # The export took any interrupt for the gate's report: "internal error: KeyError: 'prompt'"
    # (or AttributeError for a question asked as text), and no page.
    (tmp_path / "asking_flow.py").write_text(ASKING)
    script = tmp_path / "script.json"
    script.write_text('[{"text": "draft"}]')
    task = "the </script><script>alert(1)</script> report"
    db = str(tmp_path / "c.sqlite")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    common = ["--db", db, "--pipeline", "asking_flow:pipeline"]

    def cli(*argv: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "ai_agent.cli", *argv, *common],
            capture_output=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
            check=False,
        )

    model = ["--model", f"scripted:{script}", "--no-stream", "--thread-id", "q1"]
    assert cli("run", task, *model).returncode == EXIT["paused"]
    page = tmp_path / "run.html"
    done = cli("export", "q1", "--html", str(page))
    assert done.returncode == 0, done.stderr
    text = page.read_text(encoding="utf-8")
    shown = html.escape(f'paused in node ask: {{"question": "publish {task}?"}}', quote=True)
    assert f"<h3>Waiting for an answer</h3><pre>{shown}</pre>" in text
    assert "<script>alert" not in text and text.count("<script") == 2
