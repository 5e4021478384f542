"""The README's first command, end to end: the CLI starts the real local model and runs a task.

Only the protocol is asserted (a real tool call reaches the tool, its result goes back to the
model, a final text comes out), not the small model's arithmetic or wording.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ai_agent.cli import main

pytestmark = pytest.mark.local_model


def test_calculator_task_through_the_local_backend(
    model_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AI_AGENT_MODEL_PATH", str(model_path))
    # The default 30 s per request is for people; on a loaded test machine the small model's
    # first answer can take longer, and this test is about the protocol, not the speed.
    monkeypatch.setenv("MAMBA_MODEL_BACKEND__TIMEOUT", "300")
    code = main(
        [
            "calc 19.5% of 349",
            "--tools",
            "calculator",
            "--backend",
            "local",
            "--json",
            "--db",
            "runs.sqlite",
        ]
    )
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert code == 0, result
    assert result["status"] == "completed"
    acts = [t for t in result["trace"] if t["stage"] == "act"]
    assert acts and acts[0]["tool"] == "calculator" and acts[0]["status"] == "ok"
    drafts = [t for t in result["trace"] if t["stage"] == "draft"]
    assert len(drafts) >= 2  # the tool's result went back to the model for another turn
    assert (result["final_text"] or "").strip()
    assert result["usage"]["prompt_tokens"] > 0  # the real server reports usage
