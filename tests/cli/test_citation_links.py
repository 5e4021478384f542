"""The CLI shows the answer's cited sources: OSC 8 links on a terminal, plain paths otherwise."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ai_agent.cli import main
from ai_agent.tools.builtin.notes import note_id
from tests.tools.notes_folder import notes_folder

TIDES = note_id("tides.md")
OSC8 = "\x1b]8;;"


@pytest.fixture
def notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = notes_folder(tmp_path, ("tides.md",))
    monkeypatch.setenv("MAMBA_TOOL_CONFIG__NOTES__FOLDER", str(root))
    monkeypatch.setenv("MAMBA_TOOL_CONFIG__NOTES__MIN_CHUNK_CHARS", "0")
    return root


def script(tmp_path: Path, answer: str) -> str:
    search = {"name": "find_similar", "args": {"queries": ["high tide"]}}
    path = tmp_path / "script.json"
    path.write_text(json.dumps([{"tool_calls": [search]}, {"text": answer}]))
    return f"scripted:{path}"


def run(tmp_path: Path, answer: str, *options: str) -> list[str]:
    argv = ["when is high tide?", "--model", script(tmp_path, answer), "--tools", "find_similar"]
    return [*argv, "--db", str(tmp_path / "runs.sqlite"), "--quiet", "--no-stream", *options]


def test_links_always_makes_markers_and_chips_clickable(
    notes: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(run(tmp_path, f"Twice a day [{TIDES}].", "--links", "always")) == 0
    out = capsys.readouterr().out
    uri = (notes / "tides.md").resolve().as_uri()
    link = f"{OSC8}{uri}\x1b\\"
    assert f"Twice a day [{link}{TIDES}{OSC8}\x1b\\]." in out
    assert f"Sources:\n  [{TIDES}] {link}tides.md #Tides{OSC8}\x1b\\" in out


def test_not_a_terminal_gets_plain_paths(
    notes: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(run(tmp_path, f"Twice a day [{TIDES}].")) == 0  # auto, and stdout is captured
    out = capsys.readouterr().out
    assert "\x1b" not in out
    where = str((notes / "tides.md").resolve())
    assert out.endswith(f"Twice a day [{TIDES}].\nSources:\n  [{TIDES}] tides.md #Tides  {where}\n")


def test_a_terminal_gets_links_unless_dumb_or_told_never(
    notes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ai_agent.cli import _links

    class Tty:
        def isatty(self) -> bool:
            return True

    monkeypatch.setenv("TERM", "xterm-256color")
    assert _links.links_wanted("auto", Tty())  # type: ignore[arg-type]
    assert not _links.links_wanted("never", Tty())  # type: ignore[arg-type]
    monkeypatch.setenv("TERM", "dumb")
    assert not _links.links_wanted("auto", Tty())  # type: ignore[arg-type]
    assert main(run(tmp_path, f"Twice [{TIDES}].", "--links", "never")) == 0
    assert "\x1b" not in capsys.readouterr().out


def test_show_renders_a_stored_runs_sources(
    notes: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*run(tmp_path, f"Twice a day [{TIDES}]."), "--json"]) == 0
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert [c["id"] for c in result["citations"]] == [TIDES]
    argv = ["show", result["thread_id"], "--db", str(tmp_path / "runs.sqlite"), "--links", "always"]
    assert main(argv) == 0
    assert f"[{TIDES}] {OSC8}" in capsys.readouterr().out


def test_a_hostile_source_cannot_write_its_own_escape_sequence() -> None:
    from ai_agent.cli._links import format_sources, linked_answer

    evil = {
        "id": "n1\x1b]8;;http://evil\x1b\\",
        "path": "x\x1b[2J.md",
        "section": None,
        "uri": "https://ok.example/x",
    }
    shown = format_sources([evil], links=True)
    assert shown.count("\x1b") == 4  # the one link's opening and closing (two each), no more
    assert "\\x1b[2J" in shown  # the path's escape is shown, not run
    unsafe = dict(evil, uri="javascript:alert(1)")
    assert "\x1b" not in format_sources([unsafe], links=True)
    assert linked_answer("see [n1]", [unsafe]) == "see [n1]"
