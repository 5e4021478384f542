"""Hostile search backends: a reply served by a real HTTP server on 127.0.0.1 (standing in for a
SearXNG instance) cannot take the engine's memory, hand the model non-web links, or fill its
context with one hit."""

from __future__ import annotations

import json
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from ai_agent.config import WebSearchConfig
from ai_agent.state import ToolCall, ToolResult
from ai_agent.tools import ToolRegistry
from ai_agent.tools.builtin.web_backends import SNIPPET_CHARS, TITLE_CHARS
from ai_agent.tools.builtin.web_search import MAX_REPLY_BYTES, web_search_tool
from tests.tools.conftest import Reply


def json_reply(body: Any) -> Reply:
    def reply(handler: BaseHTTPRequestHandler) -> None:
        data = json.dumps(body).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    return reply


async def search(url: str, **args: Any) -> ToolResult:
    reg = ToolRegistry([web_search_tool(WebSearchConfig(url=url, timeout=10))])
    call: ToolCall = {"id": "c", "name": "web_search", "args": {"query": "q", **args}}
    return await reg.execute(call, {})


async def test_an_endless_body_is_cut_off_not_read_into_memory(
    serve: Callable[[Reply], str],
) -> None:
    sent: list[int] = []

    def endless(handler: BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.end_headers()  # no length: the body runs until the connection closes
        chunk = b'{"results": [' + b" " * 65_536
        try:
            while sum(sent) < 4 * MAX_REPLY_BYTES:
                handler.wfile.write(chunk)
                sent.append(len(chunk))
        except OSError:
            return  # the client hung up, as it should

    result = await search(serve(endless))
    assert result["status"] == "error"
    assert result["meta"]["code"] == "UPSTREAM"
    assert "more than 4 MiB" in str(result["error"])
    assert sum(sent) < 4 * MAX_REPLY_BYTES  # it stopped reading long before the end


async def test_only_web_links_are_results(serve: Callable[[Reply], str]) -> None:
    hits = [
        {"url": "javascript:alert(1)", "title": "click", "content": "x"},
        {"url": "file:///etc/passwd", "title": "file", "content": "x"},
        {"url": "data:text/html,<script>x</script>", "title": "data", "content": "x"},
        {"url": {"href": "https://nested.example"}, "title": "object", "content": "x"},
        {"url": "https://good.example/a", "title": "good", "content": "fine"},
        {"title": "no url"},
    ]
    result = await search(serve(json_reply({"results": hits})))
    assert result["status"] == "ok", result
    assert [h["url"] for h in result["content"]["results"]] == ["https://good.example/a"]


async def test_one_hit_cannot_fill_the_reply(serve: Callable[[Reply], str]) -> None:
    hits = [
        {"url": "https://big.example", "title": "T" * 100_000, "content": "s " * 500_000},
        {"url": "https://small.example", "title": "small", "content": "the answer"},
    ]
    result = await search(serve(json_reply({"results": hits})))
    first, second = result["content"]["results"]
    assert len(first["title"]) <= TITLE_CHARS and len(first["snippet"]) <= SNIPPET_CHARS
    assert second == {"title": "small", "url": "https://small.example", "snippet": "the answer"}


async def test_json_nested_past_the_stack_is_a_clear_error(serve: Callable[[Reply], str]) -> None:
    def deep(handler: BaseHTTPRequestHandler) -> None:
        data = b"[" * 200_000 + b"]" * 200_000
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    result = await search(serve(deep))
    assert result["meta"]["code"] == "UPSTREAM"
    assert "did not answer with JSON" in str(result["error"])
