"""The debugging commands: history, show --checkpoint, fork, replay, graph, export, prune."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ai_agent.cli import EXIT, main

TURNS = [
    {
        "tool_calls": [{"name": "calculator", "args": {"expression": "6*7"}}],
        "usage": {"prompt_tokens": 30, "completion_tokens": 4},
    },
    {"text": "6*7 = 42"},
]


@pytest.fixture
def setup(tmp_path: Path) -> tuple[list[str], list[str]]:
    """A stored run ``t1``; returns (database options, model options)."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps(TURNS))
    db = ["--db", str(tmp_path / "c.sqlite")]
    model = ["--model", f"scripted:{script}", "--tools", "calculator", "--quiet"]
    code = main(["run", "what is 6*7", "--thread-id", "t1", *db, *model])
    assert code == EXIT["completed"]
    return db, model


def out_of(capsys: pytest.CaptureFixture[str]) -> str:
    return capsys.readouterr().out


def test_history_prints_checkpoints_and_json(
    setup: tuple[list[str], list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, _ = setup
    capsys.readouterr()
    assert main(["history", "t1", *db]) == 0
    lines = out_of(capsys).splitlines()
    assert lines[0].split() == ["step", "stage", "time", "checkpoint", "what", "changed"]
    assert lines[1].split()[:2] == ["-1", "input"]
    draft = next(line for line in lines if line.split()[:2] == ["2", "draft"])
    assert 'model asks for calculator({"expression": "6*7"})' in draft
    assert main(["history", "t1", *db, "--json"]) == 0
    entries = json.loads(out_of(capsys))["checkpoints"]
    assert [e["stage"] for e in entries][-2:] == ["finalize", "persist"]
    assert main(["history", "ghost", *db]) == EXIT["usage"]


def test_show_prints_a_timeline_with_tokens(
    setup: tuple[list[str], list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, _ = setup
    capsys.readouterr()
    assert main(["show", "t1", *db]) == 0
    out = out_of(capsys)
    lines = out.splitlines()
    # 34 reported by the server for the first request; the second reported none, so its tokens
    # are the engine's calibrated estimate (107: the tool message's id is the engine's, c1.0, and
    # the chat template's rendering of the tool turn, template_tool_turn_tokens, is counted).
    assert lines[0] == "thread t1: completed after 2 iteration(s), 141 tokens in 2 model request(s)"
    assert lines[1].split() == [
        "step",
        "stage",
        "iter",
        "ms",
        "tokens",
        "tool",
        "status",
        "gate",
        "detail",
    ]
    draft = next(line for line in lines if line.split()[:2] == ["2", "draft"])
    assert draft.split()[4] == "34"
    assert "6*7 = 42" in out.splitlines()[-1]

    main(["history", "t1", *db, "--json"])
    act = next(e for e in json.loads(out_of(capsys))["checkpoints"] if e["stage"] == "act")
    assert main(["show", "t1", *db, "--checkpoint", act["checkpoint_id"]]) == 0
    lines = out_of(capsys).splitlines()
    assert lines[1] == f"at checkpoint {act['checkpoint_id']} (step 5): next reflect"
    assert lines[-1].split()[:2] == ["5", "act"]
    assert main(["show", "t1", *db, "--checkpoint", "nope"]) == EXIT["usage"]


def test_replay_modes_and_exit_codes(
    setup: tuple[list[str], list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    db, model = setup
    capsys.readouterr()
    assert main(["replay", "t1", *db, *model]) == EXIT["completed"]
    assert out_of(capsys).strip() == "6*7 = 42"
    code = main(["replay", "t1", *db, *model, "--json"])
    data = json.loads(out_of(capsys))
    assert (code, data["divergence"], data["final_text"]) == (0, None, "6*7 = 42")

    code = main(["replay", "t1", *db, *model, "--system-prompt", "Be brief."])
    out = out_of(capsys)
    assert code == EXIT["diverged"] == 6
    assert "diverged at step 2 (draft)" in out
    assert "+[0] system: Be brief." in out

    assert main(["replay", "t1", *db, *model, "--live"]) == EXIT["completed"]
    assert main(["replay", "t1", *db, *model, "--live-after"]) == EXIT["completed"]
    # Without --model, the replay is of the recorded model: offline, nothing to tell it.
    assert main(["replay", "t1", *db]) == EXIT["completed"]
    assert out_of(capsys).strip().endswith("6*7 = 42")
    # A model named on the command line is what the requests are compared as coming from.
    code = main(["replay", "t1", *db, "--model", "another-model"])
    assert code == EXIT["diverged"]
    assert '+params: {"backend": "openai", "model": "another-model"' in out_of(capsys)
    assert main(["runs", *db]) == 0
    assert out_of(capsys).count("(replay of t1)") == 7


def test_fork_graph_export_and_prune(
    setup: tuple[list[str], list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, model = setup
    capsys.readouterr()
    main(["history", "t1", *db, "--json"])
    entries: list[dict[str, Any]] = json.loads(out_of(capsys))["checkpoints"]
    recall = next(e for e in entries if e["stage"] == "recall")["checkpoint_id"]

    assert main(["fork", "t1", recall, *db]) == 0
    fork = out_of(capsys).strip()
    assert main(["resume", fork, *db, *model]) == EXIT["completed"]
    assert out_of(capsys).strip() == "6*7 = 42"
    assert main(["fork", "t1", recall, *db, "--json", "--update", '{"reflection": "x"}']) == 0
    assert json.loads(out_of(capsys))["parent_thread_id"] == "t1"
    assert main(["fork", "t1", recall, *db, "--update", "{nope"]) == EXIT["usage"]
    assert main(["fork", "t1", recall, *db, "--update", "[1]"]) == EXIT["usage"]
    assert main(["fork", "t1", recall, *db, "--update", '{"nope": 1}']) == EXIT["usage"]
    capsys.readouterr()
    # A key given twice meant its last value without a word; 5,000 levels were a traceback.
    twice = '{"reflection": "keep", "reflection": "x"}'
    assert main(["fork", "t1", recall, *db, "--update", twice]) == EXIT["usage"]
    assert "the key 'reflection' is given twice in one object" in capsys.readouterr().err
    deep = '{"reflection": ' + "[" * 5000 + "]" * 5000 + "}"
    assert main(["fork", "t1", recall, *db, "--update", deep]) == EXIT["usage"]
    assert "--update is nested too deeply; flatten it" in capsys.readouterr().err

    assert main(["graph"]) == 0
    assert "gate -.-> draft;" in out_of(capsys)
    assert main(["graph", "--thread", "t1", *db]) == 0
    assert 'draft("draft x2"):::visited' in out_of(capsys)

    page = tmp_path / "t1.html"
    assert main(["export", "t1", *db, "--html", str(page)]) == 0
    assert out_of(capsys).strip() == str(page)
    assert "6*7 = 42" in page.read_text()
    assert main(["export", "t1", *db, "--html", str(page), "--json"]) == 0
    assert json.loads(out_of(capsys))["html"] == str(page)

    assert main(["prune", "t1", *db]) == 0
    # t1 has forks, whose replays need its recording: its calls stay.
    assert out_of(capsys).startswith("pruned 1 run(s): 12 checkpoint(s) and 0 recorded call(s)")
    assert main(["prune", "--keep-last", "0", *db, "--json", "--no-vacuum"]) == 0
    assert json.loads(out_of(capsys))["vacuumed"] is False
    assert main(["prune", *db]) == EXIT["usage"]


def test_replay_in_a_real_process(setup: tuple[list[str], list[str]]) -> None:
    db, model = setup
    done = subprocess.run(
        [sys.executable, "-m", "ai_agent.cli", "replay", "t1", *db, *model, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["final_text"] == "6*7 = 42"
