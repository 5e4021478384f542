"""The model caller against a hostile or broken OpenAI-compatible server, over real HTTP.

Each test plays one bad answer from a tiny server on 127.0.0.1 (the standard library's, so it
can send what no well-behaved server would: a compression bomb, a line that never ends, usage
that counts backwards, a date past year 9999) and checks that the engine answers with a typed
error that says what to do, or with a reply whose numbers mean what they say.
"""

from __future__ import annotations

import contextlib
import json
import threading
import zlib
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ai_agent.config import ModelBackendSettings
from ai_agent.context import Event
from ai_agent.errors import (
    MalformedToolCallError,
    ModelRateLimitError,
    ModelResponseError,
    ResponseTooLargeError,
)
from ai_agent.models import ChatModelCaller, make_chat_model
from ai_agent.resilience import RetryPolicy
from ai_agent.state import Message
from tests.test_models_http import listening

KEY = "sk-canary-7f3a9c1e5b"
ASK: list[Message] = [Message(role="user", content="What is 2 + 2?")]
TOOLS = [
    {
        "type": "function",
        "function": {"name": name, "description": "A tool.", "parameters": {"type": "object"}},
    }
    for name in ("calculator", "clock")
]

Answer = Callable[[BaseHTTPRequestHandler], None]


class Hostile:
    """A server on 127.0.0.1 that answers every request with ``answer`` (the handler given)."""

    def __init__(self, answer: Answer) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # the stdlib signature
                """Quiet."""

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                # The client may give up on the reply before it ends, as it should.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    answer(self)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[[Answer], Hostile]]:
    started: list[Hostile] = []

    def start(answer: Answer) -> Hostile:
        started.append(Hostile(answer))
        return started[-1]

    yield start
    for server in started:
        server.close()


def head(handler: BaseHTTPRequestHandler, status: int, *headers: tuple[str, str]) -> None:
    handler.send_response(status)
    for name, value in headers:
        handler.send_header(name, value)
    handler.send_header("connection", "close")
    handler.end_headers()


def events(*payloads: dict[str, Any]) -> Answer:
    """A streamed reply of these chunks, then ``[DONE]``."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        head(handler, 200, ("content-type", "text/event-stream"))
        for payload in payloads:
            handler.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
        handler.wfile.write(b"data: [DONE]\n\n")

    return answer


def completion_body(**extra: Any) -> bytes:
    """A reply that is not streamed, answering "4" (``extra``: more top-level keys)."""
    message = {"role": "assistant", "content": "4"}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    reply = {"id": "c1", "object": "chat.completion", "created": 0, "model": "m"}
    return json.dumps({**reply, "choices": [choice], **extra}).encode()


def completion(usage: dict[str, Any]) -> Answer:
    """A reply that is not streamed, with this usage."""
    body = completion_body(usage=usage)

    def answer(handler: BaseHTTPRequestHandler) -> None:
        head(handler, 200, ("content-type", "application/json"), ("content-length", str(len(body))))
        handler.wfile.write(body)

    return answer


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [choice], **extra}  # fmt: skip


def call_part(index: int | None, **fields: Any) -> dict[str, Any]:
    """One tool call's delta; ``index`` None leaves the index out, as some servers do."""
    function = {k: v for k, v in fields.items() if k in ("name", "arguments")}
    part: dict[str, Any] = {"type": "function", "function": function}
    if "id" in fields:
        part["id"] = fields["id"]
    if index is not None:
        part["index"] = index
    return part


def make(
    server: Hostile, *, stream: bool = True, cap: int = 1_000_000, body: int | None = None
) -> ChatModelCaller:
    backend = ModelBackendSettings(
        base_url=server.base_url, api_key=KEY, model="m", timeout=5.0, max_response_chars=cap
    )
    return ChatModelCaller(
        make_chat_model(backend, max_body_bytes=body),
        base_url=backend.base_url,
        retry=RetryPolicy(max_retries=0),
        stream=stream,
        max_response_chars=cap,
        secrets=[KEY],
        total_timeout=20.0,
    )


async def ask(caller: ChatModelCaller, *, tools: bool = False) -> Any:
    seen: list[Event] = []
    try:
        with listening(caller, seen) as reporting:
            return await reporting(list(ASK), TOOLS if tools else [])
    finally:
        await caller.aclose()


# Retry-After ------------------------------------------------------------------------------------


def rate_limited(header: tuple[str, str]) -> Answer:
    """A 429 with OpenAI's error body and one Retry-After header as given."""
    body = b'{"error": {"message": "slow down", "type": "rate_limit"}}'

    def answer(handler: BaseHTTPRequestHandler) -> None:
        head(
            handler,
            429,
            header,
            ("content-type", "application/json"),
            ("content-length", str(len(body))),
        )
        handler.wfile.write(body)

    return answer


async def test_a_retry_after_date_past_any_calendar_is_a_rate_limit_not_a_crash(
    serve: Callable[[Answer], Hostile],
) -> None:
    # A date whose year no datetime can hold: the header is unreadable, so there is no hint.
    answer = rate_limited(("retry-after", "Mon, 01 Jan 99999999999999999999 00:00:00 GMT"))
    with pytest.raises(ModelRateLimitError) as caught:
        await ask(make(serve(answer)))
    assert caught.value.retry_after is None


@pytest.mark.parametrize(
    ("header", "shown"),
    [
        (("retry-after", "1000000000"), "1000000000 s"),
        (("retry-after-ms", "1e303"), "1e+300 s"),
    ],
)
async def test_a_retry_after_past_a_day_is_taken_as_a_day_and_the_error_says_so(
    serve: Callable[[Answer], Hostile], header: tuple[str, str], shown: str
) -> None:
    with pytest.raises(ModelRateLimitError) as caught:
        await ask(make(serve(rate_limited(header))))
    # 10**9 s is 31 years: what the gate shows, and any wait taken from it, is a day at most.
    assert caught.value.retry_after == 86_400
    assert f"It asked to wait {shown} (Retry-After), more than a day" in str(caught.value)
    assert "taken as a day (86400 s)" in str(caught.value)


# Usage -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": -50, "completion_tokens": -3, "total_tokens": -53},
        {"prompt_tokens": 10**30, "completion_tokens": 3, "total_tokens": 10**30 + 3},
        {
            "prompt_tokens": 5,
            "completion_tokens": 3,
            "total_tokens": 8,
            "prompt_tokens_details": {"cached_tokens": -9},
        },
    ],
    ids=["negative", "past-any-window", "negative-cached"],
)
@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_usage_no_server_could_have_counted_is_not_taken(
    serve: Callable[[Answer], Hostile], usage: dict[str, Any], stream: bool
) -> None:
    # Taken, negative counts make negative costs and let a run past its budget; a count past
    # 64 bits cannot even be checkpointed. Without usage the run's own estimate stands.
    answer = events(chunk({"content": "4"}, "stop"), {**chunk({}), "choices": [], "usage": usage})
    reply = await ask(make(serve(answer if stream else completion(usage)), stream=stream))
    assert reply["message"]["content"] == "4"
    assert reply["usage"] == {}


# Tool calls ----------------------------------------------------------------------------------


async def test_streamed_tool_calls_without_an_index_are_separate_calls(
    serve: Callable[[Answer], Hostile],
) -> None:
    # Some servers send each call whole, without an index: two calls, not one.
    answer = events(
        chunk({"role": "assistant", "tool_calls": [call_part(None, id="a", name="calculator",
                                                             arguments='{"expression": "2+2"}')]}),
        chunk({"tool_calls": [call_part(None, id="b", name="clock", arguments="{}")]}),
        chunk({}, "tool_calls"),
    )  # fmt: skip
    reply = await ask(make(serve(answer)), tools=True)
    assert reply["message"]["tool_calls"] == [
        {"id": "a", "name": "calculator", "args": {"expression": "2+2"}},
        {"id": "b", "name": "clock", "args": {}},
    ]


async def test_a_malformed_streamed_call_is_named_by_its_own_index(
    serve: Callable[[Answer], Hostile],
) -> None:
    # Index 1 comes first and is the broken one: the error (and the repair request the model
    # reads) must name its tool, not the tool of whichever call came second.
    answer = events(
        chunk({"role": "assistant", "tool_calls": [call_part(1, id="a", name="calculator",
                                                             arguments='{"expression": ')]}),
        chunk({"tool_calls": [call_part(0, id="b", name="clock", arguments="{}")]}),
        chunk({}, "tool_calls"),
    )  # fmt: skip
    caller = make(serve(answer))
    caller.repair_malformed_calls = False
    with pytest.raises(MalformedToolCallError) as caught:
        await ask(caller, tools=True)
    assert caught.value.tool == "calculator"


# Bodies without bound --------------------------------------------------------------------------


def gzip_bomb(content_type: str, start: bytes, megabytes: int) -> Answer:
    """``start`` then zeros, gzip-compressed: a few kilobytes on the wire, far more decoded."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        head(handler, 200, ("content-type", content_type), ("content-encoding", "gzip"))
        packer = zlib.compressobj(9, zlib.DEFLATED, 31)
        handler.wfile.write(packer.compress(start))
        block = b"0" * (1 << 20)
        for _ in range(megabytes):
            handler.wfile.write(packer.compress(block))
        handler.wfile.write(packer.flush())

    return answer


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_a_compression_bomb_is_refused_at_the_body_limit(
    serve: Callable[[Answer], Hostile], stream: bool
) -> None:
    # 64 MB of zeros in about 64 KB of gzip: the body is refused once it passes its limit,
    # not decoded whole (a 10 GB bomb would take the process down).
    kind, start = ("text/event-stream", b"data: ") if stream else ("application/json", b"")
    server = serve(gzip_bomb(kind, start, 64))
    with pytest.raises(ResponseTooLargeError) as caught:
        await ask(make(server, stream=stream, body=100_000))
    assert str(caught.value) == (
        f"the model server at {server.base_url} sent more than 100000 bytes for one reply; "
        "it is runaway or broken (raise MAMBA_MODEL_BACKEND__MAX_RESPONSE_CHARS if replies "
        "are really this long)"
    )


async def test_a_streamed_line_that_never_ends_is_refused_at_the_body_limit(
    serve: Callable[[Answer], Hostile],
) -> None:
    # One "data:" line of 4 MB: every byte arrives in time, the line just never ends.
    def answer(handler: BaseHTTPRequestHandler) -> None:
        head(handler, 200, ("content-type", "text/event-stream"))
        handler.wfile.write(b'data: {"id": "')
        for _ in range(4):
            handler.wfile.write(b"x" * (1 << 20))

    with pytest.raises(ResponseTooLargeError):
        await ask(make(serve(answer), body=100_000))


async def test_a_compression_the_request_did_not_offer_is_refused(
    serve: Callable[[Answer], Hostile],
) -> None:
    # The engine offers gzip only (which it decodes in bounded pieces); brotli, zstd or an
    # unknown coding is not decoded at all.
    def answer(handler: BaseHTTPRequestHandler) -> None:
        body = b"\x28\xb5\x2f\xfd" + b"\x00" * 64
        head(
            handler,
            200,
            ("content-type", "application/json"),
            ("content-encoding", "zstd"),
            ("content-length", str(len(body))),
        )
        handler.wfile.write(body)

    server = serve(answer)
    with pytest.raises(ModelResponseError) as caught:
        await ask(make(server, stream=False))
    assert str(caught.value) == (
        f"the model server at {server.base_url} sent a body compressed with 'zstd', which "
        "the request did not offer; check the server (or the proxy in front of it)"
    )


async def test_a_gzipped_reply_within_the_limit_is_read(
    serve: Callable[[Answer], Hostile],
) -> None:
    packed = zlib.compress(completion_body(), wbits=31)

    def answer(handler: BaseHTTPRequestHandler) -> None:
        head(
            handler,
            200,
            ("content-type", "application/json"),
            ("content-encoding", "gzip"),
            ("content-length", str(len(packed))),
        )
        handler.wfile.write(packed)

    reply = await ask(make(serve(answer), stream=False, body=100_000))
    assert reply["message"]["content"] == "4"


# What to do -------------------------------------------------------------------------------------


async def test_a_call_cut_at_the_token_limit_says_so(serve: Callable[[Answer], Hostile]) -> None:
    # The arguments do not parse because the server stopped at max_tokens, not because the
    # model wrote bad JSON: the error says which limit to raise.
    answer = events(
        chunk({"role": "assistant", "tool_calls": [call_part(0, id="a", name="calculator",
                                                             arguments='{"expression": "2+')]}),
        chunk({}, "length"),
    )  # fmt: skip
    caller = make(serve(answer))
    caller.repair_malformed_calls = False
    with pytest.raises(MalformedToolCallError) as caught:
        await ask(caller, tools=True)
    assert str(caught.value).endswith(
        "; the reply stopped at the server's token limit (finish reason 'length'): raise "
        "max_tokens (MAMBA_MODEL_BACKEND__MAX_TOKENS)"
    )


async def test_a_redirect_is_not_followed_and_says_where_it_led(
    serve: Callable[[Answer], Hostile],
) -> None:
    # Followed, a redirect would take the request (and its API key) wherever the server says.
    def answer(handler: BaseHTTPRequestHandler) -> None:
        head(handler, 307, ("location", "http://elsewhere.example/v1/chat/completions"),
             ("content-length", "0"))  # fmt: skip

    server = serve(answer)
    with pytest.raises(ModelResponseError) as caught:
        await ask(make(server))
    assert str(caught.value) == (
        f"the model server at {server.base_url} answered 307, a redirect to "
        "'http://elsewhere.example/v1/chat/completions', which is not followed (the API key "
        "would go with it); set MAMBA_MODEL_BACKEND__BASE_URL to the server's own address"
    )
