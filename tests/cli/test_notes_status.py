"""The CLI's plan line before a turn's tool phase and its status line for each tool run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ai_agent.cli import main
from tests.tools.notes_folder import notes_folder


@pytest.fixture
def notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = notes_folder(tmp_path, ("tides.md",))
    monkeypatch.setenv("MAMBA_TOOL_CONFIG__NOTES__FOLDER", str(root))
    return root


def run(tmp_path: Path, *turns: dict[str, Any]) -> list[str]:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(list(turns)))
    return [
        "when is high tide?",
        *("--model", f"scripted:{path}", "--tools", "notes,calculator"),
        *("--db", str(tmp_path / "runs.sqlite"), "--stream"),
    ]


def test_a_plan_line_then_a_status_line_per_tool_run(
    notes: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    search = {"name": "find_similar", "args": {"queries": ["high tide", "moon"], "k": 5}}
    read = {"name": "read_note", "args": {"path": "tides.md", "section": "Tides"}}
    argv = run(
        tmp_path,
        {"text": "I will search your notes first.\nThen read.", "tool_calls": [search]},
        {"tool_calls": [read]},
        {"tool_calls": [{"name": "calculator", "args": {"expression": "2*12"}}]},
        {"text": "Twice a day."},
    )
    assert main(argv) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "] plan: " in line or "] act: " in line]
    assert lines[:3] == [
        "[1] plan: I will search your notes first.",
        "[1] act: Searching the notes... K=5 for 'high tide', 'moon'",
        "[1] act: find_similar ok (" + lines[2].split("(", 1)[1],
    ]
    assert lines[3:5] == ["[2] plan: read_note", "[2] act: Reading 'tides.md' #Tides..."]
    # A tool without a status of its own is "running NAME".
    assert lines[6:8] == ["[3] plan: calculator", "[3] act: running calculator"]


def test_the_default_k_is_the_settings_and_hostile_words_are_escaped(
    notes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MAMBA_TOOL_CONFIG__NOTES__K", "7")
    search = {"name": "find_similar", "args": {"queries": ["tide\x1b[2J"]}}
    argv = run(tmp_path, {"text": "plan\x1b]0;owned\x07", "tool_calls": [search]}, {"text": "ok"})
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "\x1b" not in err
    assert "[1] plan: plan\\x1b]0;owned\\x07" in err
    assert "[1] act: Searching the notes... K=7 for 'tide\\\\x1b[2J'" in err  # its repr
