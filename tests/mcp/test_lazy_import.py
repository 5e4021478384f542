"""Importing the engine loads no MCP client."""

from __future__ import annotations

import subprocess
import sys


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
