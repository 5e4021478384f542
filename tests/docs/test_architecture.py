"""docs/architecture.md names real places: every module or file it points a newcomer to exists.

The path of one run and the "Where to add" table are only useful while they match the tree; a
module renamed or moved without the page fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"
# A path as the page writes it: a folder of the package or the tests, then a file name.
NAMED = re.compile(r"(?<![\w/.])((?:[a-z_]+/)+[a-z_]+\.(?:py|json))\b")


def _section(title: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end]


def _files() -> set[str]:
    found = set()
    for top in ("ai_agent", "tests", "docs", "bench"):
        found |= {p.relative_to(ROOT).as_posix() for p in (ROOT / top).rglob("*") if p.is_file()}
    return found


def _missing(text: str) -> list[str]:
    # The page may name a module by its path inside its package (`builtin/typed.py`).
    files = _files()
    return [
        name
        for name in sorted(set(NAMED.findall(text)))
        if not any(f == name or f.endswith("/" + name) for f in files)
    ]


def test_the_path_of_one_run_names_modules_that_exist() -> None:
    section = _section("The path of one run")
    assert "```mermaid" in section
    assert len(NAMED.findall(section)) >= 10
    assert _missing(section) == []


def test_where_to_add_names_files_that_exist() -> None:
    section = _section("Where to add ...")
    kinds = re.findall(r"^\| \*\*(.+?)\*\*", section, flags=re.M)
    assert kinds == [
        "a tool",
        "a built-in tool",
        "a tool source",
        "a stage hook",
        "an issue kind",
        "a storage engine",
    ]
    assert _missing(section) == []


def test_the_layers_and_seams_name_modules_that_exist() -> None:
    for title in ("Layers", "The seams"):
        assert _missing(_section(title)) == [], title
