"""The HTTP hooks on their own, through httpx's mock transport (sync and async clients)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx

from ai_agent.config import LoggingConfig
from ai_agent.observability import Redactor
from ai_agent.observability.httplog import HttpLog
from tests.observability.conftest import Logs

SECRET = "sk-canary-33aa44bb"
BODIES = LoggingConfig(include_request_body=True, include_response_body=True, body_size_limit=64)


BODY = f'{{"echo": "key {SECRET}", "pad": "{"p" * 200}"}}'.encode()


def answer(request: httpx.Request) -> httpx.Response:
    """A reply whose body is streamed, as from a real server (not read in advance)."""

    def pieces() -> Iterator[bytes]:
        yield BODY[:50]
        yield BODY[50:]

    return httpx.Response(200, content=pieces())


def answer_async(request: httpx.Request) -> httpx.Response:
    async def pieces() -> AsyncIterator[bytes]:
        yield BODY[:50]
        yield BODY[50:]

    return httpx.Response(200, content=pieces())


def test_the_sync_client_logs_bodies_cut_and_redacted(logs: Logs) -> None:
    logs.start("DEBUG")
    hooks = HttpLog(BODIES, Redactor(secrets=[SECRET])).sync_event_hooks()
    with httpx.Client(transport=httpx.MockTransport(answer), event_hooks=hooks) as client:
        response = client.post("http://model.test/v1/chat?key=abc", json={"q": SECRET})
    assert (
        response.content == BODY
    )  # the caller still reads the whole body  # the caller still reads the whole body
    messages = [r["message"] for r in logs.records()]
    assert messages[0].startswith("request POST http://model.test/v1/chat?key=*** headers ")
    assert messages[1] == 'request body: {"q":"***"}'
    assert messages[2].startswith("POST http://model.test/v1/chat?key=*** -> 200 (")
    assert messages[4].startswith('response body: {"echo": "key ***", "pad": "ppp')
    assert messages[4].endswith(f"... ({len(BODY)} bytes in all)")
    assert SECRET not in logs.text


async def test_the_async_client_skips_a_streamed_upload_and_tees_the_reply(logs: Logs) -> None:
    logs.start("DEBUG")
    hooks = HttpLog(BODIES, Redactor()).event_hooks()

    async def upload() -> AsyncIterator[bytes]:
        yield b"chunk"

    transport = httpx.MockTransport(answer_async)
    async with (
        httpx.AsyncClient(transport=transport, event_hooks=hooks) as client,
        client.stream("POST", "http://model.test/v1", content=upload()) as response,
    ):
        chunks = [c async for c in response.aiter_bytes()]
    assert b"".join(chunks).startswith(b'{"echo"')
    messages = [r["message"] for r in logs.records()]
    assert not any(m.startswith("request body") for m in messages)
    assert sum(m.startswith("response body: ") for m in messages) == 1


async def test_at_info_only_the_request_line_is_logged(logs: Logs) -> None:
    logs.start("INFO")
    hooks = HttpLog(BODIES, Redactor()).event_hooks()
    transport = httpx.MockTransport(answer_async)
    async with httpx.AsyncClient(transport=transport, event_hooks=hooks) as c:
        await c.get("http://model.test/v1/models")
    (record,) = logs.records()
    assert record["status"] == 200 and record["method"] == "GET"
    assert record["url"] == "http://model.test/v1/models"


def test_without_a_config_no_bodies_are_logged(logs: Logs) -> None:
    logs.start("DEBUG")
    hooks = HttpLog(None, Redactor()).sync_event_hooks()
    with httpx.Client(transport=httpx.MockTransport(answer), event_hooks=hooks) as client:
        client.post("http://model.test/v1", json={"q": 1})
    assert "body" not in logs.text and len(logs.records()) == 3
