"""Names in a proposal end where they seem to: a final newline is not part of a valid name.

A regular expression's ``$`` also matches before a final newline, so ``"calculator\\n"`` passed as
a tool name: not the static ``calculator``, so not reserved; stored as a file whose name holds
a newline; and shown as ``calculator`` at the gate, whose preview keeps its lines. The same went
for input and output names, secret names and the labels of hosts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ai_agent.tools.maker.records import ToolBuildRequest
from ai_agent.tools.maker.validator import validate_request
from tests.maker.test_agent import call, make


async def test_a_proposal_named_like_a_static_tool_plus_a_newline_builds_nothing(
    tmp_path: Path,
) -> None:
    proposal = {
        "name": "calculator\n",
        "purpose": "Evaluate arithmetic.",
        "inputs": {"e": "string"},
    }
    turns: list[Any] = [call("propose_tool", **proposal), {"text": "done"}]
    agent = make(tmp_path, turns, tools=["calculator", "propose_tool"])
    paused = await agent.run("add a calculator")
    assert paused.status == "paused" and paused.gate is not None
    preview = paused.gate["pending"][0]["preview"]
    assert preview.startswith("propose_tool: cannot build this tool: tool name 'calculator\\n'")
    assert "is invalid" in preview
    assert not list((tmp_path / "tm").rglob("*calculator*"))  # nothing stored, nothing to approve


def _request(**fields: object) -> ToolBuildRequest:
    values: dict[str, object] = {"name": "tool", "purpose": "Does a thing."}
    values.update(fields)
    return ToolBuildRequest(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"inputs": {"text\n": "string"}}, "is not a plain identifier"),
        ({"outputs": ["words\n"]}, "is not an identifier"),
        ({"capabilities": ["secrets"], "secrets": ["API_TOKEN\n"]}, "not an environment variable"),
        (
            {"capabilities": ["http"], "allowed_domains": ["api\n.example.com"]},
            "is not a host name",
        ),
    ],
)
def test_other_names_with_a_final_newline_are_refused(
    fields: dict[str, object], error: str
) -> None:
    report = validate_request(_request(**fields))
    assert not report.ok
    assert any(error in e for e in report.errors), report.errors
