"""The console's regression-test download, toolsmaker review and storage page, in Chromium.

The same set-up as test_browser.py (whose fixtures and helpers this reuses): real runs made by
the CLI in their own processes, the real ``ai-agent ui`` in a subprocess, Debian's chromium
driven by Playwright.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

from tests.console.browser import CLI, pause, playwright_api, script, serve, sign_in

PYTEST_ARGS = ("-q", "-p", "no:randomly", "-p", "no:cacheprovider", "--no-cov")


def completed(model: str, thread: str, task: str = "log it") -> None:
    argv = [task, "--tools", "files", "--model", model, "--thread-id", thread, "--quiet"]
    done = subprocess.run([*CLI, *argv, "--yes"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_the_run_view_downloads_a_regression_test_that_passes(
    tmp_path: Path,
    page: Any,
) -> None:
    model = script(
        tmp_path,
        {"tool_calls": [{"name": "list_directory", "args": {"path": "."}}]},
        {"text": "listed"},
    )
    completed(model, "dl-1")
    with serve(model) as served:
        sign_in(page, served)
        page.goto(f"{served.base}/runs/dl-1")
        with page.expect_download() as waiting:
            page.locator("#regression-test").click()
        download = waiting.value
        assert download.suggested_filename == "test_run_dl_1.zip"
        saved = tmp_path / "dl.zip"
        download.save_as(saved)
    folder = tmp_path / "regress"
    with zipfile.ZipFile(io.BytesIO(saved.read_bytes())) as archive:
        archive.extractall(folder)
    assert sorted(p.name for p in folder.iterdir()) == [
        "test_run_dl_1.py",
        "test_run_dl_1.recording.json",
    ]
    assert json.loads((folder / "test_run_dl_1.recording.json").read_text())["thread_id"] == "dl-1"
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", *PYTEST_ARGS, "test_run_dl_1.py"],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ},
        timeout=300,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr


def test_storage_previews_a_prune_and_prunes_on_confirmation(
    tmp_path: Path,
    page: Any,
) -> None:
    listing = {"tool_calls": [{"name": "list_directory", "args": {"path": "."}}]}
    model = script(tmp_path, listing, {"text": "listed"})
    completed(model, "st-done")
    writing = script(
        tmp_path,
        {"tool_calls": [{"name": "append_file", "args": {"path": "l.txt", "content": "x"}}]},
    )
    pause(writing, "st-paused")
    with serve(model) as served:
        sign_in(page, served)
        page.get_by_role("link", name="Storage").click()
        playwright_api.expect(page.locator("#run-count")).to_have_text("2")
        playwright_api.expect(page.locator("#largest tr[data-thread=st-done]")).to_be_visible()
        page.locator("input[name=keep_last]").fill("0")
        page.get_by_role("button", name="Preview").click()
        preview = page.locator("#preview")
        playwright_api.expect(preview.locator(".to-prune li")).to_have_count(1)
        playwright_api.expect(preview.locator(".to-prune li")).to_contain_text("st-done")
        playwright_api.expect(preview.locator(".kept li")).to_contain_text("st-paused")
        page.get_by_role("button", name="Prune these 1 run(s)").click()
        playwright_api.expect(page.locator("#done")).to_contain_text("pruned 1 run(s)")
    history = subprocess.run(
        [*CLI, "history", "st-done", "--json"], capture_output=True, text=True, check=False
    )
    assert history.returncode == 0, history.stderr
    assert (
        len(json.loads(history.stdout)["checkpoints"]) == 1
    )  # pruned: its latest checkpoint stays
    paused = subprocess.run(
        [*CLI, "history", "st-paused", "--json"], capture_output=True, text=True, check=False
    )
    assert len(json.loads(paused.stdout)["checkpoints"]) > 1  # spared


def test_a_generated_tool_is_reviewed_approved_and_activated_in_the_browser(
    tmp_path: Path,
    page: Any,
) -> None:
    from ai_agent.tools.maker import ToolsmakerRegistry
    from tests.console.test_toolsmaker import INTENT

    maker = ToolsmakerRegistry(".agents/toolsmaker")
    maker.build_from_intent(INTENT)
    model = script(tmp_path, {"text": "hi"})
    completed(model, "t-run")  # the console serves a database: this makes it
    with serve(model) as served:
        sign_in(page, served)
        page.get_by_role("link", name="Tools").click()
        item = page.locator('article.tool[data-tool="shout@1"]')
        playwright_api.expect(item.locator("pre.code")).to_contain_text(
            "# </pre><script>alert(1)</script>\\x1b[2K"
        )
        playwright_api.expect(page.locator("#audit")).to_contain_text("Audit log intact")
        item.get_by_role("button", name="Approve").click()
        playwright_api.expect(page.locator("#done")).to_have_text("approved shout@1")
        row = page.locator('#versions tr[data-tool="shout@1"]')
        row.get_by_role("button", name="Activate").click()
        playwright_api.expect(page.locator("#done")).to_contain_text("activated shout@1")
        playwright_api.expect(row.locator(".tool-status")).to_have_text("activated (active)")
        playwright_api.expect(page.locator("#audit")).to_contain_text("Audit log intact")
    assert maker.active_versions() == {"shout": 1}
    assert maker.record("shout", 1).history[-1]["by"] == "console"
