"""The threat model in docs/security.md names tests: each must exist in the suite."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "security.md"
NAMED = re.compile(r"`(tests/[\w/]+\.py)(?:::(\w+))?`")


def _section() -> str:
    text = PAGE.read_text()
    start = text.index("## Threat model")
    return text[start : text.index("\n## ", start + 1)]


def _functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }


def test_every_test_the_threat_model_names_exists() -> None:
    named = NAMED.findall(_section())
    assert len(named) > 40  # the table is there and read
    missing = [
        f"{file}::{name}" if name else file
        for file, name in named
        if not (ROOT / file).is_file() or (name and name not in _functions(ROOT / file))
    ]
    assert missing == []
