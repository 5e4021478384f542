"""``ai-agent eval --backend local``: recorded cases run again against the real local model.

A run is made with the real llama.cpp server (fixed seed, temperature as the local backend
sets it), kept as a case by ``test-from-run``, and evaluated live: the model is asked again, the
calculator runs again. The server is deterministic for the same requests, so the same case is
the same; a copy whose recorded answer was different is reported as diverged, with the diff.
Each command is a real process.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ai_agent.cli import EXIT

# Three real-model runs of a few model calls each, on a machine whose cores may be shared.
pytestmark = [pytest.mark.local_model, pytest.mark.timeout(1800)]

CLI = [sys.executable, "-m", "ai_agent.cli"]


def cli(cwd: Path, env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *argv], cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=900
    )


def test_eval_against_the_local_model_finds_the_same_run_and_a_changed_answer(
    model_path: Path, tmp_path: Path
) -> None:
    # The default 30 s per request is for people; a loaded test machine is slower.
    env = {**os.environ, "AI_AGENT_MODEL_PATH": str(model_path)}
    env["MAMBA_MODEL_BACKEND__TIMEOUT"] = "300"
    argv = ["calc 6*7", "--tools", "calculator", "--backend", "local", "--db", "runs.sqlite"]
    made = cli(tmp_path, env, *argv, "--thread-id", "live-1", "--json")
    assert made.returncode == 0, made.stderr
    recorded: dict[str, Any] = json.loads(made.stdout)
    kept = cli(
        tmp_path,
        env,
        "test-from-run",
        "live-1",
        "--db",
        "runs.sqlite",
        "--out",
        "cases/test_same.py",
    )
    assert kept.returncode == 0, kept.stderr
    cases = tmp_path / "cases"
    changed = json.loads((cases / "test_same.recording.json").read_text())
    changed["expected"]["final_text"] = "an answer the model no longer gives"
    (cases / "test_changed.recording.json").write_text(json.dumps(changed))
    shutil.copy(cases / "test_same.py", cases / "test_changed.py")

    offline = cli(tmp_path, env, "eval", "cases", "--json")  # no model: the recording answers
    assert offline.returncode == EXIT["diverged"], offline.stderr
    assert [r["same"] for r in json.loads(offline.stdout)] == [False, True]

    live = cli(tmp_path, env, "eval", "cases", "--backend", "local", "--json")
    assert live.returncode == EXIT["diverged"], live.stderr
    reports: list[dict[str, Any]] = json.loads(live.stdout)
    assert [(r["case"], r["same"]) for r in reports] == [
        ("test_changed", False),
        ("test_same", True),
    ]
    assert reports[0]["where"] == "the final answer differs"
    assert "-an answer the model no longer gives" in reports[0]["detail"]
    assert reports[1]["final_text"] == recorded["final_text"]
