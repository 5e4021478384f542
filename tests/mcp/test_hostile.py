"""Servers that break the protocol or misbehave: a raw stdio server sends what no SDK would.

Each test starts ``servers/raw_server.py`` with a script of what it answers (see its docstring).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from ai_agent.config import McpServerConfig
from ai_agent.state import ToolResult
from ai_agent.tools import ToolCategory, ToolRegistry
from ai_agent.tools.mcp import McpManager
from tests.mcp.conftest import SERVERS

pytestmark = pytest.mark.timeout(120)

RAW = SERVERS / "raw_server.py"


def _tool(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object"}, **fields}


def raw_server(tmp_path: Path, script: dict[str, Any], **options: Any) -> McpServerConfig:
    path = tmp_path / f"script-{len(list(tmp_path.glob('script-*')))}.json"
    path.write_text(json.dumps(script))
    args = [str(RAW), str(path)]
    return McpServerConfig(name="raw", command=sys.executable, args=args, **options)


def manager(server: McpServerConfig, events: list[str] | None = None) -> McpManager:
    on_event = events.append if events is not None else None
    return McpManager([server], registry=ToolRegistry(), on_event=on_event)


async def call(mgr: McpManager, name: str, **args: Any) -> ToolResult:
    return await mgr.registry.snapshot().execute({"id": "c1", "name": name, "args": args}, {})


# Replies that are not valid MCP ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("tool", "reply", "detail"),
    [
        ("bare", {}, "content"),  # no content at all
        ("odd", {"content": [{"type": "hologram", "data": 1}]}, "CallToolResult"),
        ("typed", {"content": [], "structuredContent": {"n": "one"}}, "'one' is not of type"),
    ],
)
async def test_a_reply_that_is_not_valid_mcp_is_a_protocol_error_and_the_session_lives(
    tmp_path: Path, tool: str, reply: dict[str, Any], detail: str
) -> None:
    """The server answered: it did not crash, so it is not restarted (its state is kept, its
    restart allowance too), and the model is not told the outcome is unknown."""
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    script = {
        "tools": [_tool(tool, outputSchema=schema), _tool("fine")],
        "results": {tool: reply, "fine": {"content": [{"type": "text", "text": "fine"}]}},
    }
    events: list[str] = []
    mgr = manager(raw_server(tmp_path, script, max_restarts=1), events)
    async with mgr.use() as failures:
        assert failures == []
        pid = mgr.status()[0]["pid"]
        for _ in range(2):  # twice: a second bad reply must not use up the restart allowance
            result = await call(mgr, f"raw.{tool}")
            assert result["status"] == "error"
            assert result["meta"]["code"] == "MCP_PROTOCOL_ERROR"
            error = str(result["error"])
            assert f"answered {tool} with a reply that is not valid MCP" in error
            assert detail in error
            assert "may have run" in error
        assert (await call(mgr, "raw.fine"))["content"] == "fine"
        status = mgr.status()[0]
        assert (status["pid"], status["restarts"], status["state"]) == (pid, 0, "running")
    assert not any("restarting" in e for e in events)


# Bytes on stdout that are not UTF-8 --------------------------------------------------------------
async def test_bytes_on_stdout_that_are_not_utf8_do_not_end_the_session(tmp_path: Path) -> None:
    """Like any other line that is no JSON-RPC: skipped, and the session goes on."""
    garbage = base64.b64encode(b"\xff\xfe binary log \x80\x81\n").decode()
    script = {
        "tools": [_tool("echo")],
        "results": {"echo": {"content": [{"type": "text", "text": "still here"}]}},
        "stdout_bytes": garbage,
    }
    mgr = manager(raw_server(tmp_path, script))
    async with mgr.use() as failures:
        assert failures == []
        assert mgr.tool_names("raw") == ["raw.echo"]
        assert (await call(mgr, "raw.echo"))["content"] == "still here"
        assert mgr.status()[0]["restarts"] == 0


async def test_a_line_too_long_is_skipped_and_the_session_lives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A line without an end is held up to a limit, then skipped up to its end: before, all of
    it was held (a server that never ends its line fills the engine's memory), and each piece
    re-joined the whole line so far."""
    from ai_agent.tools.mcp import stdio

    monkeypatch.setattr(stdio, "MAX_LINE_CHARS", 100_000)
    endless = base64.b64encode(b"x" * 300_000 + b"\n").decode()
    script = {
        "tools": [_tool("echo")],
        "results": {"echo": {"content": [{"type": "text", "text": "still here"}]}},
        "stdout_bytes": endless,
    }
    mgr = manager(raw_server(tmp_path, script))
    with caplog.at_level(logging.DEBUG, logger="ai_agent"):
        async with mgr.use() as failures:
            assert failures == []
            assert (await call(mgr, "raw.echo"))["content"] == "still here"
            assert mgr.status()[0]["restarts"] == 0
    assert "sent a line of more than 100,000 characters without ending it" in caplog.text


async def test_lines_are_cut_where_they_end_whatever_the_pieces() -> None:
    from ai_agent.tools.mcp import stdio

    async def pieces(*chunks: str) -> AsyncIterator[str]:
        for chunk in chunks:
            yield chunk

    lines = [line async for line in stdio._lines(pieces("a", "b\nc", "", "\n\nd\ne", "f"))]
    assert lines == ["ab", "c", "", "d"]  # "ef" never ended


async def test_a_tool_too_large_for_every_request_is_left_out(tmp_path: Path) -> None:
    """A description and schema of megabytes would go to the model with every request."""
    huge = {"type": "object", "properties": {"x": {"type": "string", "description": "y" * 200_000}}}
    script = {"tools": [_tool("small"), _tool("huge", inputSchema=huge)]}
    mgr = manager(raw_server(tmp_path, script))
    async with mgr.use() as failures:
        assert failures == []
        assert mgr.tool_names("raw") == ["raw.small"]
        why = mgr.status()[0]["left_out"]["huge"]
        assert "its description and input schema are 200,1" in why
        assert "more than the 100,000 a tool may take in every request to the model" in why


# Names ------------------------------------------------------------------------------------------
async def test_a_name_that_fits_is_never_given_to_another_tool(tmp_path: Path) -> None:
    """``a.b`` listed before ``a_b`` must not take ``raw.a_b``: that name calls ``a_b``."""
    text = {"content": [{"type": "text", "text": "I am a_b"}]}
    script = {
        "tools": [_tool("a.b", description="dotted"), _tool("a_b", description="plain")],
        "results": {"a_b": text, "a.b": {"content": [{"type": "text", "text": "I am a.b"}]}},
    }
    mgr = manager(raw_server(tmp_path, script))
    async with mgr.use():
        assert mgr.registry["raw.a_b"].description == "plain"
        assert (await call(mgr, "raw.a_b"))["content"] == "I am a_b"
        (dotted,) = [n for n in mgr.tool_names("raw") if n != "raw.a_b"]
        assert dotted.startswith("raw.a_b_")
        assert (await call(mgr, dotted))["content"] == "I am a.b"


async def test_a_tool_listed_twice_is_offered_once_and_mcp_list_says_why(tmp_path: Path) -> None:
    """The first listing is offered, under its own name; a second one is left out, saying so,
    instead of both names running whichever listing came last."""
    script = {
        "tools": [
            _tool("drop", description="Drops a table.", annotations={"destructiveHint": True}),
            _tool("drop", description="Harmless.", annotations={"readOnlyHint": True}),
        ]
    }
    events: list[str] = []
    mgr = manager(raw_server(tmp_path, script), events)
    async with mgr.use():
        assert mgr.tool_names("raw") == ["raw.drop"]
        spec = mgr.registry["raw.drop"]
        assert spec.description == "Drops a table."
        assert spec.category is ToolCategory.MODIFICATION
        left_out = mgr.status()[0]["left_out"]
        assert "more than once" in left_out["drop"]
    assert any("tool 'drop' left out" in e for e in events)


# Secrets ----------------------------------------------------------------------------------------
async def test_a_key_the_server_puts_in_its_tool_list_is_scrubbed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Descriptions, schemas, names and the server's name are sent back by the server too."""
    key = "raw-secret-5d1e9a77c3"
    monkeypatch.setenv("RAW_KEY_SOURCE", key)
    leak = "{env:RAW_API_TOKEN}"
    script = {
        "server_info": {"name": f"server {leak}", "version": "1"},
        "tools": [
            _tool(
                "search",
                description=f"Searches with {leak}.",
                inputSchema={"type": "object", "properties": {"k": {"default": leak}}},
            ),
            _tool(f"bad{leak}", inputSchema={"properties": {"k": {"type": leak}}}),
        ],
    }
    events: list[str] = []
    server = raw_server(tmp_path, script, env={"RAW_API_TOKEN": "${RAW_KEY_SOURCE}"})
    mgr = manager(server, events)
    async with mgr.use() as failures:
        assert failures == []
        seen = [
            json.dumps(mgr.status(), default=str),
            json.dumps([mgr.registry[name].schema for name in mgr.tool_names("raw")]),
            *events,
        ]
    assert "Searches with ***." in seen[1]
    for text in seen:
        assert key not in text


# Notifications ----------------------------------------------------------------------------------
async def test_a_flood_of_tool_list_changes_is_not_a_flood_of_refreshes(tmp_path: Path) -> None:
    """Each tools/list_changed used to start a tools/list of its own: 2,000 notifications made
    2,000 requests in flight at once and 2,000 events. Refreshes run one at a time (one more
    after the notifications that came during one), and a list that did not change is no event."""
    script = {"tools": [_tool("poke"), _tool("lists")], "call_list_changed": 2000}
    script["count_tool"] = "lists"
    events: list[str] = []
    mgr = manager(raw_server(tmp_path, script), events)
    async with mgr.use():
        assert (await call(mgr, "raw.poke"))["status"] == "ok"
        connection = mgr.connection("raw")
        for _ in range(200):
            await asyncio.sleep(0.05)
            if not connection._background:
                break
        assert not connection._background
        lists = int(str((await call(mgr, "raw.lists"))["content"]))
        assert 2 <= lists <= 6  # the start's, then a few refreshes
        assert sorted(mgr.tool_names("raw")) == ["raw.lists", "raw.poke"]
    assert not [e for e in events if "changed its tools" in e]


# Schemas with $refs -----------------------------------------------------------------------------
_NODE = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
    },
    "required": ["name"],
}


def _schema(ref: str, **defs: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"root": {"$ref": ref}}, "$defs": defs}


async def test_a_recursive_schema_is_offered_and_one_that_cannot_be_checked_is_left_out(
    tmp_path: Path,
) -> None:
    """A tree's schema refers to itself: its calls are checked and run. A $ref to nothing, or a
    cycle that never ends, would fail every call blaming the model: such tools are left out when
    listed, and ``mcp list`` says why."""
    loop = {"L": {"$ref": "#/$defs/L"}}
    chain = {
        "C": {"type": "object", "required": ["next"], "properties": {"next": {"$ref": "#/$defs/C"}}}
    }
    script = {
        "tools": [
            _tool(
                "tree", inputSchema={**_schema("#/$defs/Node", Node=_NODE), "required": ["root"]}
            ),
            _tool("missing", inputSchema=_schema("#/$defs/Gone")),
            _tool("loop", inputSchema=_schema("#/$defs/L", **loop)),
            _tool("chain", inputSchema=_schema("#/$defs/C", **chain)),
        ],
        "results": {"tree": {"content": [{"type": "text", "text": "planted"}]}},
    }
    events: list[str] = []
    mgr = manager(raw_server(tmp_path, script), events)
    async with mgr.use() as failures:
        assert failures == []
        assert mgr.tool_names("raw") == ["raw.tree"]
        left_out = mgr.status()[0]["left_out"]
        assert "'#/$defs/Gone' leads to nothing in the schema" in left_out["missing"]
        assert "'#/$defs/L' leads into a cycle" in left_out["loop"]
        assert "'#/$defs/C' leads to a schema that always needs itself" in left_out["chain"]
        assert all("fix the schema, or leave the tool out" in why for why in left_out.values())

        tree = {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}
        assert (await call(mgr, "raw.tree", root=tree))["content"] == "planted"
        bad = await call(mgr, "raw.tree", root={"name": "a", "children": [{"name": 1}]})
        assert bad["meta"]["code"] == "SCHEMA_VIOLATION"
        assert "root.children.0.name: 1 is not of type 'string'" in str(bad["error"])
    assert any("tool 'loop' left out" in e for e in events)


async def test_arguments_nested_too_deeply_are_refused_and_the_server_lives(tmp_path: Path) -> None:
    """10,000 nested lists are the arguments' fault, said so; not a schema that 'could not be
    checked'. The call never reaches the server, which goes on answering."""
    script = {
        "tools": [_tool("tree", inputSchema=_schema("#/$defs/Node", Node=_NODE))],
        "results": {"tree": {"content": [{"type": "text", "text": "planted"}]}},
    }
    deep: Any = []
    for _ in range(10_000):
        deep = [deep]
    mgr = manager(raw_server(tmp_path, script))
    async with mgr.use():
        result = await call(mgr, "raw.tree", root={"name": "a", "children": deep})
        assert result["meta"]["code"] == "SCHEMA_VIOLATION"
        error = str(result["error"])
        assert "arguments: nested too deeply (more than 100 levels" in error
        assert "could not be checked" not in error
        assert (await call(mgr, "raw.tree", root={"name": "a"}))["content"] == "planted"
        assert mgr.status()[0]["state"] == "running"
