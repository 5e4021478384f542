"""Scripted models for CLI tests: a JSON script file named as ``--model scripted:PATH``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def script(tmp_path: Path, *turns: dict[str, Any]) -> str:
    """Write ``turns`` as a script in ``tmp_path``; the ``--model`` value that plays it."""
    path = tmp_path / "script.json"
    path.write_text(json.dumps(list(turns)))
    return f"scripted:{path}"


def calc(expression: str) -> dict[str, Any]:
    """A turn that calls the calculator."""
    return {"tool_calls": [{"name": "calculator", "args": {"expression": expression}}]}
