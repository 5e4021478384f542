"""Hostile input to the built-in tools: a model's arguments and what the tools read.

A grep pattern of a few characters that compiles to gigabytes, a file encoding whose codec is
quadratic, a denied file reached through its folder, a search backend's compressed reply that
inflates a thousandfold, a tool output of JSON nested past Python's stack: each gets a clear
error (or a result) in bounded time and memory, with real files, a real FIFO and a real HTTP
server on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import os
import tracemalloc
import zlib
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from ai_agent import Agent, ToolCategory, ToolSpec
from ai_agent.config import FileToolsConfig, WebSearchConfig
from ai_agent.state import ToolCall, ToolResult
from ai_agent.testing import FunctionModel
from ai_agent.tools import ToolRegistry
from ai_agent.tools.builtin import search
from ai_agent.tools.builtin.files import file_tools
from ai_agent.tools.builtin.sandbox import Sandbox
from ai_agent.tools.builtin.search import MAX_PATTERN_PIECES, search_tools
from ai_agent.tools.builtin.web_search import web_search_tool
from tests.tools.conftest import Reply

# Generous: a call that hangs fails the test instead of holding it for ever.
_HANG = 120


def registry(base: Path, **config: Any) -> ToolRegistry:
    cfg = FileToolsConfig(**config)
    box = Sandbox(base, denied_extensions=cfg.denied_extensions, max_read_bytes=cfg.max_read_bytes)
    return ToolRegistry([*file_tools(box, cfg), *search_tools(box, cfg)])


async def run(reg: ToolRegistry, tool_name: str, /, **args: Any) -> ToolResult:
    call: ToolCall = {"id": "c", "name": tool_name, "args": args}
    return await asyncio.wait_for(reg.execute(call, {}), _HANG)


def refused(result: ToolResult, code: str, *words: str) -> None:
    assert result["status"] == "error", result
    assert result["meta"]["code"] == code, result
    for word in words:
        assert word in str(result["error"]), result


# grep ------------------------------------------------------------------------------------------


async def test_a_grep_pattern_whose_counted_repeats_unroll_is_refused_before_it_compiles(
    tmp_path: Path,
) -> None:
    # The regex module writes out a counted repeat's minimum at compile time: each of these
    # took 270 MB or more (the same pattern nested once more, 27 characters, took more memory
    # than the machine had), outside the match timeout.
    (tmp_path / "a.txt").write_text(
        "a" * 100 + "\n2024-05-01 id 0123abcd-0123-4567-89ab-0123456789ab\n"
    )
    reg = registry(tmp_path)
    for pattern in (
        "(?:a{1000}){1000}",
        "a{1000000}",
        "(?x)(?:a{1000}) {1000}",  # verbose mode: a blank between the group and its count
        "(?:a{1000})(?#note){1000}",  # an inline comment between them
        "(?:a?){1000000}",  # nothing required, still written out
        "x" * (MAX_PATTERN_PIECES + 1),
    ):
        refused(
            await run(reg, "grep_search", pattern=pattern, path="."), "BAD_ARGUMENTS", "too large"
        )
    literal = "x" * (MAX_PATTERN_PIECES + 1)
    refused(await run(reg, "grep_search", pattern=literal, path=".", regex=False), "BAD_ARGUMENTS")
    # Patterns people write are untouched.
    for pattern in (
        r"\d{4}-\d{2}-\d{2}",
        "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        r"(?:[0-9a-f]{4}-){3}",
        "a{100}",
        r"\{1000000}|id",  # an escaped brace is no count
    ):
        result = await run(reg, "grep_search", pattern=pattern, path=".")
        assert result["status"] == "ok" and result["content"]["matches"], (pattern, result)


async def test_a_grep_of_a_folder_does_not_read_a_file_of_a_denied_extension(
    tmp_path: Path,
) -> None:
    # read_file refused key.pem, and grep_search(".") printed its lines.
    (tmp_path / "key.pem").write_text("-----BEGIN PRIVATE KEY----- hunter2-canary\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "KEY.PEM").write_text("hunter2-canary\n")
    (tmp_path / "notes.txt").write_text("hunter2-canary is the word\n")
    reg = registry(tmp_path, denied_extensions=["pem"])
    refused(await run(reg, "read_file", path="key.pem"), "EXTENSION_DENIED")
    result = await run(reg, "grep_search", pattern="hunter2", path=".")
    assert result["status"] == "ok", result
    assert [m["path"] for m in result["content"]["matches"]] == ["notes.txt"]
    assert "BEGIN PRIVATE KEY" not in str(result)
    refused(await run(reg, "grep_search", pattern="hunter2", path="key.pem"), "EXTENSION_DENIED")


async def test_a_grep_of_a_fifo_named_by_its_path_says_it_is_no_file(tmp_path: Path) -> None:
    # It answered "ok", no match in no file: the model took the FIFO for a file without the text.
    os.mkfifo(tmp_path / "pipe.txt")
    (tmp_path / "real.txt").write_text("needle\n")
    reg = registry(tmp_path)
    refused(await run(reg, "grep_search", pattern="needle", path="pipe.txt"), "NOT_A_FILE")
    found = await run(reg, "grep_search", pattern="needle", path=".")  # in a folder: skipped
    assert [m["path"] for m in found["content"]["matches"]] == ["real.txt"]


async def test_gitignore_files_of_a_megabyte_cannot_hold_a_search_past_its_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each .gitignore from the base down to the searched folder was parsed whole, outside the
    # time budget: about 20 s a megabyte of rules, one after the other, in a worker thread the
    # registry's timeout cannot stop (the call was abandoned, the thread went on for minutes).
    monkeypatch.setattr(search, "_GREP_BUDGET", 1.0)
    rules = "\n".join(f"p{i}/**/x{i}*y" for i in range(50_000)) + "\n"
    folder = tmp_path
    for name in ("a", "b", "c", "d"):
        (folder / ".gitignore").write_text(rules)
        folder = folder / name
        folder.mkdir()
    (folder / "hit.txt").write_text("needle\n")
    reg = registry(tmp_path)
    for tool, args in (
        ("glob_search", {"pattern": "*", "root_dir": "a/b/c/d"}),
        ("grep_search", {"pattern": "needle", "path": "a/b/c/d"}),
    ):
        refused(await run(reg, tool, **args), "TIMEOUT", "ran out of time (1s)")
    ignoring = registry(tmp_path, respect_gitignore=False)
    found = await run(ignoring, "grep_search", pattern="needle", path="a/b/c/d")
    assert [m["path"] for m in found["content"]["matches"]] == ["a/b/c/d/hit.txt"]


# Encodings -------------------------------------------------------------------------------------


async def test_a_codec_of_domain_names_is_refused_as_a_files_encoding(tmp_path: Path) -> None:
    # Python's punycode is quadratic: write_file of 80 kB of text took a minute, reading a 1 MB
    # file most of one, in a worker thread the registry's timeout cannot stop.
    text = "".join(chr(0x400 + i % 600) for i in range(3000))
    (tmp_path / "domains.txt").write_bytes(b"a" * 50_000 + b"-" + b"b" * 50_000)
    reg = registry(tmp_path)
    for encoding in ("punycode", "PUNYCODE", "idna"):
        refused(
            await run(reg, "write_file", path="out.txt", content=text, encoding=encoding),
            "BAD_ARGUMENTS",
            "domain names",
        )
        refused(
            await run(reg, "read_file", path="domains.txt", encoding=encoding),
            "BAD_ARGUMENTS",
            "domain names",
        )
    assert not (tmp_path / "out.txt").exists()
    written = await run(reg, "write_file", path="out.txt", content=text, encoding="utf-16")
    assert written["status"] == "ok", written


# Tool outputs ----------------------------------------------------------------------------------


async def test_a_tool_output_of_json_nested_past_the_stack_is_summarized_not_a_crash() -> None:
    # The extractive summary parsed it as JSON: RecursionError, and agent.run raised it.
    deep = "[" * 200_000 + "]" * 200_000
    dump = ToolSpec(
        "dump", lambda args, ctx: deep, description="A tool.", category=ToolCategory.READ_ONLY
    )
    seen: list[str] = []

    def reply(messages: list[dict[str, Any]], info: dict[str, Any]) -> Any:
        if info["turn"] == 0:
            return {"tool_calls": [{"name": "dump", "args": {}}]}
        seen.append(str(messages[-1]["content"]))
        return "done"

    agent = Agent(model=FunctionModel(reply), tools=[dump], memory_path=None)
    result = await agent.run("go")
    assert result.status == "completed", result.error
    assert "Extractive summary" in seen[-1] and len(seen[-1]) < len(deep)


# web_search ------------------------------------------------------------------------------------


def compressed(body: bytes, encoding: str) -> Reply:
    def reply(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Encoding", encoding)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        try:
            handler.wfile.write(body)
        except OSError:
            return  # the client hung up, as it may

    return reply


def gzip_of_zeros(size: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1 << 20)
    return b"".join(packer.compress(block) for _ in range(size >> 20)) + packer.flush()


async def search_peak(url: str) -> tuple[ToolResult, int]:
    reg = ToolRegistry([web_search_tool(WebSearchConfig(url=url, timeout=30))])
    call: ToolCall = {"id": "c", "name": "web_search", "args": {"query": "q"}}
    tracemalloc.start()
    try:
        result = await reg.execute(call, {})
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


async def test_a_gzip_bomb_from_the_backend_is_inflated_a_bounded_piece_at_a_time(
    serve: Callable[[Reply], str],
) -> None:
    # 64 MiB of zeros in 65 kB: httpx inflated each piece whole before the length was checked.
    bomb = gzip_of_zeros(64 << 20)
    result, peak = await search_peak(serve(compressed(bomb, "gzip")))
    refused(result, "UPSTREAM", "more than 4 MiB")
    assert peak < 24 << 20, f"{peak >> 20} MiB held"
    # A reply compressed as asked is read as ever.
    hits = b'{"results": [{"url": "https://a.example", "title": "A", "content": "x"}]}'
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    fine = await search_peak(serve(compressed(packer.compress(hits) + packer.flush(), "gzip")))
    assert fine[0]["status"] == "ok" and fine[0]["content"]["results"][0]["title"] == "A"
    deflated = await search_peak(serve(compressed(zlib.compress(hits), "deflate")))
    assert deflated[0]["status"] == "ok", deflated[0]


async def test_a_zstd_bomb_the_engine_never_asked_for_is_refused(
    serve: Callable[[Reply], str],
) -> None:
    zstandard = pytest.importorskip("zstandard")
    # 256 MiB of zeros in 8 kB, one piece: httpx decoded zstd whenever zstandard was installed,
    # asked for or not, and held it all (twice) before the length was looked at.
    packer = zstandard.ZstdCompressor(level=3).compressobj(size=256 << 20)
    block = bytes(1 << 20)
    bomb = b"".join(packer.compress(block) for _ in range(256)) + packer.flush()
    result, peak = await search_peak(serve(compressed(bomb, "zstd")))
    assert peak < 24 << 20, f"{peak >> 20} MiB held"
    refused(result, "UPSTREAM", "not asked for")
