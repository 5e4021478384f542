"""grep_search at scale: a tree of thousands of files walked only as far as the search goes, and
files over the read limit searched a bounded block at a time (read_file sends the model there).
"""

from __future__ import annotations

import os
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import regex

from ai_agent.config import FileToolsConfig
from ai_agent.state import ToolCall, ToolResult
from ai_agent.tools import ToolRegistry
from ai_agent.tools.builtin import search
from ai_agent.tools.builtin.files import file_tools
from ai_agent.tools.builtin.grep_lines import Searcher
from ai_agent.tools.builtin.refusal import SandboxError
from ai_agent.tools.builtin.sandbox import Sandbox
from ai_agent.tools.builtin.search import search_tools
from ai_agent.tools.builtin.walk import walk as real_walk

_LIMIT = 65_536  # max_read_bytes of the large-file tests: their files are 50 times that


def registry(base: Path, **config: Any) -> ToolRegistry:
    cfg = FileToolsConfig(**config)
    box = Sandbox(base, max_read_bytes=cfg.max_read_bytes)
    return ToolRegistry([*search_tools(box, cfg), *file_tools(box, cfg)])


async def run(reg: ToolRegistry, tool_name: str, /, **args: Any) -> ToolResult:
    call: ToolCall = {"id": "c", "name": tool_name, "args": args}
    return await reg.execute(call, {})


def _make_tree(base: Path, files: int) -> None:
    """``files`` files of one matching line, 1,000 to a folder."""
    base.mkdir()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    for folder in range(files // 1000):
        path = base / f"d{folder:03d}"
        path.mkdir()
        for i in range(1000):
            fd = os.open(path / f"f{i:04d}.txt", flags, 0o644)
            os.write(fd, b"hit\n")
            os.close(fd)


async def test_a_grep_of_a_huge_tree_walks_only_as_far_as_its_result_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 5,000 files show it (the walk is counted); a million would hold the list the same way.
    base = tmp_path / "tree"
    _make_tree(base, 5_000)
    walked = 0

    def counted(*args: Any, **kwargs: Any) -> Iterator[Any]:
        nonlocal walked
        for entry in real_walk(*args, **kwargs):
            walked += 1
            yield entry

    monkeypatch.setattr(search, "walk", counted)
    reg = registry(base, max_results=1)
    await run(reg, "grep_search", pattern="hit", path="d000/f0000.txt")  # imports regex
    tracemalloc.start()
    try:
        result = await run(reg, "grep_search", pattern="hit", path=".")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result["status"] == "ok", result
    content = result["content"]
    assert content["matches"] == [{"path": "d000/f0000.txt", "line": 1, "text": "hit"}]
    # Stopped at its limit, and says so: the second matching file was the one too many.
    assert content["truncated"] and content["files_searched"] == 2
    assert result["summary"] == "grep_search: 1 match(es) in 2 file(s) (truncated)"
    # The folder d000 and its first two files: the walk went no further (it used to walk all
    # of them, and hold each as an entry and a checked path before the first was searched).
    assert walked == 3
    assert peak < 2_000_000, peak  # 5,000 files were 3.7 MB of entries and paths, traced


def _big_log(path: Path, lines: int) -> list[str]:
    """A log of ``lines`` lines, 50 times the read limit, that the test reads back as lines."""
    line = "2026-11-28 06:{:02d} INFO worker-{} request {} took {} ms"
    text = [line.format(i % 60, i % 7, i, i % 97) for i in range(lines)]
    text[-3] = "2026-11-28 07:00 ERROR disk full on /var"
    path.write_text("\n".join(text) + "\n")
    assert path.stat().st_size > 50 * _LIMIT
    return text


async def test_a_file_over_the_read_limit_is_searched_a_block_at_a_time(tmp_path: Path) -> None:
    lines = _big_log(tmp_path / "big.log", 60_000)
    reg = registry(tmp_path, max_read_bytes=_LIMIT)
    # read_file refuses the file and sends the model to grep_search, which now searches it.
    refused = await run(reg, "read_file", path="big.log")
    assert refused["meta"]["code"] == "TOO_LARGE"
    assert "search it with grep_search" in str(refused["error"])
    await run(reg, "grep_search", pattern="ERROR", path="big.log")  # imports regex
    tracemalloc.start()
    try:
        found = await run(reg, "grep_search", pattern="ERROR", path=".", context_lines=2)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert found["status"] == "ok", found
    assert found["content"]["matches"] == [
        {
            "path": "big.log",
            "line": len(lines) - 2,
            "text": "2026-11-28 07:00 ERROR disk full on /var",
            "before": lines[-5:-3],
            "after": lines[-2:],
        }
    ]
    assert found["content"]["files_searched"] == 1 and not found["content"]["truncated"]
    assert "skipped_large" not in found["content"]
    # Never the whole file (3.5 MB, and as text and lines more): a block and its lines.
    assert peak < 1_500_000, peak
    named = await run(reg, "grep_search", pattern="disk full", path="big.log", regex=False)
    assert [m["line"] for m in named["content"]["matches"]] == [len(lines) - 2]


async def test_a_line_longer_than_the_read_limit_is_searched_in_pieces(tmp_path: Path) -> None:
    # A minified file: one line of 3 MB, the word near its end, then a short line.
    line = "x" * (3_000_000 - 100) + " needle " + "y" * 92
    (tmp_path / "app.min.js").write_text(line + "\ntail\n")
    reg = registry(tmp_path, max_read_bytes=_LIMIT)
    found = await run(reg, "grep_search", pattern="needle", path=".")
    assert found["status"] == "ok", found
    content = found["content"]
    assert [(m["path"], m["line"]) for m in content["matches"]] == [("app.min.js", 1)]
    assert content["long_lines_split"] == 1  # said: a match across two pieces is not found
    assert len(content["matches"][0]["text"]) == 500  # shown as any long line is, cut
    everywhere = await run(reg, "grep_search", pattern="x|tail", path="app.min.js")
    # One match for the line in 46 pieces, and the next line keeps its number.
    assert [m["line"] for m in everywhere["content"]["matches"]] == [1, 2]


@pytest.mark.parametrize(
    ("pattern", "literal"),
    [
        ("ERROR", False),
        ("^2026-11-28 06:1[0-3]", False),  # ^ and $ at each line's ends, in blocks too
        (r"took 96 ms$", False),
        (r"\brequest 4\d{4}\b", False),
        (r"(?<=worker-3 )request 1\d{4}", False),  # looks behind: searched line by line
        (r"took 9\d ms\s2026", False),  # matches across lines only: no line holds it
        ("worker-6 request 5", True),
        ("(?i)error", False),
    ],
)
async def test_a_file_over_the_read_limit_gives_the_matches_a_whole_read_gives(
    tmp_path: Path, pattern: str, literal: bool
) -> None:
    lines = _big_log(tmp_path / "big.log", 60_000)
    compiled = regex.compile(regex.escape(pattern) if literal else pattern, regex.VERSION0)
    expected = [n for n, line in enumerate(lines, start=1) if compiled.search(line)]
    assert expected or r"\s2026" in pattern  # each finds lines, but the one across lines
    reg = registry(tmp_path, max_read_bytes=_LIMIT, max_results=100_000)
    found = await run(reg, "grep_search", pattern=pattern, path=".", regex=not literal)
    assert found["status"] == "ok", found
    assert [m["line"] for m in found["content"]["matches"]] == expected
    assert found["content"]["files_searched"] == 1


async def test_a_grep_out_of_time_gives_the_matches_found_so_far(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A search of a big tree that ran out of its budget was a TIMEOUT: every match it had found
    # was thrown away, and the model had to search again for less.
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.txt").write_text(f"hit in {name}\n")
    searched: list[str] = []
    run_file = Searcher.run

    def counted(self: Searcher, blocks: Any, shown: str) -> None:
        searched.append(shown)
        run_file(self, blocks, shown)

    def budget(deadline: float, tool: str) -> None:
        if len(searched) >= 2:  # spent after two files: as a huge tree spends it
            raise SandboxError("TIMEOUT", f"{tool} ran out of time (20s); narrow it")

    monkeypatch.setattr(Searcher, "run", counted)
    monkeypatch.setattr(search, "_in_time", budget)
    result = await run(registry(tmp_path), "grep_search", pattern="hit", path=".")
    assert result["status"] == "ok", result
    content = result["content"]
    assert [m["path"] for m in content["matches"]] == ["a.txt", "b.txt"]
    assert content["truncated"] is True
    assert content["stopped"] == (
        "grep_search ran out of time (20s); narrow it (the matches found so far)"
    )
    assert result["summary"] == (
        "grep_search: 2 match(es) in 2 file(s) (out of time: the matches found so far)"
    )
    # Out of time before any match, it is still the error that says how to narrow the search
    # (tests/tools/test_search.py::test_a_walk_stops_at_the_time_budget).
