"""glob_search and grep_search on a real tree: syntax, limits, .gitignore, binaries, the sandbox."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import pytest

from ai_agent.config import FileToolsConfig
from ai_agent.state import ToolCall, ToolResult
from ai_agent.tools import ToolRegistry
from ai_agent.tools.builtin.patterns import GitIgnore, Glob
from ai_agent.tools.builtin.sandbox import Sandbox
from ai_agent.tools.builtin.search import search_tools
from tests.tools.conftest import CANARY, Tree, untouched


def registry(base: Path, **config: Any) -> ToolRegistry:
    cfg = FileToolsConfig(**config)
    return ToolRegistry(search_tools(Sandbox(base, max_read_bytes=cfg.max_read_bytes), cfg))


async def run(reg: ToolRegistry, tool_name: str, /, **args: Any) -> ToolResult:
    call: ToolCall = {"id": "c", "name": tool_name, "args": args}
    return await reg.execute(call, {})


@pytest.fixture
def project(tree: Tree) -> Tree:
    base = tree.base
    (base / "src" / "pkg").mkdir(parents=True)
    (base / "src" / "main.py").write_text("import os\n\ndef main():\n    return 'Hello'\n")
    (base / "src" / "pkg" / "util.py").write_text("def helper():\n    return 42  # hello\n")
    (base / "src" / "pkg" / "data1.txt").write_text("TODO one\n")
    (base / "src" / "pkg" / "data2.txt").write_text("nothing\n")
    (base / "build").mkdir()
    (base / "build" / "out.py").write_text("generated hello\n")
    (base / "debug.log").write_text("hello log\n")
    (base / "keep.log").write_text("hello kept\n")
    (base / ".gitignore").write_text("build/\n*.log\n!keep.log\n")
    (base / "src" / ".gitignore").write_text("pkg/data2.txt\n")
    (base / ".git").mkdir()
    (base / ".git" / "config").write_text("hello git\n")
    (base / "image.bin").write_bytes(b"\x89PNG\x00\x00hello")
    return tree


async def matches(reg: ToolRegistry, **args: Any) -> list[str]:
    result = await run(reg, "glob_search", **args)
    assert result["status"] == "ok", result
    return list(result["content"]["matches"])


async def test_glob_syntax(project: Tree) -> None:
    reg = registry(project.base)
    assert await matches(reg, pattern="**/*.py") == ["src/main.py", "src/pkg/util.py"]
    assert await matches(reg, pattern="*.py", root_dir="src") == ["src/main.py"]
    assert await matches(reg, pattern="src/pkg/data?.txt") == ["src/pkg/data1.txt"]
    assert await matches(reg, pattern="src/pkg/data[!1].txt") == []  # data2 is gitignored
    assert await matches(reg, pattern="src/*") == ["src/main.py", "src/pkg/"]
    assert await matches(reg, pattern="src/**") == [
        "src/main.py",
        "src/pkg/",
        "src/pkg/data1.txt",
        "src/pkg/util.py",
    ]
    assert await matches(reg, pattern="**/*.py", recursive=False) == ["src/main.py"]  # ** is *
    absolute = await matches(reg, pattern=str(project.base / "src" / "*.py"))
    assert absolute == ["src/main.py"]


async def test_glob_respects_gitignore_unless_told_not_to(project: Tree) -> None:
    kept = await matches(registry(project.base), pattern="**/*")
    assert "build/" not in kept and "debug.log" not in kept and "keep.log" in kept
    assert not any(m.startswith(".git/") for m in kept)
    everything = await matches(registry(project.base, respect_gitignore=False), pattern="**/*.log")
    assert everything == ["debug.log", "keep.log"]


async def test_a_reversed_range_matches_nothing_and_breaks_no_search(project: Tree) -> None:
    # git and fnmatch match nothing with [z-a]; one such .gitignore line broke every search.
    reg = registry(project.base)
    assert await matches(reg, pattern="src/[z-a]*.py") == []
    assert await matches(reg, pattern="src/[m-m]*.py") == ["src/main.py"]
    (project.base / "src" / ".gitignore").write_text("[z-a]\npkg/data2.txt\n")
    assert await matches(reg, pattern="src/pkg/*.txt") == ["src/pkg/data1.txt"]
    grep = await run(reg, "grep_search", pattern="TODO", path="src")
    assert [m["path"] for m in grep["content"]["matches"]] == ["src/pkg/data1.txt"]


async def test_glob_limits_and_absolute_paths(project: Tree) -> None:
    limited = await run(registry(project.base, max_results=2), "glob_search", pattern="**/*")
    assert limited["content"]["count"] == 2 and limited["content"]["truncated"]
    assert limited["summary"] == "glob_search: 2 match(es) (truncated)"
    absolute = await matches(registry(project.base, absolute_paths=True), pattern="src/*.py")
    assert absolute == [str(project.base / "src" / "main.py")]


async def test_glob_never_leaves_the_sandbox(project: Tree) -> None:
    reg = registry(project.base)
    with untouched(project.outside, project.evil):
        found = await matches(reg, pattern="**/*")
        assert not any("secret" in m for m in found)
        for pattern, root in [
            ("*", ".."),
            ("*", "dir_out"),
            ("../outside/*", "."),
            (str(project.outside / "*"), "."),
            ("*.txt", "../base-evil"),
        ]:
            result = await run(reg, "glob_search", pattern=pattern, root_dir=root)
            assert result["status"] == "error", (pattern, root)
            assert result["meta"]["code"] == "OUTSIDE_SANDBOX"
    assert (await run(reg, "glob_search", pattern=""))["meta"]["code"] in (
        "SCHEMA_VIOLATION",
        "BAD_ARGUMENTS",
    )


async def test_grep_finds_lines_with_numbers_and_context(project: Tree) -> None:
    reg = registry(project.base)
    result = await run(reg, "grep_search", pattern="hello", path=".", ignore_case=True)
    content = result["content"]
    found = [(m["path"], m["line"], m["text"]) for m in content["matches"]]
    assert found == [
        ("keep.log", 1, "hello kept"),
        ("src/main.py", 4, "    return 'Hello'"),
        ("src/pkg/util.py", 2, "    return 42  # hello"),
    ]
    # .gitignore files, notes.txt, sub/ of the base tree are searched too; .git never is.
    assert content["skipped_binary"] == 1 and content["files_searched"] == 9
    assert result["summary"] == "grep_search: 3 match(es) in 9 file(s)"
    context = await run(reg, "grep_search", pattern="return", path="src", context_lines=1)
    first = context["content"]["matches"][0]
    assert first == {
        "path": "src/main.py",
        "line": 4,
        "text": "    return 'Hello'",
        "before": ["def main():"],
        "after": [],
    }


async def test_grep_options(project: Tree) -> None:
    reg = registry(project.base)

    async def lines(**args: Any) -> list[str]:
        result = await run(reg, "grep_search", **args)
        assert result["status"] == "ok", result
        return [f"{m['path']}:{m['line']}" for m in result["content"]["matches"]]

    assert await lines(pattern="hello", path=".") == ["keep.log:1", "src/pkg/util.py:2"]
    assert await lines(pattern="re.urn", path="src", regex=False) == []
    assert await lines(pattern="re.urn", path="src") == ["src/main.py:4", "src/pkg/util.py:2"]
    assert await lines(pattern="return", path="src", file_pattern="util.*") == ["src/pkg/util.py:2"]
    assert await lines(pattern="return", path="src", file_pattern="pkg/*.py") == [
        "src/pkg/util.py:2"
    ]
    assert await lines(pattern="return", path="src", recursive=False) == ["src/main.py:4"]
    assert await lines(pattern="TODO", path="src/pkg/data1.txt") == ["src/pkg/data1.txt:1"]
    assert await lines(pattern="hello", path="keep.log") == ["keep.log:1"]


async def test_grep_limits_and_bad_patterns(project: Tree) -> None:
    (project.base / "many.txt").write_text("x\n" * 50)
    (project.base / "huge.txt").write_text("x" * 2000)
    reg = registry(project.base, max_results=10, max_read_bytes=1000)
    result = await run(reg, "grep_search", pattern="x", path=".")
    assert len(result["content"]["matches"]) == 10 and result["content"]["truncated"]
    # A file over the read limit is searched too, its line longer than the limit in pieces.
    assert result["content"]["matches"][0]["path"] == "huge.txt"
    assert result["content"]["long_lines_split"] == 1
    bad = await run(reg, "grep_search", pattern="(", path=".")
    assert bad["meta"]["code"] == "BAD_ARGUMENTS"
    assert "invalid regular expression" in str(bad["error"])
    missing = await run(reg, "grep_search", pattern="x", path="nope")
    assert missing["meta"]["code"] == "NOT_FOUND"


async def test_a_catastrophic_pattern_is_stopped(
    project: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ai_agent.tools.builtin import search

    monkeypatch.setattr(search, "_GREP_BUDGET", 0.5)
    (project.base / "evil.txt").write_text("a" * 40 + "!\n")
    result = await run(registry(project.base), "grep_search", pattern="(a|aa)+$", path="evil.txt")
    assert result["meta"]["code"] == "TIMEOUT"
    assert "simplify it or pass regex=false" in str(result["error"])


async def test_grep_never_reads_outside(project: Tree) -> None:
    reg = registry(project.base)
    with untouched(project.outside, project.evil):
        everything = await run(reg, "grep_search", pattern=".", path=".")
        assert CANARY not in str(everything)
        for path in ["..", "dir_out", "link_out", "../base-evil", str(project.secret)]:
            result = await run(reg, "grep_search", pattern=".", path=path)
            assert result["meta"]["code"] == "OUTSIDE_SANDBOX", path


def test_glob_and_gitignore_patterns() -> None:
    assert Glob("[abc]?.md").match("ax.md")
    assert not Glob("*.md").match("a/b.md")
    assert Glob("a/**/b").match("a/b") and Glob("a/**/b").match("a/x/y/b")
    assert Glob("[unclosed").match("[unclosed")
    assert not Glob("*").match(".hidden") and Glob(".h*").match(".hidden")
    assert GitIgnore.parse("*.log").ignored(".hidden.log", is_dir=False) is True
    rules = GitIgnore.parse("# comment\n\n/only-top\ndocs/*.tmp\n\\!bang\n")
    assert rules.ignored("only-top", is_dir=False) is True
    assert rules.ignored("x/only-top", is_dir=False) is None
    assert rules.ignored("docs/a.tmp", is_dir=False) is True
    assert rules.ignored("!bang", is_dir=False) is True


async def test_a_walk_stops_at_the_time_budget(
    project: Tree, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The registry's timeout cannot stop the worker thread: a walk of a huge tree must stop itself.
    from ai_agent.tools.builtin import search

    monkeypatch.setattr(search, "_GREP_BUDGET", -1.0)  # spent before the walk begins
    reg = registry(project.base)
    walked = await run(reg, "glob_search", pattern="**/nothing.*")
    assert walked["meta"]["code"] == "TIMEOUT"
    assert "glob_search ran out of time" in str(walked["error"])
    (project.base / "empty").mkdir()
    for i in range(3):  # files without lines: no line is matched, so only the walk can stop
        (project.base / "empty" / f"{i}.txt").write_text("")
    grep = await run(reg, "grep_search", pattern="x", path="empty")
    assert grep["meta"]["code"] == "TIMEOUT"
    assert "narrow the path" in str(grep["error"])


def _opens_but_does_not_list(path: str) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False
    try:
        os.listdir(fd)
    except PermissionError:
        return True
    finally:
        os.close(fd)
    return False


@pytest.mark.skipif(
    not _opens_but_does_not_list("/proc/1/map_files"), reason="needs an unlistable directory"
)
async def test_a_directory_that_opens_but_cannot_be_listed_does_not_end_the_walk() -> None:
    reg = ToolRegistry(search_tools(Sandbox("/", enabled=False), FileToolsConfig(sandbox=False)))
    walked = await run(reg, "glob_search", pattern="/proc/1/**/environ")
    assert walked["status"] == "ok", walked
    assert "proc/1/environ" in walked["content"]["matches"]  # shown relative to the base, /
    inside = await run(reg, "glob_search", pattern="/proc/1/map_files/*")
    assert inside["meta"]["code"] == "OS_ERROR"
    assert "the directory cannot be listed (Permission denied)" in str(inside["error"])


def test_glob_classes_python_would_warn_about_are_read_as_git_reads_them() -> None:
    # "[[", "&&", "~~" and "||" in a class made Python warn (FutureWarning, a future set
    # syntax) on the terminal; each is the character itself, as in git.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = {p: [s for s in "[a&|~b" if Glob(p).match(s)] for p in ("[[a]", "[&&]", "[a||b]")}
        assert found == {"[[a]": ["[", "a"], "[&&]": ["&"], "[a||b]": ["a", "|", "b"]}
        assert GitIgnore.parse("[~~]\n").ignored("x/~", is_dir=False) is True
    # A rule of no path ("." or "./") ignores nothing, as before the rules were read by part.
    assert GitIgnore.parse(".\n./\n").ignored("a", is_dir=True) is None
