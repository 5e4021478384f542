"""Runs the code examples of a Markdown page, in order, the way a reader would.

A page's fenced blocks are taken in order:

- ``python``: run in one namespace per page. A block with a top-level ``await`` runs on the page's
  event loop (one loop for the whole page, so an object made in one block can be awaited in the
  next); any other block runs as plain code, outside the loop, so ``agent.run_sync(...)`` works as
  it does in a script. When the next block is ``text``, it is exactly what the block printed
  (``...`` matches anything, as in doctest).
- ``bash`` / ``console`` / ``shell``: every ``ai-agent ...`` command (also after ``uv run``) is
  parsed by the real CLI parser, so a renamed option fails. Commands that need nothing outside the
  test run too, by calling ``main(argv)``: those with ``--model scripted:FILE``, a plan queued with
  ``--queue``, and the commands that only read the database (``runs``, ``show``, ``history``,
  ``replay`` without ``--live``...).
  A command needing a real model server, the local model, PostgreSQL, or holding a placeholder
  (``THREAD``, ``$DB``, ``...``) is parsed only. The exit code must be 0 unless the line's comment
  says ``exit N``; a following ``text`` block is what the commands printed. Other shell lines
  (``pip``, ``uv``, ``ollama``...) are not run.
- ``json`` / ``yaml`` / ``toml`` blocks must parse; one with ``title="NAME"`` is written to the
  file ``NAME`` in the working directory, for later blocks to use (a script, a config file), and so
  is an ``ini`` block with a title (a ``.env`` file).

The page runs in the test's private working directory; the environment variables and the working
directory are put back as they were when the page is done.

A block opts out only visibly: a python or bash block whose first line is
``# not run as a test: <reason>`` is skipped, and the reason must say why (at least a few words).
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import doctest
import inspect
import io
import json
import os
import re
import shlex
import textwrap
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ai_agent.cli import _argv, _parser, main

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_TITLE = re.compile(r'title="([^"]+)"')
OPT_OUT = re.compile(r"^#\s*not run as a test:\s*(?P<reason>.+)$")
_EXIT = re.compile(r"#.*\bexit(?: code)? (?P<code>\d+)")
# Commands that only read what earlier commands stored: safe to run without a model server.
_OFFLINE_COMMANDS = {
    "runs", "show", "history", "tools", "graph", "plans", "output", "export", "prune", "fork",
    "test-from-run", "eval",
}  # fmt: skip
_PLACEHOLDER = re.compile(r"\b(?:THREAD|CHECKPOINT|CP|URL|CALL_ID|TOOL|DAYS|N|FILE)\b|\$|\.\.\.|<")
_NEEDS_OUTSIDE = re.compile(r"--backend local|postgresql://|--base-url|--live\b|--app\b")
_PYTHON = {"python", "py", "pycon"}
_SHELL = {"bash", "console", "shell", "sh"}
_DATA = {"json", "yaml", "yml", "toml", "ini"}


@dataclass
class Block:
    """One fenced block: its language, attributes, code and where it starts."""

    lang: str
    info: str
    code: str
    line: int

    @property
    def title(self) -> str | None:
        found = _TITLE.search(self.info)
        return found.group(1) if found else None

    @property
    def opt_out(self) -> str | None:
        first = self.code.lstrip().splitlines()[0] if self.code.strip() else ""
        found = OPT_OUT.match(first)
        return found.group("reason").strip() if found else None


@dataclass
class Report:
    """What running one page did."""

    python: int = 0
    shell_run: int = 0
    shell_parsed: int = 0
    files: int = 0
    outputs: int = 0
    skipped: list[str] = field(default_factory=list)


def blocks(text: str) -> list[Block]:
    """The fenced code blocks of a Markdown text, in order (nested in lists too)."""
    out: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opened = _FENCE.match(lines[i])
        if not opened or not opened.group("info").strip():
            i += 1
            continue
        fence = opened.group("fence")
        info = opened.group("info").strip()
        body: list[str] = []
        j = i + 1
        while j < len(lines) and lines[j].strip() != fence:
            body.append(lines[j])
            j += 1
        code = textwrap.dedent("\n".join(body)) + "\n" if body else ""
        lang = info.split()[0].strip("{}.").lower()
        out.append(Block(lang=lang, info=info, code=code, line=i + 1))
        i = j + 1
    return out


def fenced(page: Path) -> list[tuple[str, str]]:
    """(language, code) of a page's fenced blocks, for a test that walks a page its own way."""
    return [(b.lang, b.code) for b in blocks(page.read_text(encoding="utf-8"))]


async def run_block(code: str, where: str, namespace: dict[str, Any]) -> str:
    """Run a python block (top-level ``await`` allowed) in ``namespace``; what it printed."""
    compiled = compile(code, where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        outcome = eval(compiled, namespace)
        if outcome is not None:
            await outcome
    return out.getvalue()


def shell_commands(code: str) -> Iterator[str]:
    """The ``ai-agent`` commands of a shell block (continuation lines joined, ``&&`` split)."""
    logical = code.replace("\\\n", " ")
    for raw in logical.splitlines():
        for part in raw.split("&&"):
            line = part.strip()
            if line.startswith("uv run ") and " ai-agent" in line:
                line = line[line.index(" ai-agent") + 1 :]  # uv run [--extra local] ai-agent ...
            if line.startswith("ai-agent ") or line == "ai-agent":
                yield line


def _split(line: str) -> tuple[list[str], int]:
    """The argv of a command line (its comment removed) and the exit code it expects."""
    expected = _EXIT.search(line)
    argv = shlex.split(line, comments=True)[1:]
    return argv, int(expected.group("code")) if expected else 0


def runnable(line: str) -> bool:
    """Whether a command needs nothing outside the test (see the module docstring)."""
    command = line.split("#", 1)[0]
    if _PLACEHOLDER.search(command) or _NEEDS_OUTSIDE.search(command):
        return False
    argv = shlex.split(command)[1:]
    if "--model" in argv and argv[argv.index("--model") + 1].startswith("scripted:"):
        return True
    if "--queue" in argv:  # a queued plan is checked and stored; no model is asked
        return True
    return bool(argv) and (argv[0] in _OFFLINE_COMMANDS or argv[0] == "replay")


def check_parses(argv: list[str], where: str) -> None:
    """The CLI parser accepts ``argv`` (its options exist and their values are valid)."""
    parser, commands = _parser()
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # --help prints, then exits 0
            parser.parse_args(_argv(argv, commands))
    except SystemExit as exc:
        if exc.code:
            raise AssertionError(f"{where}: the CLI rejects `ai-agent {shlex.join(argv)}`") from exc


def same_output(want: str, got: str) -> bool:
    """Doctest's comparison with ``...`` matching anything; trailing spaces do not count."""

    def norm(text: str) -> str:
        return "\n".join(line.rstrip() for line in text.strip("\n").splitlines()) + "\n"

    checker = doctest.OutputChecker()
    return checker.check_output(norm(want), norm(got), doctest.ELLIPSIS)


class PageRunner:
    """Runs one page's blocks in order; see the module docstring."""

    def __init__(self, page: Path, *, name: str) -> None:
        self.page = page
        self.name = name
        self.namespace: dict[str, Any] = {"__name__": "__docs_example__"}
        self.report = Report()

    def run(self) -> Report:
        found = blocks(self.page.read_text(encoding="utf-8"))
        loop = asyncio.new_event_loop()
        environ, cwd = dict(os.environ), Path.cwd()
        try:
            for index, block in enumerate(found):
                following = found[index + 1] if index + 1 < len(found) else None
                want = following.code if following and following.lang == "text" else None
                self._block(block, want, loop)
        finally:
            _close(loop)
            os.chdir(cwd)
            os.environ.clear()
            os.environ.update(environ)
        return self.report

    def _where(self, block: Block) -> str:
        return f"{self.name}:{block.line}"

    def _block(self, block: Block, want: str | None, loop: asyncio.AbstractEventLoop) -> None:
        where = self._where(block)
        reason = block.opt_out
        if reason is not None:
            assert len(reason.split()) >= 3, f"{where}: say why the block is not run"
            self.report.skipped.append(f"{where}: {reason}")
            return
        got: str | None
        if block.lang in _PYTHON:
            got = self._python(block, loop)
        elif block.lang in _SHELL:
            got = self._shell(block)
        elif block.lang in _DATA:
            self._data(block)
            return
        else:
            return
        if want is not None and got is not None:
            assert same_output(want, got), f"{where} printed:\n{got}\nthe page shows:\n{want}"
            self.report.outputs += 1

    def _python(self, block: Block, loop: asyncio.AbstractEventLoop) -> str:
        where = self._where(block)
        assert not block.code.lstrip().startswith(">>>"), (
            f"{where}: a doctest-style block; write it as a script (or run it with doctest)"
        )
        compiled = compile(
            block.code, where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True
        )
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            if compiled.co_flags & inspect.CO_COROUTINE:
                loop.run_until_complete(eval(compiled, self.namespace))
            else:
                exec(compiled, self.namespace)
        self.report.python += 1
        return out.getvalue()

    def _shell(self, block: Block) -> str | None:
        where = self._where(block)
        out = io.StringIO()
        ran = False
        for line in shell_commands(block.code):
            argv, expected = _split(line)
            check_parses(argv, where)
            if not runnable(line):
                self.report.shell_parsed += 1
                continue
            with contextlib.redirect_stdout(out):
                code = main(argv)
            assert code == expected, f"{where}: `{line}` exited {code}, the page says {expected}"
            self.report.shell_run += 1
            ran = True
        return out.getvalue() if ran else None

    def _data(self, block: Block) -> None:
        where = self._where(block)
        if block.lang == "json":
            json.loads(block.code)
        elif block.lang == "toml":
            tomllib.loads(block.code)
        elif block.lang != "ini":
            yaml.safe_load(block.code)
        if block.title:
            target = Path(block.title)
            assert not target.is_absolute() and ".." not in target.parts, where
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.code, encoding="utf-8")
            self.report.files += 1


def _close(loop: asyncio.AbstractEventLoop) -> None:
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.run_until_complete(loop.shutdown_default_executor())
    loop.close()
