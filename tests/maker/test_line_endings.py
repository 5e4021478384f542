"""Code with Windows line endings: reviewed, hashed, shown and run as the very same bytes.

A model may write its module with ``\\r\\n``. Read back with newline translation, the file
would hash differently from what was reviewed: the tool would be refused as "changed after it
was reviewed" (a false integrity alarm, audited) and ``tools show --code`` would show other
bytes than those that run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ai_agent import UserPlan
from ai_agent.cli import main
from ai_agent.testing import FunctionModel
from ai_agent.tools.maker import ToolsmakerRegistry, ToolStatus
from tests.maker.test_agent import call, events, make

CRLF = (
    "class GeneratedTool:\r\n"
    "    def execute(self, text):\r\n"
    "        return {'words': len(text.split())}\r\n"
)
PROPOSAL: dict[str, Any] = {
    "name": "word_count",
    "purpose": "Count words.",
    "inputs": {"text": "string"},
    "code": CRLF,
}


async def test_a_proposal_written_with_crlf_runs_once_a_plan_approves_it(tmp_path: Path) -> None:
    def reply(messages: list[dict[str, Any]], info: dict[str, Any]) -> dict[str, Any]:
        if info["turn"] == 0:
            return call("propose_tool", **PROPOSAL)
        if info["turn"] == 1:
            return call("word_count", text="the toolsmaker at work")
        return {"text": f"the tool said {messages[-1]['content']}"}

    agent = make(tmp_path, model=FunctionModel(reply), tools=["propose_tool"])
    paused = await agent.run("count the words")
    assert paused.status == "paused"

    done = await agent.resume(paused.thread_id, UserPlan(approve=["*"]))
    assert done.status == "completed", done.gate and done.gate["prompt"]
    assert done.final_text == 'the tool said {"words": 4}'
    assert agent.toolsmaker.record("word_count", 1).status is ToolStatus.ACTIVATED
    # No false alarm: nothing changed after review, so no integrity event.
    assert ("tool_policy_blocked", "word_count", 1) not in events(agent)


def test_examples_and_the_review_see_the_stored_bytes(
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    maker = ToolsmakerRegistry(".agents/toolsmaker")
    tests = [{"args": {"text": "a b"}, "expect": {"words": 2}}]
    built = maker.build_from_intent({**PROPOSAL, "tests": tests})
    assert built.status is ToolStatus.APPROVAL_REQUIRED
    tested = maker.record("word_count", 1).tests
    assert tested is not None and tested["summary"] == "1 of 1 passed"
    assert maker.code("word_count", 1) == CRLF  # what the reviewer reads is what runs

    assert main(["tools", "show", "word_count", "--code", "--json"]) == 0
    assert json.loads(capsysbinary.readouterr().out)["code"] == CRLF
    assert main(["tools", "show", "word_count", "--code"]) == 0
    out = capsysbinary.readouterr().out.decode()
    assert "        return {'words': len(text.split())}\\r\n" in out  # the CR, made visible

    maker.approve("word_count", 1)
    assert maker.activate("word_count", 1).name == "word_count"
