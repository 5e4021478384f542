"""The console's Tools page shows a pending version's test results: failures first, inert."""

from __future__ import annotations

import json
import re
from typing import Any

from ai_agent.tools.maker import ToolsmakerRegistry
from tests.console.conftest import MakeAgent, tools_console
from tests.console.test_toolsmaker import Open, csrf_of

HOSTILE = (
    "class GeneratedTool:\n"
    "    def execute(self, text):\n"
    "        if text == 'fail':\n"
    "            raise ValueError('<img src=x onerror=alert(2)>\\x1b[31m')\n"
    "        return {'said': '</pre><script>alert(1)</script>' + text}\n"
)
INTENT: dict[str, Any] = {
    "name": "parrot",
    "purpose": "Repeat a text.",
    "inputs": {"text": "string"},
    "code": HOSTILE,
    "tests": [
        {"args": {"text": "a"}, "expect_error": "<img"},  # passes: it does not fail
        {"args": {"text": "fail"}, "expect_error": "onerror"},
        {"args": {"text": "b"}, "expect": {"said": "b"}},
    ],
}


def _items(section: str) -> list[tuple[str, str]]:
    """(status, example number) of each listed example, in page order."""
    return re.findall(r'<li class="test test-(\w+)" data-test="(\d+)"', section)


async def test_the_tools_page_shows_test_results_failures_first_and_inert(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    async with tools_console(make_agent, signed_in, INTENT) as (maker, http):
        page = (await http.get("/tools")).text
        item = page[page.index('data-tool="parrot@1"') : page.index("<h2>All versions</h2>")]
        tests = item[item.index("<h4>Test results</h4>") : item.index("The validator's report")]
        assert '<p class="tests-summary problem">1 of 3 passed; 2 FAILED</p>' in tests
        assert _items(tests) == [("failed", "1"), ("failed", "3"), ("passed", "2")]
        assert tests.count('<strong class="test-status">FAILED</strong>') == 2
        assert "<script>" not in page and "<img" not in page  # inert
        assert "&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in tests
        assert "&lt;img src=x onerror=alert(2)&gt;\\x1b[31m" in tests
        assert "\x1b" not in page
        assert 'class="test-problem">it succeeded; expected an error containing' in tests
        # The results sit before the validator's report and the code, and the buttons still work.
        assert item.index("Test results") < item.index("The validator's report")
        approved = await http.post("/tools/parrot/1/approve", data={"csrf": csrf_of(page)})
        assert approved.status_code == 303
    assert maker.record("parrot", 1).status.value == "approved"


async def test_no_tests_and_a_record_from_before_are_each_said(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    maker = ToolsmakerRegistry(".agents/toolsmaker")
    maker.build_from_intent({**INTENT, "tests": []})
    maker.build_from_intent({**INTENT, "name": "older", "tests": []})
    path = maker.layout.record("older", 1)
    old = json.loads(path.read_text())
    del old["tests"]
    path.write_text(json.dumps(old))
    agent = make_agent([{"text": "hi"}])
    async with agent:
        page = (await signed_in(agent).get("/tools")).text
    parrot = page[page.index('data-tool="parrot@1"') :]
    assert '<p class="tests-summary">no tests given</p>' in parrot
    older = page[page.index('data-tool="older@1"') :]
    assert "No test results: this version was built before tests were kept." in older


async def test_changed_test_results_on_disk_are_said_unreadable(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    maker = ToolsmakerRegistry(".agents/toolsmaker")
    maker.build_from_intent(INTENT)
    path = maker.layout.record("parrot", 1)
    changed = json.loads(path.read_text())
    changed["tests"]["results"] = ["<script>", 3]
    path.write_text(json.dumps(changed))
    agent = make_agent([{"text": "hi"}])
    async with agent:
        response = await signed_in(agent).get("/tools")
    assert response.status_code == 200
    assert "the stored test results are unreadable (the record file was changed)" in response.text
    assert "<script>" not in response.text
