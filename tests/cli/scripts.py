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


def stored_calculation(where: Path) -> tuple[Path, str]:
    """A database in ``where`` with one finished run, ``t1`` (6*7 with the calculator).

    Returns the database and the ``--model`` value of the script that made it.
    """
    from ai_agent.cli import EXIT, main

    model = script(where, calc("6*7"), {"text": "6*7 = 42"})
    db = where / "c.sqlite"
    argv = ["--model", model, "--tools", "calculator", "--quiet"]
    code = main(["run", "what is 6*7", "--thread-id", "t1", "--db", str(db), *argv])
    assert code == EXIT["completed"]
    return db, model
