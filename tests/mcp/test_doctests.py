"""The examples in the MCP modules' docstrings run, and importing the engine loads no MCP client."""

from __future__ import annotations

import doctest
import importlib
import subprocess
import sys

import pytest

MODULES = [
    "ai_agent.tools.mcp",
    "ai_agent.tools.mcp.adapt",
    "ai_agent.tools.mcp.manager",
    "ai_agent.tools.mcp.resolve",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0


def test_importing_the_engine_does_not_import_the_mcp_client() -> None:
    code = (
        "import sys, ai_agent, ai_agent.tools.mcp, ai_agent.cli\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in "
        "('mcp', 'langchain_mcp_adapters')]\n"
        "print(loaded)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"
