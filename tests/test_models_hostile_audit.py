"""The model caller against more hostile model servers, over real HTTP on 127.0.0.1.

Each test failed on the code before its fix: a server's figures no count could be, an error
body of megabytes, a trial call of the circuit breaker that never ends, a streamed tool call
built to make LangChain's parser work for an hour.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from langchain_core.utils.json import parse_partial_json

from ai_agent.config import ModelBackendSettings
from ai_agent.errors import (
    CircuitOpenError,
    ContextOverflowError,
    MalformedToolCallError,
    ModelError,
    ModelResponseError,
    ModelUnavailableError,
    ResponseTooLargeError,
)
from ai_agent.models import ChatModelCaller, make_chat_model
from ai_agent.models.streamed_reply import MAX_CALLS_PER_REPLY
from ai_agent.resilience import CircuitBreaker, RetryPolicy
from ai_agent.state import Message
from ai_agent.testing import Fault, MockOpenAIServer, Reply
from tests import test_models_hostile_server as hostile_server
from tests.test_models_hostile_server import (
    Answer,
    Hostile,
    ask,
    call_part,
    chunk,
    completion_body,
    events,
    head,
    make,
)

# The same fixture as the first hostile-server tests: real servers, closed after each test.
serve = hostile_server.serve

ASK: list[Message] = [Message(role="user", content="What is 2 + 2?")]


def status(code: int, body: bytes, kind: str = "application/json") -> Answer:
    """An error answer with this status and body."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        head(handler, code, ("content-type", kind), ("content-length", str(len(body))))
        handler.wfile.write(body)

    return answer


def overflow(message: str, **figures: Any) -> Answer:
    """llama.cpp's answer to a request longer than its window, with these words and figures."""
    error = {"code": 400, "message": message, "type": "exceed_context_size_error", **figures}
    return status(400, json.dumps({"error": error}).encode())


# A context overflow's figures ------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_an_overflow_whose_count_has_5000_digits_is_an_overflow_without_figures(
    serve: Callable[[Answer], Hostile], stream: bool
) -> None:
    # int() refuses 5,000 digits: the ValueError left the caller, a traceback, not a typed error.
    words = f"request ({'9' * 5000} tokens) exceeds the available context size (2048 tokens)"
    server = serve(overflow(words))
    with pytest.raises(ContextOverflowError) as caught:
        await ask(make(server, stream=stream))
    assert (caught.value.prompt_tokens, caught.value.window) == (None, 2048)
    assert str(caught.value) == (
        f"the request is longer than the model's context window (2048 tokens) at {server.base_url}"
    )


@pytest.mark.parametrize(
    ("figures", "words"),
    [
        ({"n_prompt_tokens": 5000, "n_ctx": 10**400}, "too long"),
        ({"n_prompt_tokens": 10**30, "n_ctx": 2048}, "too long"),
        ({}, "request (5000 tokens) exceeds the available context size (10000000000 tokens)"),
    ],
)
async def test_an_overflow_with_figures_no_server_could_count_has_none(
    serve: Callable[[Answer], Hostile], figures: dict[str, Any], words: str
) -> None:
    # A window of 10**400 reached compaction, which divides by it: OverflowError, a traceback;
    # a count of 10**30 scaled the conversation to nothing.
    server = serve(overflow(words, **figures))
    with pytest.raises(ContextOverflowError) as caught:
        await ask(make(server, stream=False))
    shown = {caught.value.prompt_tokens, caught.value.window} - {None}
    assert shown <= {5000, 2048}
    assert len(str(caught.value)) < 200


# Error bodies -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "kind"), [(500, "text/html"), (400, "text/html"), (429, "application/json")]
)
async def test_an_error_body_of_megabytes_is_quoted_cut_short(
    serve: Callable[[Answer], Hostile], code: int, kind: str
) -> None:
    # The whole body was the message: 3 MB logged at every retry, sent to every listener, stored
    # with the failed step and printed.
    body = b"<html>" + b"x" * 3_000_000 + b"</html>"
    if kind == "application/json":
        body = json.dumps({"error": {"message": "y" * 3_000_000}}).encode()
    server = serve(status(code, body, kind))
    with pytest.raises(ModelError) as caught:
        await ask(make(server, stream=False))
    message = str(caught.value)
    assert len(message) < 3_000
    assert message.startswith(f"the model server at {server.base_url}")
    assert "more characters)" in message


# The circuit breaker ----------------------------------------------------------------------------


async def test_a_trial_call_cancelled_while_the_server_hangs_lets_the_next_call_try() -> None:
    # A cancelled trial was neither a success nor a failure: the breaker kept it as running
    # for ever, and every later call of the Agent failed fast ("for another 0s").
    now = [0.0]
    with MockOpenAIServer([Fault.unavailable(), Fault.hang(), Reply(text="4")]) as server:
        backend = ModelBackendSettings(base_url=server.base_url, model="m", timeout=30)
        breaker = CircuitBreaker(server.base_url, threshold=1, cooldown=10, clock=lambda: now[0])
        caller = ChatModelCaller(
            make_chat_model(backend),
            base_url=server.base_url,
            retry=RetryPolicy(max_retries=0),
            breaker=breaker,
        )
        try:
            with pytest.raises(ModelUnavailableError):
                await caller(list(ASK), [])
            with pytest.raises(CircuitOpenError):
                await caller(list(ASK), [])
            now[0] = 11.0  # the cooldown is over: the next call is the trial
            trial = asyncio.create_task(caller(list(ASK), []))
            while len(server.requests) < 2:  # noqa: ASYNC110 - the trial reached the server
                await asyncio.sleep(0.01)
            trial.cancel()
            with pytest.raises(asyncio.CancelledError):
                await trial
            reply = await caller(list(ASK), [])
            assert reply["message"]["content"] == "4"
            assert breaker.state == "closed"
        finally:
            await caller.aclose()


# Streamed tool calls -----------------------------------------------------------------------------


def sse(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def pieces(count: int) -> Answer:
    """One call to calculator whose arguments ``{"e": "aaa..."}`` come a character at a time."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        head(handler, 200, ("content-type", "text/event-stream"))
        start = call_part(0, id="call_1", name="calculator", arguments='{"e": "')
        handler.wfile.write(sse(chunk({"role": "assistant", "tool_calls": [start]})))
        piece = sse(chunk({"tool_calls": [call_part(0, arguments="a")]}))
        handler.wfile.write(piece * count)
        handler.wfile.write(sse(chunk({"tool_calls": [call_part(0, arguments='"}')]})))
        handler.wfile.write(sse(chunk({}, "tool_calls")) + b"data: [DONE]\n\n")

    return answer


@pytest.fixture
def partially_parsed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Characters LangChain's partial JSON parser is given, counted as the test runs."""
    parsed = [0]

    def counting(text: str, *, strict: bool = False) -> Any:
        parsed[0] += len(text)
        return parse_partial_json(text, strict=strict)

    monkeypatch.setattr("langchain_core.messages.ai.parse_partial_json", counting)
    return parsed


async def test_a_call_streamed_in_many_pieces_is_parsed_once_not_at_every_piece(
    serve: Callable[[Answer], Hostile], partially_parsed: list[int]
) -> None:
    # The caller added each part to the reply so far, and LangChain parsed the arguments so far
    # again at each: characters parsed grew as the square of the pieces (32,000 took a minute).
    count = 6_000
    reply = await ask(make(serve(pieces(count))), tools=True)
    assert reply["message"]["tool_calls"][0]["args"] == {"e": "a" * count}
    assert partially_parsed == [0]  # read once, strictly, by the engine (the next test: why)


async def test_streamed_arguments_that_are_not_json_are_never_given_to_the_partial_parser(
    serve: Callable[[Answer], Hostile], partially_parsed: list[int]
) -> None:
    # LangChain's partial parser retries json.loads one character shorter at a time: text that
    # is not JSON costs the square of its length (20,000 characters held the event loop 4.7 s),
    # when LangChain built the part and again when it merged the reply, before any deadline.
    garbage = "a" * 5_000
    part = call_part(0, id="call_1", name="calculator", arguments=garbage)
    server = serve(events(chunk({"role": "assistant", "tool_calls": [part]}, "tool_calls")))
    caller = make(server)
    caller.repair_malformed_calls = False
    with pytest.raises(MalformedToolCallError) as caught:
        await ask(caller, tools=True)
    assert caught.value.tool == "calculator"
    assert "Expecting value" in str(caught.value)
    assert partially_parsed == [0]


@pytest.mark.parametrize(
    "parts",
    [
        [call_part(0, id="c", name="calculator", arguments=5)],
        [{"index": 0, "id": "c", "function": "calculator"}],
        ["calculator"],
        [call_part(0, id="c", name="calculator", arguments="{}"), {"index": 1}],
    ],
    ids=["arguments-a-number", "function-a-text", "call-a-text", "call-without-function"],
)
async def test_a_streamed_call_of_the_wrong_shape_is_a_reply_that_cannot_be_used(
    serve: Callable[[Answer], Hostile], parts: list[Any]
) -> None:
    # The arguments are taken out of calls of the right shape only; the others reach LangChain
    # as the server sent them, and are refused there as before, never taken for a call.
    server = serve(events(chunk({"role": "assistant", "tool_calls": parts}, "tool_calls")))
    with pytest.raises(ModelResponseError, match="could not be used"):
        await ask(make(server), tools=True)


async def test_streamed_calls_at_one_index_with_different_ids_are_separate_calls(
    serve: Callable[[Answer], Hostile],
) -> None:
    # Some servers give every call index 0; the ids tell the calls apart, as LangChain's merge
    # does. A part without an id continues the latest call at its index.
    answer = events(
        chunk({"role": "assistant", "tool_calls": [call_part(0, id="a", name="calculator",
                                                             arguments='{"expression": ')]}),
        chunk({"tool_calls": [call_part(0, arguments='"2+2"}')]}),
        chunk({"tool_calls": [call_part(0, id="b", name="clock", arguments="{}")]}),
        chunk({}, "tool_calls"),
    )  # fmt: skip
    reply = await ask(make(serve(answer)), tools=True)
    assert reply["message"]["tool_calls"] == [
        {"id": "a", "name": "calculator", "args": {"expression": "2+2"}},
        {"id": "b", "name": "clock", "args": {}},
    ]


def many_calls(count: int, *, stream: bool) -> Answer:
    """A reply of ``count`` calls to calculator, each with its own index and id."""
    calls = [
        call_part(i, id=f"call_{i}", name="calculator", arguments='{"expression": "1"}')
        for i in range(count)
    ]

    def answer(handler: BaseHTTPRequestHandler) -> None:
        if not stream:
            message = {"role": "assistant", "content": None, "tool_calls": calls}
            choice = {"index": 0, "message": message, "finish_reason": "tool_calls"}
            body = completion_body(choices=[choice])
            head(handler, 200, ("content-type", "application/json"),
                 ("content-length", str(len(body))))  # fmt: skip
            handler.wfile.write(body)
            return
        head(handler, 200, ("content-type", "text/event-stream"))
        for call in calls:
            handler.wfile.write(sse(chunk({"tool_calls": [call]})))
        handler.wfile.write(sse(chunk({}, "tool_calls")) + b"data: [DONE]\n\n")

    return answer


@pytest.mark.parametrize("stream", [True, False])
async def test_a_reply_of_thousands_of_tool_calls_is_refused(
    serve: Callable[[Answer], Hostile], stream: bool
) -> None:
    # 2,000 streamed calls (340 kB) took 29 s of merging, 8,000 more than five minutes; the
    # calls that came were all handed on, each to be answered and stored.
    server = serve(many_calls(1_000, stream=stream))
    with pytest.raises(ResponseTooLargeError) as caught:
        await ask(make(server, stream=stream), tools=True)
    assert f"more than {MAX_CALLS_PER_REPLY} tool calls" in str(caught.value)


@pytest.mark.parametrize("stream", [True, False])
async def test_a_reply_of_as_many_calls_as_allowed_is_read(
    serve: Callable[[Answer], Hostile], stream: bool
) -> None:
    server = serve(many_calls(MAX_CALLS_PER_REPLY, stream=stream))
    reply = await ask(make(server, stream=stream), tools=True)
    assert len(reply["message"]["tool_calls"]) == MAX_CALLS_PER_REPLY


@pytest.mark.parametrize("reasons", [("length", "length"), ("stop", "length")])
async def test_a_finish_reason_sent_twice_is_the_last_one_not_the_two_joined(
    serve: Callable[[Answer], Hostile], reasons: tuple[str, str]
) -> None:
    # LangChain's merge joins the text of every part's reason: "lengthlength", and a reply cut
    # at the token limit was taken for one the model ended.
    first, last = reasons
    text = chunk({"role": "assistant", "content": "The answer is"}, first)
    reply = await ask(make(serve(events(text, chunk({}, last)))))
    assert reply["finish_reason"] == "length"
    assert reply["message"]["content"] == "The answer is"
