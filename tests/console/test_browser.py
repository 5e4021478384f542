"""The console as a person uses it: the real ``ai-agent ui`` in headless Chromium (Playwright).

Debian's chromium is launched by its executable path (no browser download). Each test makes a
real paused run with the CLI and a scripted model in the test's directory, starts the console
on it in a subprocess (its worker polls every 0.2 s), and drives the pages. Waits are
Playwright's: they poll the page until what a person would see is there, up to a limit.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from tests.console.browser import CLI, append, pause, playwright_api, script, serve, sign_in

HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)> \x1b[2K\rrm -rf ~ \u202eevil"


def test_approve_in_the_inbox_and_see_the_run_complete(tmp_path: Path, page: Any) -> None:
    model = script(tmp_path, append("one\n"), {"text": "logged"})
    pause(model, "b1")
    with serve(model) as served:
        sign_in(page, served)
        item = page.locator('article.item[data-thread="b1"]')
        playwright_api.expect(item.locator("pre.preview")).to_contain_text("+one")
        item.locator("select[name=scope]").select_option("args")
        item.locator("button.approve").click()
        playwright_api.expect(page).to_have_url(f"{served.base}/runs/b1?answered=1")
        playwright_api.expect(page.locator("#status")).to_have_text("completed")
        playwright_api.expect(page.locator("#final")).to_have_text("logged")
        playwright_api.expect(page.locator("#plan-1 .plan-status")).to_have_text("done")
    assert Path("log.txt").read_text() == "one\n"


def test_reject_with_a_reason_the_model_receives(tmp_path: Path, page: Any) -> None:
    model = script(tmp_path, append("one\n"), {"text": "fine, not today"})
    pause(model, "b2")
    with serve(model) as served:
        sign_in(page, served)
        item = page.locator('article.item[data-thread="b2"]')
        item.locator("section.call form.answer:not(.edit-answer) textarea").fill(
            "the log is frozen until Monday"
        )
        item.locator("section.call button.reject").click()
        playwright_api.expect(page.locator("#status")).to_have_text("completed")
        plan = page.locator("li.message.kind-plan")
        playwright_api.expect(plan).to_contain_text("the log is frozen until Monday")
        outcome = page.locator("table.tool-calls .tool-status")
        playwright_api.expect(outcome).to_have_text("skipped")
    assert not Path("log.txt").exists()


def test_a_page_without_the_token_is_forbidden(tmp_path: Path, page: Any) -> None:
    model = script(tmp_path, append("one\n"))
    pause(model, "b3")
    with serve(model) as served:
        response = page.goto(f"{served.base}/inbox")
        assert response is not None and response.status == 403
        assert "the token was missing or wrong" in page.content()
        assert page.goto(f"{served.base}/runs/b3").status == 403


def test_markup_and_escape_sequences_render_inert(tmp_path: Path, page: Any) -> None:
    model = script(tmp_path, append(HOSTILE), {"text": HOSTILE})
    pause(model, "b4", task=f"hostile {HOSTILE}")
    with serve(model) as served:
        sign_in(page, served)
        preview = page.locator("pre.preview")
        playwright_api.expect(preview).to_contain_text("<script>alert(1)</script><img src=x")
        playwright_api.expect(preview).to_contain_text("<img src=x onerror=alert(2)> \\x1b[2K\\r")
        playwright_api.expect(preview).to_contain_text("rm -rf ~ \\u202eevil")
        page.locator("button.approve").click()
        final = page.locator("#final")
        playwright_api.expect(final).to_have_text(
            "<script>alert(1)</script><img src=x onerror=alert(2)> \\x1b[2K\\rrm -rf ~ \\u202eevil"
        )
        assert page.locator("img").count() == 0
        assert page.locator("script").count() == 1  # the console's own
        page.goto(f"{served.base}/runs")
        playwright_api.expect(page.locator('tr[data-thread="b4"] .task')).to_contain_text(
            "hostile <script>"
        )


def test_the_inbox_works_from_the_keyboard(tmp_path: Path, page: Any) -> None:
    model = script(tmp_path, append("k\n"), {"text": "done"})
    pause(model, "k1")
    pause(model, "k2")
    with serve(model) as served:
        sign_in(page, served)
        items = page.locator("article.item")
        playwright_api.expect(items).to_have_count(2)
        page.keyboard.press("j")
        playwright_api.expect(items.nth(0)).to_be_focused()
        page.keyboard.press("j")
        playwright_api.expect(items.nth(1)).to_be_focused()
        page.keyboard.press("k")
        playwright_api.expect(items.nth(0)).to_be_focused()
        page.keyboard.press("ArrowDown")
        second = items.nth(1).get_attribute("data-thread")
        page.keyboard.press("i")  # the reason box of the focused run
        reason = items.nth(1).locator("section.call form.answer:not(.edit-answer) textarea")
        playwright_api.expect(reason).to_be_focused()
        page.keyboard.type("jk typed, not navigated")
        page.keyboard.press("Escape")
        playwright_api.expect(items.nth(1)).to_be_focused()
        page.keyboard.press("a")  # approve the focused run's call
        playwright_api.expect(page).to_have_url(f"{served.base}/runs/{second}?answered=1")
        playwright_api.expect(page.locator("#status")).to_have_text("completed")
        playwright_api.expect(page.locator("li.message.kind-plan")).to_contain_text(
            "jk typed, not navigated"
        )


def test_a_browser_and_a_cli_resuming_at_once_leave_one_winner(tmp_path: Path, page: Any) -> None:
    model = script(tmp_path, append("once\n"), {"text": "logged"})
    pause(model, "race")
    resume = [*CLI, "resume", "race", "--approve", "c1.0"]
    with serve(model) as served:
        sign_in(page, served)
        cli = subprocess.Popen(
            [*resume, "--model", model, "--tools", "files", "--quiet"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        page.locator('article.item[data-thread="race"] button.approve').click()
        _, cli_err = cli.communicate(timeout=120)
        if page.url.startswith(f"{served.base}/runs/race"):  # the browser's plan was queued
            status = page.locator("#plan-1 .plan-status")
            playwright_api.expect(status).not_to_have_text("queued")
            playwright_api.expect(status).not_to_have_text("claimed")
            browser_won = status.text_content() == "done"
            loser = cli_err if browser_won else page.locator("#plan-1 .plan-error").text_content()
        else:  # refused at once: the run was no longer waiting for that gate
            browser_won = False
            loser = page.locator("p.problem").text_content()
        page.goto(f"{served.base}/runs/race")
        playwright_api.expect(page.locator("#status")).to_have_text("completed")
    assert Path("log.txt").read_text() == "once\n"  # the approved call ran once
    assert (cli.returncode == 0) != browser_won  # one winner
    assert loser  # and the other was told, in words
    assert "Traceback" not in (loser or "") and "Traceback" not in cli_err
