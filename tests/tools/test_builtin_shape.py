"""The built-in tools' shape: schemas come from signatures, and no module grows past 600 lines."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import ai_agent

_PACKAGE = Path(ai_agent.__file__).parent
_BUILTIN = sorted((_PACKAGE / "tools" / "builtin").glob("*.py"))
# Built-in tools that live beside what they drive.
_ELSEWHERE = [_PACKAGE / "tools" / "maker" / "propose.py"]
_MAX_LINES = 600


def _hand_written_schemas(path: Path) -> list[str]:
    """Where a module makes a ToolSpec itself, or writes a JSON object schema."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "ToolSpec":
            found.append(f"line {node.lineno}: ToolSpec(...)")
        if isinstance(node, ast.Dict) and any(
            isinstance(k, ast.Constant) and k.value == "properties" for k in node.keys
        ):
            found.append(f"line {node.lineno}: a dict with 'properties'")
    return found


@pytest.mark.parametrize("path", [*_BUILTIN, *_ELSEWHERE], ids=lambda p: p.name)
def test_built_ins_make_their_specs_from_signatures(path: Path) -> None:
    # builtin_spec (ai_agent.tools.builtin.typed) is the one way a built-in becomes a ToolSpec.
    assert _hand_written_schemas(path) == []


@pytest.mark.parametrize("path", _BUILTIN, ids=lambda p: p.name)
def test_each_built_in_module_stays_short(path: Path) -> None:
    assert len(path.read_text().splitlines()) <= _MAX_LINES


def test_the_check_finds_a_hand_written_schema(tmp_path: Path) -> None:
    module = tmp_path / "tool.py"
    module.write_text(
        'SPEC = ToolSpec("t", run, parameters={"type": "object", "properties": {}})\n'
    )
    assert _hand_written_schemas(module) == [
        "line 1: ToolSpec(...)",
        "line 1: a dict with 'properties'",
    ]
