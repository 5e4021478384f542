"""Hostile notes: a notes folder someone else wrote, searched and read by the notes tools.

Real files in tmp_path, searched through the registry as a model's call would be. One damaged or
hostile note must cost only itself: the other notes are still found, and nothing hangs.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from ai_agent.config import NotesConfig
from ai_agent.tools import ToolRegistry
from ai_agent.tools.builtin import notes_rank
from ai_agent.tools.builtin.notes import notes_tools
from ai_agent.tools.builtin.notes_index import Chunk, parse_note
from tests.tools.notes_folder import notes_folder


def call(root: Path, name: str, **args: Any) -> dict[str, Any]:
    registry = ToolRegistry(notes_tools(root, NotesConfig(min_chunk_chars=0)))
    result = asyncio.run(registry.execute({"id": "c1", "name": name, "args": args}, {}))
    return dict(result)


def test_a_front_matter_date_that_does_not_exist_costs_only_its_own_tags(tmp_path: Path) -> None:
    # YAML reads 2023-02-29 as a date, and the date does not exist: PyYAML raises ValueError
    # (not a YAMLError). One such note failed every search of the folder, and its own reading.
    root = notes_folder(tmp_path)
    (root / "diary.md").write_text("---\ndate: 2023-02-29\ntags: [log]\n---\n# Diary\n\nrain\n")
    found = call(root, "find_similar", queries=["high tide"])
    assert found["status"] == "ok", found
    assert [hit["path"] for hit in found["content"]["data"]] == ["tides.md"]
    read = call(root, "read_note", path="diary.md")
    assert read["status"] == "ok", read
    assert "# Diary\n\nrain" in read["content"]["text"]


def test_a_front_matter_number_too_long_to_read_costs_only_its_own_tags() -> None:
    # Python refuses to read an integer of more than 4,300 digits (ValueError, not a YAMLError).
    note = parse_note("n.md", "---\ntags: [" + "7" * 5000 + ", ok]\n---\n# N\n\nbody #inline\n")
    assert note.tags == frozenset({"inline"})
    assert [s.title for s in note.sections] == ["N"]


def test_a_note_with_a_long_heading_like_line_is_searched_in_linear_time(tmp_path: Path) -> None:
    # The heading pattern `(.+?)[ \t#]*$` backtracked quadratically over a run of spaces that
    # does not end the line: a 900 kB line (under the 1 MB read limit) took half an hour, for
    # every search. Made in linear time, the search answers (pytest's timeout is the bound).
    root = notes_folder(tmp_path)
    trap = "# a" + " " * 450_000 + "x" + "#" * 450_000 + "y\n"
    (root / "trap.md").write_text(trap + "\nhigh tide trap\n")
    found = call(root, "find_similar", queries=["high tide"])
    assert found["status"] == "ok", found
    assert {hit["path"] for hit in found["content"]["data"]} == {"tides.md", "trap.md"}


def test_headings_are_read_as_before() -> None:
    # The titles the heading pattern gave, closing hashes and trailing blanks left out.
    text = "# One #\n## Two ##  \n### C# \n#### ##\n#nospace\n####### seven\n# Spaced   title\n"
    note = parse_note("h.md", text)
    assert [(s.level, s.title) for s in note.sections] == [
        (1, "One"),
        (2, "Two"),
        (3, "C"),
        (4, "#"),
        (1, "Spaced   title"),
    ]


def test_picking_100_results_compares_each_candidate_with_each_pick_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # MMR compared every candidate with every pick again for each new pick: cubic in k, and a
    # model's k=100 over 2,000 matching chunks took 47 s. Counted, not timed: each candidate
    # is compared with each pick once, so at most k x candidates comparisons.
    compared = []
    cosine = notes_rank._sparse_cosine

    def counted(a: dict[str, float], b: dict[str, float]) -> float:
        compared.append(1)
        return cosine(a, b)

    monkeypatch.setattr(notes_rank, "_sparse_cosine", counted)
    chunks = [Chunk(f"n{i}.md", "", f"tide word{i} word{i % 7} " * 20) for i in range(1000)]
    ranked = notes_rank.rank(["tide"], chunks, k=100)
    assert len(ranked) == 100
    assert len({r.chunk.path for r in ranked}) == 100
    assert len(compared) <= 100 * 400  # k picks, 4k candidates
