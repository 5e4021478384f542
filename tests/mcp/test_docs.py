"""docs/mcp.md runs as written: the tutorial's steps in order, against the real filesystem server.

- ``bash`` blocks: ``mkdir`` and ``echo`` lines run in a shell; ``npm install`` is replaced by the
  servers ``.ci/setup`` installed (linked as ``node_modules``, so ``npx -y`` finds the package
  without a network); ``ai-agent mcp list`` runs; every other ``ai-agent`` line must parse.
- ``yaml`` blocks: every one is a valid MCP configuration; one whose first line is ``# FILE`` is
  written to that file.
- ``python`` blocks run in order in one namespace (top-level ``await`` allowed); when a ``text``
  block follows one, it is exactly what the block prints.
"""

from __future__ import annotations

import asyncio
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ai_agent.cli import _argv, _parser, main
from ai_agent.config import load_mcp_config
from tests.docs.runner import fenced, run_block
from tests.mcp.conftest import NPM_ROOT, REPO, descendants, wait_gone

DOC = REPO / "docs" / "mcp.md"

pytestmark = pytest.mark.timeout(240)


def _shell(code: str, work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for line in code.splitlines():
        if line.startswith("npm install"):
            if not (work / "node_modules").exists():
                (work / "node_modules").symlink_to(NPM_ROOT / "node_modules")
        elif line.startswith(("mkdir ", "echo ")):
            subprocess.run(["bash", "-c", line], cwd=work, check=True)
        elif line.startswith("ai-agent mcp list"):
            assert main(shlex.split(line)[1:]) == 0
            out = capsys.readouterr().out
            assert out.splitlines()[0].split()[:3] == ["server", "transport", "status"]
            assert "files.write_file" in out
        elif line.startswith("ai-agent "):
            parser, commands = _parser()
            parser.parse_args(_argv(shlex.split(line)[1:], commands))  # the options exist
        elif line.strip():
            pytest.fail(f"docs/mcp.md: no way to run {line!r} in this test")


def test_the_tutorial_runs_as_written(
    filesystem_entry: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    work = tmp_path / "work"  # the test's working directory (tests/conftest.py)
    assert Path.cwd() == work
    blocks = fenced(DOC)
    namespace: dict[str, Any] = {"__name__": "docs_mcp"}
    ran = {"python": 0, "yaml": 0, "bash": 0}
    before = descendants()
    for index, (kind, code) in enumerate(blocks):
        if kind == "bash":
            _shell(code, work, capsys)
        elif kind == "yaml":
            first = code.splitlines()[0]
            name = first[2:].strip() if first.startswith("# ") else f"example-{index}.yaml"
            (work / name).write_text(code)
            assert load_mcp_config(work / name), name
        elif kind == "python":
            printed = asyncio.run(run_block(code, str(DOC), namespace))
            following = blocks[index + 1] if index + 1 < len(blocks) else ("", "")
            if following[0] == "text":
                assert printed == following[1], f"block {index} printed:\n{printed}"
        else:
            continue
        ran[kind] += 1
    assert ran == {"python": 4, "yaml": 3, "bash": 3}
    assert wait_gone(descendants() - before) == set()
