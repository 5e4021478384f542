"""Approve with edited arguments in the real console, in headless Chromium (Playwright).

The browser, the page fixture and the helpers are those of ``test_browser.py``: a real paused
run made by the CLI, the real ``ai-agent ui`` in a subprocess, Debian's chromium by its path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.console.browser import append, pause, playwright_api, script, serve, sign_in

EDITED = '{"path": "log.txt", "content": "edited\\n"}'


def test_approve_with_edited_arguments_and_see_the_run_complete_with_them(
    tmp_path: Path,
    page: Any,
) -> None:
    model = script(tmp_path, append("one\n"), {"text": "logged"})
    pause(model, "e1")
    with serve(model) as served:
        sign_in(page, served)
        item = page.locator('article.item[data-thread="e1"]')
        item.locator("details.edit summary").click()
        editor = item.locator("textarea.args-editor")
        playwright_api.expect(editor).to_have_value(
            '{\n  "content": "one\\n",\n  "path": "log.txt"\n}'
        )
        # A mistake first: shown next to the editor, and what was typed is still there.
        editor.fill('{"path": "log.txt", "content": 7}')
        item.locator("button.approve-edited").click()
        problem = page.locator('article.item[data-thread="e1"] p.edit-problem')
        playwright_api.expect(problem).to_contain_text("edit_args.c1.0.content")
        editor = page.locator('article.item[data-thread="e1"] textarea.args-editor')
        playwright_api.expect(editor).to_have_value('{"path": "log.txt", "content": 7}')
        editor.fill(EDITED)
        page.locator('article.item[data-thread="e1"] button.approve-edited').click()
        playwright_api.expect(page).to_have_url(f"{served.base}/runs/e1?answered=1")
        playwright_api.expect(page.locator("#plan-1 .plan-status")).to_have_text("done")
        playwright_api.expect(page.locator("#final")).to_have_text("logged")
        edited = page.locator("table.tool-calls pre.edited-from")
        playwright_api.expect(edited).to_contain_text("the model asked for")
        playwright_api.expect(edited).to_contain_text("one")
    assert Path("log.txt").read_text() == "edited\n"  # the edited call ran, and only it
