"""``show``, ``history`` and ``export`` read a run of your pipeline with ``--pipeline``.

With it, the run's own nodes and state fields are read (shown, summarized, exported); without
it the run is still read with the engine's stages, and a line says what ``--pipeline`` shows.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ai_agent.cli import main

MODULE = """
import operator
from typing import Annotated

from typing_extensions import TypedDict

from ai_agent import PipelineBuilder


class Reviewed(TypedDict, total=False):
    reviews: Annotated[list[str], operator.add]


def review(state):
    return {"reviews": ["cycle " + str(state["iteration"]) + " \\x1b[31mred\\x1b[0m"]}


pipeline = PipelineBuilder(state=Reviewed).add_node("review", review, after="draft")
"""
NOTE = (
    "made by a pipeline of its own (node review; state field reviews), read here with the "
    "engine's stages: give its --pipeline MODULE:NAME to show them"
)


@pytest.fixture
def reviewed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> list[str]:
    """A run ``r1`` of the ``review`` pipeline; the --db options to read it."""
    (tmp_path / "flows_reading.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "draft"}]))
    db = ["--db", str(tmp_path / "c.sqlite")]
    argv = ["run", "the report", *db, "--model", f"scripted:{script}", "--no-stream"]
    assert main([*argv, "--pipeline", "flows_reading:pipeline", "--thread-id", "r1"]) == 0
    capsys.readouterr()
    return db


PIPELINE = ["--pipeline", "flows_reading:pipeline"]


def test_show_reads_the_fields_with_the_pipeline_and_says_so_without(
    reviewed: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", "r1", *reviewed, *PIPELINE]) == 0
    out = capsys.readouterr().out
    # The field's value is shown, its escape sequence made visible (not sent to the terminal).
    assert 'reviews: ["cycle 1 \\u001b[31mred\\u001b[0m"]' in out.splitlines()
    assert "\x1b" not in out and NOTE not in out
    assert main(["show", "r1", *reviewed]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1] == NOTE and "reviews:" not in out
    assert out.splitlines()[0].startswith("thread r1: completed")

    assert main(["show", "r1", *reviewed, *PIPELINE, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["fields"] == {"reviews": ["cycle 1 \x1b[31mred\x1b[0m"]}
    assert shown["unread"] is None
    assert main(["show", "r1", *reviewed, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["fields"] == {}
    assert shown["unread"] == {"nodes": ["review"], "fields": ["reviews"], "note": NOTE}
    assert shown["status"] == "completed" and shown["final_text"] == "draft"


def test_history_names_the_node_and_its_changes_with_the_pipeline(
    reviewed: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["history", "r1", *reviewed, *PIPELINE]) == 0
    lines = capsys.readouterr().out.splitlines()
    review = next(line for line in lines if line.split()[:2] == ["3", "review"])
    assert review.endswith('reviews ["cycle 1 \\\\u001b[31mred\\\\u001b[0m"]')
    assert main(["history", "r1", *reviewed]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == NOTE
    # Without the pipeline its node's step is there, unnamed, and its change unread.
    assert next(line for line in lines if line.startswith("3 ")).split()[1] == "start"

    assert main(["history", "r1", *reviewed, *PIPELINE, "--json"]) == 0
    read = json.loads(capsys.readouterr().out)
    assert read["unread"] is None
    assert [c["stage"] for c in read["checkpoints"]][3:6] == ["draft", "review", "decide"]
    assert main(["history", "r1", *reviewed, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["unread"]["nodes"] == ["review"]


def test_export_shows_the_fields_with_the_pipeline_and_the_note_without(
    reviewed: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "r1.html"
    assert main(["export", "r1", *reviewed, *PIPELINE, "--html", str(page)]) == 0
    text = page.read_text()
    assert "<th><code>reviews</code></th>" in text
    assert "cycle 1 \\u001b[31mred\\u001b[0m" in text and "\x1b" not in text
    assert "read here with the engine" not in text
    assert main(["export", "r1", *reviewed, "--html", str(page)]) == 0
    text = page.read_text()
    assert "<th>Pipeline</th><td>made by a pipeline of its own (node review; " in text
    assert "<th><code>reviews</code></th>" not in text


def test_a_pipeline_that_cannot_be_loaded_is_a_usage_error(
    reviewed: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    for command in (["show", "r1"], ["history", "r1"], ["export", "r1", "--html", "x.html"]):
        assert main([*command, *reviewed, "--pipeline", "flows_reading:nothing"]) == 2
        assert "--pipeline: " in capsys.readouterr().err
