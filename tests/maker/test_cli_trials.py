"""``ai-agent tools pending | show`` print a version's test results, failures first and inert."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ai_agent.tools.maker import ToolsmakerRegistry
from tests.maker.test_cli import run

ECHO = (
    "class GeneratedTool:\n"
    "    def execute(self, text):\n"
    "        return {'said': text + '\\x1b[2K'}\n"
)
INTENT: dict[str, Any] = {
    "name": "echo",
    "purpose": "Echo a text.",
    "inputs": {"text": "string"},
    "code": ECHO,
    "tests": [
        {"args": {"text": "hi"}, "expect": {"said": "hi\x1b[2K"}},
        {"args": {"text": "hi"}, "expect": {"said": "hi"}},
    ],
}


@pytest.fixture
def maker() -> ToolsmakerRegistry:
    return ToolsmakerRegistry(".agents/toolsmaker")


def test_pending_and_show_print_the_test_results(
    maker: ToolsmakerRegistry, capsys: pytest.CaptureFixture[str]
) -> None:
    maker.build_from_intent(INTENT)
    code, out, _ = run(capsys, "tools", "pending")
    assert code == 0
    lines = out.splitlines()
    assert lines[3] == "  tests: 1 of 2 passed; 1 FAILED"
    assert lines[4].startswith("    test 2 FAILED (")
    # The problem quotes values as JSON (the escape is \u001b), printed with its backslash shown.
    assert lines[4].endswith(
        's) args {"text": "hi"}: field said: expected "hi", got "hi\\\\u001b[2K"'
    )
    assert len(lines) == 5  # the passing example is left to `show`
    assert "\x1b" not in out

    code, out, _ = run(capsys, "tools", "show", "echo")
    assert code == 0 and "\x1b" not in out
    section = out[out.index("tests (failures first): 1 of 2 passed; 1 FAILED") :]
    shown = section.splitlines()
    assert shown[1].startswith("    test 2 FAILED")
    assert shown[2] == '      output: {"said": "hi\\\\u001b[2K"}'
    assert shown[3].startswith("    test 1 passed")

    code, out, _ = run(capsys, "tools", "show", "echo@1", "--json")
    tests = json.loads(out)["tests"]
    assert (tests["passed"], tests["failed"]) == (1, 1)
    assert tests["results"][0]["problem"] == 'field said: expected "hi", got "hi\\u001b[2K"'


def test_a_version_built_before_tests_were_kept_prints_no_test_lines(
    maker: ToolsmakerRegistry, capsys: pytest.CaptureFixture[str]
) -> None:
    maker.build_from_intent({**INTENT, "tests": []})
    path = maker.layout.record("echo", 1)
    old = json.loads(path.read_text())
    del old["tests"]
    path.write_text(json.dumps(old))
    assert maker.record("echo", 1).tests is None
    code, out, _ = run(capsys, "tools", "pending")
    assert code == 0 and "tests:" not in out
    code, out, _ = run(capsys, "tools", "show", "echo")
    assert "tests (failures first)" not in out
