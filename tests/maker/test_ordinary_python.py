"""Generated tools are ordinary Python: dataclasses, enums and typing work inside the sandbox.

The real validator checks the code (no careless reviewer of the code here), and the tool runs in
the real bubblewrap sandbox.
"""

from __future__ import annotations

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
