"""Time travel as a person does it: the real ``ai-agent ui`` in headless Chromium (Playwright).

Runs are made by the CLI in their own processes (a scripted model, the ``files`` tools); the
console is served in a subprocess with its worker polling every 0.2 s, as in test_browser.py.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from ai_agent.cli import EXIT
from tests.console.browser import CLI, append, pause, playwright_api, script, serve, sign_in

expect = playwright_api.expect


def complete(model: str, thread: str, task: str) -> None:
    """A run that completes, made by the CLI in its own process."""
    argv = [task, "--tools", "files", "--model", model, "--thread-id", thread, "--quiet"]
    done = subprocess.run([*CLI, *argv], capture_output=True, text=True, check=False)
    assert done.returncode == EXIT["completed"], done.stderr


def test_fork_at_the_gate_with_a_new_plan_and_see_the_fork_complete(
    tmp_path: Path,
    page: Any,
) -> None:
    model = script(tmp_path, append("one\n"), {"text": "logged"})
    pause(model, "t1")
    with serve(model) as served:
        sign_in(page, served)
        page.goto(f"{served.base}/runs/t1")
        picker = page.locator("form.picker select[name=id]")
        last = picker.locator("option").last.get_attribute("value")
        picker.select_option(last)
        page.locator("form.picker button").click()
        expect(page.locator("#next")).to_contain_text("paused at the gate")
        page.locator("form.fork-form textarea[name=plan]").fill('{"approve": ["*"]}')
        page.locator("form.fork-form button").click()
        expect(page.locator("#origin")).to_contain_text("Forked from t1")
        expect(page.locator("#status")).to_have_text("completed")
        expect(page.locator("#final")).to_have_text("logged")
        page.goto(f"{served.base}/runs/t1")
        expect(page.locator("#status")).to_have_text("paused")  # the original waits still
    assert Path("log.txt").read_text() == "one\n"


def test_replay_a_run_with_no_divergence(tmp_path: Path, page: Any) -> None:
    model = script(tmp_path, {"text": "all done"})
    complete(model, "r1", "finish up")
    with serve(model) as served:
        sign_in(page, served)
        page.goto(f"{served.base}/runs/r1")
        page.locator("form.replay-form button").click()
        expect(page.locator("#verdict")).to_contain_text("No divergence")
        expect(page.locator("#replay-status")).to_have_text("completed")


def test_replay_shows_where_and_how_a_run_diverges(
    tmp_path: Path,
    page: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = script(tmp_path, {"text": "all done"})
    complete(model, "r2", "finish up")
    # The console's Agent tells the model something else: its first request is not recorded.
    monkeypatch.setenv("MAMBA_SYSTEM_PROMPT", "Answer only in haiku.")
    with serve(model) as served:
        sign_in(page, served)
        page.goto(f"{served.base}/runs/r2")
        page.locator("form.replay-form button").click()
        expect(page.locator("#verdict")).to_contain_text("Diverged at step")
        expect(page.locator("#verdict")).to_contain_text("(draft)")
        expect(page.locator("#divergence")).to_contain_text("Answer only in haiku.")


def test_diff_two_runs(tmp_path: Path, page: Any) -> None:
    complete(script(tmp_path, {"text": "forty-two"}), "d1", "what is 6*7")
    complete(script(tmp_path, {"text": "six times seven"}), "d2", "what is 6*7")
    with serve(script(tmp_path, {"text": "unused"})) as served:
        sign_in(page, served)
        page.goto(f"{served.base}/runs/d1")
        page.locator("form.diff-form input[name=b]").fill("d2")
        page.locator("form.diff-form button").click()
        expect(page.locator("#diff-verdict")).to_have_text("Rows that differ are marked.")
        answer = page.locator("tr.differs", has_text="answer")
        expect(answer).to_contain_text("forty-two")
        expect(answer).to_contain_text("six times seven")
        expect(page.locator("tr.same", has_text="task")).to_contain_text("what is 6*7")
