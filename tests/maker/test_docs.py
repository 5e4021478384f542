"""docs/toolsmaker.md runs as written: every python and bash block, top to bottom.

- ``python`` blocks run in order in one namespace (top-level ``await`` allowed);
- ``bash`` blocks: each line is an ``ai-agent`` command, run through ``main`` (exit code 0);
- a ``text`` block right after either is what it prints (``...`` matches anything, as in
  doctest);
- ``toml`` blocks are valid settings.

It runs in the test's private working directory, with real sandboxes.
"""

from __future__ import annotations

import asyncio
import doctest
import shlex
import tomllib
from pathlib import Path
from typing import Any

import pytest

from ai_agent.cli import main
from ai_agent.config import AgentSettings
from tests.docs.runner import fenced, run_block

DOC = Path(__file__).resolve().parents[2] / "docs" / "toolsmaker.md"
_CHECKER = doctest.OutputChecker()


def _bash(code: str, capsys: pytest.CaptureFixture[str]) -> str:
    printed = []
    for line in code.splitlines():
        assert line.startswith("ai-agent "), f"docs/toolsmaker.md: cannot run {line!r}"
        code_ = main(shlex.split(line)[1:])
        out, err = capsys.readouterr()
        assert code_ == 0, (line, out, err)
        printed.append(out)
    return "".join(printed)


def test_the_tutorial_runs_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    blocks = fenced(DOC)
    namespace: dict[str, Any] = {"__name__": "docs_toolsmaker"}
    ran = {"python": 0, "bash": 0, "toml": 0, "checked": 0}
    for index, (kind, code) in enumerate(blocks):
        if kind == "toml":
            AgentSettings.model_validate(tomllib.loads(code))
        elif kind == "python":
            printed = asyncio.run(run_block(code, str(DOC), namespace))
        elif kind == "bash":
            printed = _bash(code, capsys)
        else:
            continue
        ran[kind] += 1
        following = blocks[index + 1] if index + 1 < len(blocks) else ("", "")
        if kind != "toml" and following[0] == "text":
            wanted = following[1]
            assert _CHECKER.check_output(wanted, printed, doctest.ELLIPSIS), (
                f"block {index} ({kind}) printed:\n{printed}\nthe page says:\n{wanted}"
            )
            ran["checked"] += 1
    assert ran == {"python": 7, "bash": 2, "toml": 1, "checked": 9}
    # What the tutorial left behind is what it says.
    assert Path("notes/today.md").read_text() == "ship it"
    assert not Path("drafts").exists()
