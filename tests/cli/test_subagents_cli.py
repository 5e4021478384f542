"""A subagent's run on the command line: under its parent in ``runs``, linked in ``show``,
``history`` and the export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ai_agent import Agent
from ai_agent.cli import main
from ai_agent.config import AgentSettings
from ai_agent.testing import ScriptedModel
from tests.graph.conftest import call, text

# The parent step of the tree's child, as show and history --json name it.
PARENT_STEP = {"thread_id": "p", "status": "completed", "iteration": 1, "call_id": "c1.0"}


@pytest.fixture
def tree(tmp_path: Path) -> tuple[list[str], str]:
    """A parent run ``p`` whose call c1.0 delegated to a child, and an unrelated run ``q``."""
    db = tmp_path / "runs.sqlite"
    child = Agent(model=ScriptedModel([text("child says hi")]), memory_path=None,
                  checkpoint_path=":memory:", settings=AgentSettings())  # fmt: skip
    parent = Agent(
        model=ScriptedModel([call("helper", task="say hi"), text("parent done")]),
        tools=[child.as_tool("helper", "Says hi.")],
        checkpoint_path=db,
        memory_path=None,
        settings=AgentSettings(),
    )
    assert parent.run_sync("delegate", thread_id="p").final_text == "parent done"
    other = Agent(model=ScriptedModel([text("alone")]), checkpoint_path=db, memory_path=None,
                  settings=AgentSettings())  # fmt: skip
    assert other.run_sync("alone", thread_id="q").status == "completed"
    return ["--db", str(db)], "p.c1.0"


def test_runs_indents_a_child_under_its_parent(
    tree: tuple[list[str], str], capsys: pytest.CaptureFixture[str]
) -> None:
    db, child = tree
    assert main(["runs", *db]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["q", "p", "└"]
    assert lines[2].startswith(f"└ {child}  completed  say hi")
    assert lines[2].endswith("(child at c1.0)")
    assert main(["runs", *db, "--json"]) == 0
    rows = {r["thread_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert (rows[child]["origin"], rows[child]["parent_thread_id"]) == ("child", "p")
    assert (rows[child]["parent_iteration"], rows[child]["parent_call_id"]) == (1, "c1.0")


def test_show_and_history_name_the_parent_and_the_children(
    tree: tuple[list[str], str], capsys: pytest.CaptureFixture[str]
) -> None:
    db, child = tree
    assert main(["show", "p", *db]) == 0
    assert f"child run {child} at call c1.0 (completed)" in capsys.readouterr().out
    assert main(["show", child, *db]) == 0
    assert "child of p at call c1.0 (completed)" in capsys.readouterr().out
    assert main(["show", child, *db, "--json"]) == 0
    family = json.loads(capsys.readouterr().out)["family"]
    assert family["parent"] == PARENT_STEP
    assert main(["history", "p", *db]) == 0
    assert capsys.readouterr().out.startswith(f"child run {child} at call c1.0 (completed)\n")
    assert main(["history", child, *db]) == 0
    assert capsys.readouterr().out.startswith("child of p at call c1.0 (completed)\n")


def test_the_export_links_parent_and_children(
    tree: tuple[list[str], str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, child = tree
    page = tmp_path / "p.html"
    assert main(["export", "p", *db, "--html", str(page)]) == 0
    assert f"<th>Children</th><td><code>{child}</code> at call c1.0 (completed)" in (
        page.read_text()
    )
    assert main(["export", child, *db, "--html", str(page)]) == 0
    assert "<th>Parent</th><td><code>p</code> at call c1.0 (completed)" in page.read_text()


def test_history_json_has_the_family_as_show_does(
    tree: tuple[list[str], str], capsys: pytest.CaptureFixture[str]
) -> None:
    db, child = tree
    for thread in ("p", child, "q"):
        assert main(["show", thread, *db, "--json"]) == 0
        shown = json.loads(capsys.readouterr().out)["family"]
        assert main(["history", thread, *db, "--json"]) == 0
        history = json.loads(capsys.readouterr().out)
        assert history["thread_id"] == thread
        assert history["family"] == shown
        assert history["unread"] is None  # the engine's own pipeline reads all of it
        assert [c["stage"] for c in history["checkpoints"]][:2] == ["input", "start"]
    assert main(["history", "p", *db, "--json"]) == 0
    family = json.loads(capsys.readouterr().out)["family"]
    assert family == {
        "parent": None,
        "children": [
            {"thread_id": child, "status": "completed", "iteration": 1, "call_id": "c1.0"}
        ],
    }
    assert main(["history", child, *db, "--json"]) == 0
    family = json.loads(capsys.readouterr().out)["family"]
    assert family["parent"] == PARENT_STEP
    assert family["children"] == []
