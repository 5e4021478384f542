"""Always-allow rules in the real console, in headless Chromium (Playwright).

Set a rule while approving, see the next matching call (another run, made by the CLI) run
unasked, revoke the rule on the Rules page, and see the gate ask again.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from ai_agent.cli import EXIT
from tests.console.browser import CLI, append, pause, playwright_api, script, serve, sign_in


def run(model: str, thread: str) -> int:
    """A run of the same task by the CLI in its own process; its exit code."""
    argv = ["log it", "--tools", "files", "--model", model, "--thread-id", thread, "--quiet"]
    return subprocess.run([*CLI, *argv], capture_output=True, text=True, check=False).returncode


def test_a_rule_lets_the_next_matching_call_run_unasked_until_it_is_revoked(
    tmp_path: Path,
    page: Any,
) -> None:
    model = script(tmp_path, append("same\n"), {"text": "logged"})
    pause(model, "first")
    with serve(model) as served:
        sign_in(page, served)
        item = page.locator('article.item[data-thread="first"]')
        item.locator("select.always").first.select_option("args")
        item.locator("button.approve").click()
        playwright_api.expect(page).to_have_url(f"{served.base}/runs/first?answered=1")
        playwright_api.expect(page.locator("#plan-1 .plan-status")).to_have_text("done")
        page.locator('nav a[href="/rules"]').click()
        rule = page.locator("tr.rule").first
        playwright_api.expect(rule.locator(".allows")).to_contain_text(
            "append_file with these exact arguments, in any run"
        )
        # The same call in a second run: it runs without a gate.
        assert run(model, "second") == EXIT["completed"]
        page.goto(f"{served.base}/runs/second")
        playwright_api.expect(page.locator("#status")).to_have_text("completed")
        playwright_api.expect(page.locator("table.timeline")).to_contain_text("allowed by rule 1")
        # Revoked: the third run waits for a person again.
        page.goto(f"{served.base}/rules")
        page.locator("tr.rule button.revoke").click()
        playwright_api.expect(page.locator("p.queued")).to_contain_text("Revoked rule 1")
        playwright_api.expect(page.locator("tr.rule.revoked")).to_have_count(1)
        assert run(model, "third") == EXIT["paused"]
        page.goto(f"{served.base}/inbox")
        playwright_api.expect(page.locator('article.item[data-thread="third"]')).to_be_visible()
    assert Path("log.txt").read_text() == "same\nsame\n"
