"""``glob_search`` and ``grep_search`` (spec 5.4.2, 5.4.3), inside the file sandbox.

Both walk with `walk` (symlinks are never entered), honour a
result limit and, by default, the ``.gitignore`` files from the sandbox base down (``.git`` itself
is always skipped then). Both consume the walk as they go: grep searches each file as the walk
meets it, so a tree of a million files is never a list of a million, and a search that reaches
its result limit or time budget walks no further. grep reads each file through its directory's
descriptor a block at a time (`Lines`: a file of any size, never held whole; lines longer than
the read limit in pieces), skips binary files (a NUL byte in the first 8 KiB), and runs the
pattern on each line with a time budget, so a pathological regular expression cannot hold a
worker thread for ever. Each tool is a typed method whose signature and docstring are its schema.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import time
from collections.abc import Generator
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from ai_agent.config import FileToolsConfig
from ai_agent.state import ToolResult
from ai_agent.tools.builtin.files import guarded
from ai_agent.tools.builtin.grep_lines import Found, Lines, Searcher, context_free
from ai_agent.tools.builtin.patterns import GitIgnore, Glob
from ai_agent.tools.builtin.sandbox import Sandbox, SandboxError, Target
from ai_agent.tools.builtin.typed import builtin_spec
from ai_agent.tools.builtin.walk import require_directory, walk
from ai_agent.tools.spec import ToolCategory, ToolSpec

if TYPE_CHECKING:
    import regex

__all__ = ["search_tools"]

_GROUP = "search"
_GLOB_CHARS = frozenset("*?[")
_GREP_BUDGET = 20.0  # seconds; under the registry's default 30 s timeout
# The most pieces a pattern may compile to (see `_pieces`): about 30 MB in the regex module.
MAX_PATTERN_PIECES = 100_000
_COUNT = re.compile(r"\{(\d*)(?:,\d*)?\}")
_HUGE_COUNT = 10**10  # past the regex module's largest count; a longer count is this


def _in_time(deadline: float, tool: str) -> None:
    """Stop a walk that outlives its budget.

    A sync tool runs in a worker thread that the registry's timeout cannot stop: a walk of a
    huge tree (a home directory, or / without the sandbox) would hold that thread for minutes
    after the call was abandoned, and a few such calls would starve every other sync tool.
    """
    if time.monotonic() > deadline:
        raise SandboxError(
            "TIMEOUT",
            f"{tool} ran out of time ({_GREP_BUDGET:g}s); narrow the path, root_dir, pattern "
            "or file_pattern",
        )


def _pieces(source: str) -> int:
    """An upper bound of the pieces the regex module compiles ``source`` into.

    The module unrolls a counted repeat's minimum into copies of what it repeats, at compile
    time, which no match timeout covers: ``a{4000000}`` took 1 GB, and
    ``(?:(?:a{1000}){1000}){1000}`` (27 characters) more memory than the machine had. Each
    character counts one piece; ``{m}``, ``{m,}`` and ``{m,n}`` after a plain character or a
    class add ``m - 1`` copies of it; after anything else (a group's ``)``, a blank or a comment
    in verbose mode, an escape's ``}``) they multiply everything before them, which is at least
    what they repeat. Stops counting past `MAX_PATTERN_PIECES`.

    Examples:
        >>> _pieces("[0-9a-f]{8}"), _pieces("(?:ab){3}")
        (15, 18)
    """
    total, i = 0, 0
    while i < len(source) and total <= MAX_PATTERN_PIECES:
        char = source[i]
        count = _COUNT.match(source, i) if char == "{" else None
        if count is None:
            total += 1
            i += 2 if char == "\\" else 1  # an escaped character is never a count's brace
            continue
        digits = count.group(1)
        least = (int(digits) if len(digits) <= 10 else _HUGE_COUNT) if digits else 0
        before = source[i - 1] if i else ")"
        if before in ")}>" or before.isspace():
            total *= max(least, 1)
        else:
            total += max(least - 1, 0)
        i = count.end()
    return total


class _Ignorer:
    """The .gitignore rules that apply below the sandbox base, loaded lazily per directory.

    Each is parsed within the call's time budget (``deadline``, for ``tool``).
    """

    def __init__(self, box: Sandbox, enabled: bool, deadline: float, tool: str) -> None:
        self.box, self.enabled = box, enabled
        self._rules: dict[str, GitIgnore | None] = {}
        self._check = lambda: _in_time(deadline, tool)

    def _load(self, directory: str) -> GitIgnore | None:
        if directory not in self._rules:
            name = f"{directory}/.gitignore" if directory else ".gitignore"
            try:
                target = self.box.resolve(name, check_extension=False)
                text = self.box.read_bytes(target).decode("utf-8", "replace")
                self._rules[directory] = GitIgnore.parse(text, check=self._check)
            except SandboxError as exc:
                if exc.code == "TIMEOUT":
                    raise
                self._rules[directory] = None
            except OSError:
                self._rules[directory] = None
        return self._rules[directory]

    def ignored(self, rel: str, *, is_dir: bool) -> bool:
        """Whether a path relative to the base is ignored (deeper .gitignore files win)."""
        if not self.enabled:
            return False
        parts = rel.split("/")
        if ".git" in parts:
            return True
        verdict = False
        for depth in range(len(parts)):
            directory = "/".join(parts[:depth])
            rules = self._load(directory)
            if rules is None:
                continue
            decided = rules.ignored("/".join(parts[depth:]), is_dir=is_dir)
            if decided is not None:
                verdict = decided
        return verdict


class SearchTools:
    """glob_search and grep_search over one sandbox."""

    def __init__(self, sandbox: Sandbox, config: FileToolsConfig) -> None:
        self.box = sandbox
        self.config = config

    def _show(self, start: Target, rel: str) -> str:
        return self.box.display(start.path / rel, absolute=self.config.absolute_paths)

    def _base_rel(self, start: Target, rel: str) -> str | None:
        path = start.path / rel
        return path.relative_to(self.box.base).as_posix() if self.box.inside(path) else None

    def _skip(self, ignore: _Ignorer, start: Target, rel: str, *, is_dir: bool) -> bool:
        base_rel = self._base_rel(start, rel)
        return base_rel is not None and ignore.ignored(base_rel, is_dir=is_dir)

    # glob ------------------------------------------------------------------------------------
    def _split(self, pattern: str, root_dir: str) -> tuple[Target, str]:
        """The literal leading directories of the pattern join the root; the rest is matched."""
        parts = pattern.split("/")
        literal: list[str] = []
        for part in parts[:-1]:
            if _GLOB_CHARS & set(part) or part == "**":
                break
            literal.append(part)
        rest = "/".join(parts[len(literal) :])
        if pattern.startswith("/"):
            root = "/" + "/".join(p for p in literal if p)
        else:
            root = os.path.join(root_dir, *literal) if literal else root_dir
        return self.box.resolve(root or ".", field="root_dir", check_extension=False), rest

    @guarded
    def glob_search(
        self,
        pattern: Annotated[str, Field(description="Glob, e.g. src/**/*.py")],
        root_dir: str = ".",
        recursive: bool = True,
    ) -> ToolResult:
        """Find files and directories whose path matches a glob pattern: * and ? within a name,
        ** across directories, [abc] character classes. Directories end in '/'.
        """  # noqa: D205 - the model reads the first paragraph whole, as the tool's description
        if not pattern.strip() or "\x00" in pattern:
            raise SandboxError("BAD_ARGUMENTS", "pattern must be a non-empty glob such as **/*.py")
        deadline = time.monotonic() + _GREP_BUDGET
        start, rest = self._split(pattern, root_dir or ".")
        require_directory(self.box, start.parts, start.given)
        matcher = Glob(rest, recursive=recursive)
        deep = recursive and "**" in rest.split("/")
        depth = None if deep else max(1, len([p for p in rest.split("/") if p]))
        ignore = _Ignorer(self.box, self.config.respect_gitignore, deadline, "glob_search")
        found = Found()
        descend = lambda rel: not self._skip(ignore, start, rel, is_dir=True)  # noqa: E731
        for entry in walk(self.box, start.parts, max_depth=depth, descend=descend):
            _in_time(deadline, "glob_search")
            if not matcher.match(entry.rel):
                continue
            if self._skip(ignore, start, entry.rel, is_dir=entry.kind == "directory"):
                continue
            if len(found.items) >= self.config.max_results:
                found.truncated = True
                break
            suffix = "/" if entry.kind == "directory" else ""
            found.items.append(self._show(start, entry.rel) + suffix)
        return ToolResult(
            status="ok",
            content={
                "matches": found.items,
                "count": len(found.items),
                "truncated": found.truncated,
            },
        )

    # grep ------------------------------------------------------------------------------------
    def _compile(
        self, pattern: str, *, ignore_case: bool, literal: bool, multiline: bool = False
    ) -> regex.Pattern[str]:
        import regex  # only grep needs it; imported on its first call

        if not pattern:
            raise SandboxError("BAD_ARGUMENTS", "pattern must be a non-empty string")
        if (len(pattern) if literal else _pieces(pattern)) > MAX_PATTERN_PIECES:
            raise SandboxError(
                "BAD_ARGUMENTS",
                f"the pattern is too large: with its counted repeats ({{n}}) written out it "
                f"holds more than {MAX_PATTERN_PIECES:,} pieces; search for a shorter text, "
                "or use + or * instead of large counts",
            )
        flags = (regex.IGNORECASE if ignore_case else 0) | (regex.MULTILINE if multiline else 0)
        source = regex.escape(pattern) if literal else pattern
        try:
            return regex.compile(source, flags | regex.VERSION0)
        except regex.error as exc:
            raise SandboxError(
                "BAD_ARGUMENTS",
                f"invalid regular expression: {exc}; pass regex=false to search "
                "for the text literally",
            ) from None

    def _files(
        self, start: Target, file_pattern: str, *, recursive: bool, deadline: float
    ) -> Generator[tuple[Target, str], None, None]:
        """The files of the directory ``start`` to search, each checked as a read, as met.

        A generator: the walk goes on only as the search asks for the next file, so what is held
        is the walk's way down (and each folder's sorted names), never the list of every file, and
        a search that stops (at the result limit, or its time budget) walks no further.
        """
        file_pattern = file_pattern or "*"
        depth = None if recursive else 1
        ignore = _Ignorer(self.box, self.config.respect_gitignore, deadline, "grep_search")
        descend = lambda rel: not self._skip(ignore, start, rel, is_dir=True)  # noqa: E731
        for entry in walk(self.box, start.parts, max_depth=depth, descend=descend):
            _in_time(deadline, "grep_search")
            if entry.kind != "file" or self._skip(ignore, start, entry.rel, is_dir=False):
                continue
            subject = entry.rel if "/" in file_pattern else entry.name
            if not fnmatch.fnmatchcase(subject, file_pattern):
                continue
            try:
                target = self.box.resolve(str(start.path / entry.rel))
            except SandboxError as exc:
                if exc.code != "EXTENSION_DENIED":
                    raise
                continue  # denied_extensions keep a file from every read, a folder's grep too
            yield target, entry.rel

    @guarded
    def grep_search(
        self,
        pattern: str,
        path: Annotated[str, Field(description="A file or a directory.")],
        recursive: bool = True,
        file_pattern: str = "*",
        context_lines: Annotated[int, Field(ge=0)] = 0,
        ignore_case: bool = False,
        regex: bool = True,
    ) -> ToolResult:
        """Search file contents for a regular expression (or literal text with regex=false);
        returns matching lines with paths and line numbers, and context lines when asked.
        Binary files are skipped.
        """  # noqa: D205 - the model reads the first paragraph whole, as the tool's description
        deadline = time.monotonic() + _GREP_BUDGET  # for the walk, the reads and the matching
        compiled = self._compile(pattern, ignore_case=ignore_case, literal=not regex)
        # The same pattern over a block of lines joined by "\n", ^ and $ at each line's ends.
        blockwise = (
            self._compile(pattern, ignore_case=ignore_case, literal=not regex, multiline=True)
            if not regex or context_free(pattern)
            else None
        )
        start = self.box.resolve(path or ".", check_extension=False)
        if self.box.lstat(start) is None:
            raise SandboxError("NOT_FOUND", f"no such file or directory: {start.given!r}")
        named = not os.path.isdir(start.path)
        if named:
            # A file named directly: checked like any read (extensions included).
            targets: Generator[tuple[Target, str], None, None] = (
                one for one in [(self.box.resolve(path), "")]
            )
        else:
            targets = self._files(start, file_pattern, recursive=recursive, deadline=deadline)
        stats = {"files_searched": 0, "skipped_binary": 0, "skipped_hard_links": 0}
        stats["long_lines_split"] = 0
        searcher = Searcher(
            compiled,
            blockwise=blockwise,
            context=min(context_lines, 20),
            deadline=deadline,
            max_results=self.config.max_results,
        )
        found = searcher.found
        stopped: dict[str, str] = {}
        with contextlib.closing(targets):  # a search that stops early closes the walk now
            try:
                for target, rel in targets:
                    _in_time(deadline, "grep_search")  # a file without lines checks no time
                    shown = self.box.display(
                        start.path / rel if rel else start.path,
                        absolute=self.config.absolute_paths,
                    )
                    self._search_file(target, shown, searcher, stats, named=named)
                    if found.truncated:
                        break
            except SandboxError as exc:
                # Out of time with matches found: they are the answer so far, said to be one
                # (a TIMEOUT without them threw away minutes of a big tree's search).
                if exc.code != "TIMEOUT" or not found.items:
                    raise
                found.truncated, stopped["stopped"] = True, f"{exc} (the matches found so far)"
        return ToolResult(
            status="ok",
            content={"matches": found.items, "truncated": found.truncated, **stats, **stopped},
        )

    def _search_file(
        self,
        target: Target,
        shown: str,
        searcher: Searcher,
        stats: dict[str, int],
        *,
        named: bool,
    ) -> None:
        """Search one file, a piece at a time, or count why it is skipped (a ``named`` one is
        refused instead).
        """  # noqa: D205
        try:
            with self.box.open_file(target) as (fd, _):
                lines = Lines(fd, limit=self.box.max_read_bytes)
                if lines.binary:
                    stats["skipped_binary"] += 1
                    return
                stats["files_searched"] += 1
                searcher.run(lines, shown)
                stats["long_lines_split"] += lines.split
        except SandboxError as exc:
            if exc.code == "HARD_LINK" and not named:
                stats["skipped_hard_links"] += 1
                return
            if exc.code in ("NOT_A_FILE", "NOT_FOUND", "PATH_CHANGED") and not named:
                return  # gone or replaced while the folder was walked
            raise


def _summary(name: str) -> Any:
    def line(result: ToolResult) -> str:
        if result["status"] != "ok":
            return f"{name}: {result.get('error')}"
        content = result.get("content") or {}
        more = " (truncated)" if content.get("truncated") else ""
        if content.get("stopped"):
            more = " (out of time: the matches found so far)"
        if name == "glob_search":
            return f"glob_search: {content.get('count', 0)} match(es){more}"
        return (
            f"grep_search: {len(content.get('matches', []))} match(es) in "
            f"{content.get('files_searched', 0)} file(s){more}"
        )

    return line


def search_tools(sandbox: Sandbox, config: FileToolsConfig) -> list[ToolSpec]:
    r"""``glob_search`` and ``grep_search`` over the file sandbox.

    Examples:
        >>> import asyncio, tempfile, pathlib
        >>> from ai_agent.tools import ToolRegistry
        >>> base = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (base / "a.py").write_text("import os\n")
        >>> reg = ToolRegistry(search_tools(Sandbox(base), FileToolsConfig()))
        >>> call = {"id": "1", "name": "grep_search", "args": {"pattern": "os", "path": "."}}
        >>> asyncio.run(reg.execute(call, {}))["content"]["matches"]
        [{'path': 'a.py', 'line': 1, 'text': 'import os'}]
    """
    t = SearchTools(sandbox, config)
    return [
        builtin_spec(
            fn,
            category=ToolCategory.READ_ONLY,
            group=_GROUP,
            format_result=_summary(fn.__name__),
        )
        for fn in (t.glob_search, t.grep_search)
    ]
