"""Generated tools are ordinary Python: dataclasses, enums and typing work inside the sandbox.

The real validator checks the code (no careless reviewer of the code here), and the tool runs in
the real bubblewrap sandbox.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ai_agent.errors import ToolPolicyViolation
from ai_agent.tools.maker import ToolsmakerRegistry
from tests.maker.conftest import ApproveTool, CallTool

ORDINARY = """
from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import NamedTuple


class Unit(enum.Enum):
    WORD = "word"
    LINE = "line"


class Span(NamedTuple):
    start: int
    end: int


@dataclass(frozen=True)
class Count:
    unit: Unit
    total: int
    spans: list[Span] = field(default_factory=list)


class GeneratedTool:
    def execute(self, text: str = "", **kwargs):
        words = text.split()
        count = Count(Unit.WORD, len(words), [Span(0, len(text))])
        return {**asdict(count), "unit": count.unit.value}
"""


async def test_dataclasses_enums_and_typing_work_in_a_generated_tool(
    approve_tool: ApproveTool, call_tool: CallTool
) -> None:
    tool = approve_tool(code=ORDINARY, name="word_count", purpose="Count the words of a text.")
    result = await call_tool(tool, {"text": "one two three"})
    assert result["status"] == "ok", result
    assert result["content"] == {"unit": "word", "total": 3, "spans": [[0, 13]]}


async def test_a_path_outside_the_allowed_paths_is_a_policy_violation(
    approve_tool: ApproveTool, call_tool: CallTool, workspace: Path, maker: ToolsmakerRegistry
) -> None:
    (workspace / "data").mkdir()
    (workspace / "data" / "notes.txt").write_text("inside")
    tool = approve_tool(
        'return open(kwargs["path"]).read()',
        capabilities=["fs_read"],
        allowed_paths=["data"],
    )
    assert (await call_tool(tool, {"path": "data/notes.txt"}))["content"] == "inside"
    # A missing file where the tool may look is the tool's own error.
    missing = await call_tool(tool, {"path": "data/gone.txt"})
    assert missing["status"] == "error" and "FileNotFoundError" in missing["error"]
    # Outside the allowed paths the file is not mounted; what the tool tried is forbidden.
    for path in ("/etc/passwd", "../secret.txt", "data/../other/x.txt"):
        with pytest.raises(ToolPolicyViolation, match="path_not_allowed") as info:
            await call_tool(tool, {"path": path})
        assert f"reached for {path!r}, outside its allowed paths (data)" in str(info.value)
    blocked = [e for e in maker.audit_log.events() if e["event"] == "tool_policy_blocked"]
    assert [e["data"]["reason"] for e in blocked] == ["path_not_allowed"] * 3
