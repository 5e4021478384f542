"""Hard links: a file inside the base whose inode has another name outside it.

The path check sees only the name inside the base, so by default such files are not read
(HARD_LINK, naming the setting that allows them); ``files.allow_hard_links`` reads them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ai_agent.config import FileToolsConfig, NotesConfig
from ai_agent.state import ToolCall, ToolResult
from ai_agent.tools import ToolRegistry
from ai_agent.tools.builtin.files import file_tools, sandbox_for
from ai_agent.tools.builtin.notes import notes_tools
from ai_agent.tools.builtin.search import search_tools
from tests.tools.conftest import CANARY, Tree


def registry(tree: Tree, **files: Any) -> ToolRegistry:
    config = FileToolsConfig(**files)
    box = sandbox_for(config, tree.base)
    return ToolRegistry([*file_tools(box, config), *search_tools(box, config)])


async def run(reg: ToolRegistry, name: str, **args: Any) -> ToolResult:
    call: ToolCall = {"id": "c", "name": name, "args": args}
    return await reg.execute(call, {})


def link_the_secret(tree: Tree) -> Path:
    linked = tree.base / "sub" / "linked.txt"
    os.link(tree.secret, linked)
    return linked


async def test_reads_of_a_hard_linked_file_are_refused_by_default(tree: Tree) -> None:
    link_the_secret(tree)
    reg = registry(tree)
    for name, args in [
        ("read_file", {"path": "sub/linked.txt"}),
        ("grep_search", {"pattern": "canary", "path": "sub/linked.txt"}),
        ("copy_file", {"source": "sub/linked.txt", "destination": "copy.txt"}),
        ("append_file", {"path": "sub/linked.txt", "content": "more"}),
    ]:
        result = await run(reg, name, **args)
        assert result["status"] == "error", (name, result)
        assert result["meta"]["code"] == "HARD_LINK", (name, result)
        assert "has 2 hard links" in str(result["error"])
        assert "tool_config.files.allow_hard_links = true" in str(result["error"])
        assert CANARY not in str(result)
    assert not (tree.base / "copy.txt").exists()
    assert tree.secret.read_text() == CANARY


async def test_a_recursive_grep_skips_hard_linked_files_and_counts_them(tree: Tree) -> None:
    link_the_secret(tree)
    result = await run(registry(tree), "grep_search", pattern="canary|alpha", path=".")
    content = result["content"]
    assert [m["path"] for m in content["matches"]] == ["sub/a.txt"]
    assert content["skipped_hard_links"] == 1
    assert CANARY not in str(result)


async def test_the_setting_allows_hard_links(tree: Tree) -> None:
    link_the_secret(tree)
    reg = registry(tree, allow_hard_links=True)
    assert (await run(reg, "read_file", path="sub/linked.txt"))["content"] == CANARY
    grep = await run(reg, "grep_search", pattern="canary", path=".")
    assert [m["path"] for m in grep["content"]["matches"]] == ["sub/linked.txt"]


async def test_notes_with_another_link_are_not_read(tree: Tree) -> None:
    (tree.outside / "diary.md").write_text("# Diary\n\nThe canary sings at dawn.\n")
    os.link(tree.outside / "diary.md", tree.base / "diary.md")
    strict = ToolRegistry(notes_tools(tree.base, NotesConfig()))
    result = await run(strict, "read_note", path="diary.md")
    assert result["meta"]["code"] == "HARD_LINK" and "dawn" not in str(result)
    found = await run(strict, "find_similar", queries=["canary sings"])
    assert "dawn" not in str(found)
    allowed = ToolRegistry(notes_tools(tree.base, NotesConfig(), allow_hard_links=True))
    assert "dawn" in str(await run(allowed, "read_note", path="diary.md"))


async def test_writes_replace_the_name_and_leave_the_other_link_alone(tree: Tree) -> None:
    linked = link_the_secret(tree)
    result = await run(registry(tree), "write_file", path="sub/linked.txt", content="new")
    assert result["status"] == "ok"
    assert linked.read_text() == "new" and tree.secret.read_text() == CANARY
