"""The model caller against a real HTTP server: the real ChatOpenAI client and the mock server.

Every fault the issue names (429 with Retry-After, 500, 503, slow, hang, cut stream, empty
choices, malformed tool arguments, giant replies) is played by the mock server over real HTTP;
respx covers what the client puts on the wire.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import respx

from ai_agent.config import ErrorRecoveryConfig, ModelBackendSettings
from ai_agent.context import Event, ModelEvents
from ai_agent.errors import (
    CircuitOpenError,
    ContextOverflowError,
    EmptyResponseError,
    MalformedToolCallError,
    ModelAuthError,
    ModelRateLimitError,
    ModelResponseError,
    ModelUnavailableError,
    ResponseTooLargeError,
    StreamInterruptedError,
)
from ai_agent.models import ChatModelCaller, classify_model_error, make_chat_model
from ai_agent.resilience import CircuitBreaker, RetryPolicy
from ai_agent.state import Message
from ai_agent.testing import Fault, MockOpenAIServer, Reply

KEY = "sk-canary-7f3a9c1e5b"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "calculator",
            "description": "Evaluate arithmetic.",
            "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}},
        },
    }
]
ASK: list[Message] = [Message(role="user", content="What is 2 + 2?")]


@pytest.fixture
def server() -> Iterator[MockOpenAIServer]:
    with MockOpenAIServer(api_key=KEY) as mock:
        yield mock


class Sleeps:
    """Records retry waits instead of sleeping (the real-time test below sleeps for real)."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def make_caller(
    server: MockOpenAIServer,
    *,
    retries: int = 3,
    timeout: float = 5.0,
    sleeps: Sleeps | None = None,
    breaker: CircuitBreaker | None = None,
    stream: bool = True,
    cap: int = 1_000_000,
    retryable: tuple[str, ...] = ("RateLimitError", "ServiceUnavailable", "Timeout"),
) -> ChatModelCaller:
    backend = ModelBackendSettings(
        base_url=server.base_url, api_key=KEY, model="mock-model", timeout=timeout
    )
    return ChatModelCaller(
        make_chat_model(backend),
        base_url=backend.base_url,
        retry=RetryPolicy(max_retries=retries, initial_backoff=0.5, retryable=retryable),
        breaker=breaker,
        stream=stream,
        max_response_chars=cap,
        secrets=[KEY],
        sleep=sleeps or Sleeps(),
    )


@contextmanager
def listening(
    caller: ChatModelCaller, events: list[Event], *, tokens: bool = True
) -> Iterator[ChatModelCaller]:
    """The caller reporting to ``events`` (as dicts), as a run binds it and its draft opens them."""
    model_events = ModelEvents(lambda event: events.append(event.progress()), tokens=tokens)  # type: ignore[arg-type]
    with model_events.during(1):
        yield caller.reporting(model_events)


async def call(caller: ChatModelCaller, *, listen: bool = True) -> tuple[Any, list[Event]]:
    events: list[Event] = []
    with listening(caller, events, tokens=listen) as reporting:
        reply = await reporting(list(ASK), TOOLS)
    return reply, events


# Replies -------------------------------------------------------------------------------------


async def test_streamed_text_arrives_as_deltas_and_assembles_with_usage(
    server: MockOpenAIServer,
) -> None:
    server.add(Reply(text="2 + 2 is 4.", usage={"prompt_tokens": 31, "completion_tokens": 6}))
    reply, events = await call(make_caller(server))
    deltas = [e["detail"] for e in events if e["type"] == "model_delta"]
    assert deltas == ["2 + ", "2 is", " 4."]
    assert reply["message"] == {"role": "assistant", "content": "2 + 2 is 4."}
    assert reply["usage"] == {
        "prompt_tokens": 31,
        "completion_tokens": 6,
        "total_tokens": 37,
        "cached_tokens": 0,
    }
    assert reply["streamed"] is True
    assert reply["finish_reason"] == "stop"
    assert reply["attempts"] == 1
    request = server.requests[-1]
    assert request.stream
    assert request.body["stream_options"] == {"include_usage": True}


async def test_streamed_tool_call_with_cached_tokens(server: MockOpenAIServer) -> None:
    server.add(
        Reply(
            tool_calls=[{"id": "call_1", "name": "calculator", "args": {"expression": "2+2"}}],
            usage={"prompt_tokens": 40, "completion_tokens": 9, "cached_tokens": 32},
        )
    )
    reply, events = await call(make_caller(server))
    assert reply["message"]["tool_calls"] == [
        {"id": "call_1", "name": "calculator", "args": {"expression": "2+2"}}
    ]
    assert reply["usage"]["cached_tokens"] == 32
    assert reply["finish_reason"] == "tool_calls"
    assert [e["tool"] for e in events if e["type"] == "model_tool_call"] == ["calculator"]
    assert server.requests[-1].body["tools"][0]["function"]["name"] == "calculator"


async def test_without_a_listener_the_reply_is_not_streamed(server: MockOpenAIServer) -> None:
    server.add(Reply(text="four"))
    reply, _ = await call(make_caller(server), listen=False)
    assert reply["message"]["content"] == "four"
    assert reply["streamed"] is False
    assert not server.requests[-1].stream


async def test_streaming_can_be_switched_off(server: MockOpenAIServer) -> None:
    server.add(Reply(tool_calls=[{"name": "calculator", "args": {"expression": "1"}}]))
    reply, events = await call(make_caller(server, stream=False))
    assert reply["message"]["tool_calls"][0]["args"] == {"expression": "1"}
    assert events == []
    assert not server.requests[-1].stream


# Retries ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
async def test_429_and_5xx_are_retried_with_backoff_and_retry_after(
    server: MockOpenAIServer, stream: bool
) -> None:
    server.add(Fault.rate_limit(retry_after=2), Fault.server_error(), Fault.unavailable(), "4")
    sleeps = Sleeps()
    reply, events = await call(make_caller(server, sleeps=sleeps, stream=stream))
    assert reply["message"]["content"] == "4"
    assert reply["attempts"] == 4
    # 429 said wait 2 s (longer than the 0.5 s backoff), then 0.75 s and 1.125 s.
    assert sleeps.waits == [2.0, 0.75, 1.125]
    assert [r["error"] for r in reply["retries"]] == [
        "ModelRateLimitError",
        "ModelUnavailableError",
        "ModelUnavailableError",
    ]
    assert len(server.requests) == 4
    if stream:
        assert [e["type"] for e in events].count("model_retry") == 3


async def test_retry_after_really_waits(server: MockOpenAIServer) -> None:
    server.add(Fault.rate_limit(retry_after=0.6), "ok")
    backend = ModelBackendSettings(base_url=server.base_url, api_key=KEY, timeout=5)
    caller = ChatModelCaller(
        make_chat_model(backend), base_url=backend.base_url, retry=RetryPolicy(initial_backoff=0)
    )
    started = time.perf_counter()
    reply, _ = await call(caller)
    assert reply["message"]["content"] == "ok"
    assert time.perf_counter() - started >= 0.6


@pytest.mark.parametrize(("status", "kind"), [(400, ModelResponseError), (401, ModelAuthError)])
async def test_client_errors_are_never_retried(
    server: MockOpenAIServer, status: int, kind: type[Exception]
) -> None:
    server.add(Fault.status_code(status, "nope"), "never reached")
    caller = make_caller(server, retryable=("ModelResponseError", "ModelAuthError", "ModelError"))
    with pytest.raises(kind, match=str(status)):
        await call(caller)
    assert len(server.requests) == 1
    assert server.remaining == 1


async def test_a_wrong_api_key_is_an_auth_error_without_the_key(server: MockOpenAIServer) -> None:
    backend = ModelBackendSettings(base_url=server.base_url, api_key="sk-wrong-key-123")
    caller = ChatModelCaller(
        make_chat_model(backend), base_url=backend.base_url, secrets=["sk-wrong-key-123"]
    )
    with pytest.raises(ModelAuthError) as info:
        await call(caller)
    assert "MAMBA_MODEL_BACKEND__API_KEY" in str(info.value)
    assert "sk-wrong-key-123" not in str(info.value)
    assert len(server.requests) == 1


async def test_retries_run_out(server: MockOpenAIServer) -> None:
    server.add(*[Fault.unavailable()] * 4)
    sleeps = Sleeps()
    with pytest.raises(ModelUnavailableError, match="503"):
        await call(make_caller(server, retries=2, sleeps=sleeps))
    assert len(server.requests) == 3
    assert sleeps.waits == [0.5, 0.75]


async def test_a_retry_after_longer_than_max_backoff_goes_to_the_caller_at_once(
    server: MockOpenAIServer,
) -> None:
    server.add(Fault.rate_limit(retry_after=600), "later")
    with pytest.raises(ModelRateLimitError) as info:
        await call(make_caller(server))
    assert info.value.retry_after == 600
    assert len(server.requests) == 1


async def test_a_hung_server_times_out_and_is_retried(server: MockOpenAIServer) -> None:
    server.add(Fault.hang(), Fault.slow(0.1, "late but fine"))
    reply, _ = await call(make_caller(server, timeout=0.5))
    assert reply["message"]["content"] == "late but fine"
    assert reply["retries"][0]["error"] == "ModelUnavailableError"


async def test_a_hung_server_without_retries_names_the_timeout(server: MockOpenAIServer) -> None:
    server.add(Fault.hang())
    with pytest.raises(ModelUnavailableError, match="did not answer in time"):
        await call(make_caller(server, retries=0, timeout=0.3))


async def test_an_unreachable_server_says_how_to_fix_it() -> None:
    backend = ModelBackendSettings(base_url="http://127.0.0.1:9/v1", timeout=2)
    caller = ChatModelCaller(make_chat_model(backend), base_url=backend.base_url, max_retries=0)
    with pytest.raises(ModelUnavailableError, match="cannot reach the model server") as info:
        await call(caller)
    assert "MAMBA_MODEL_BACKEND__BASE_URL" in str(info.value)


# Broken replies ------------------------------------------------------------------------------


async def test_a_stream_cut_mid_reply_is_a_typed_error_with_the_partial_text(
    server: MockOpenAIServer,
) -> None:
    server.add(Fault.cut(text="The answer is forty", after_chunks=3))
    with pytest.raises(StreamInterruptedError, match="stopped before the reply was complete") as e:
        await call(make_caller(server, retries=0))
    assert e.value.partial_text == "The answ"  # the role chunk, then two text chunks


async def test_a_cut_stream_is_retried_as_a_connection_failure(server: MockOpenAIServer) -> None:
    server.add(Fault.cut(), "The answer is 4.")
    reply, events = await call(make_caller(server))
    assert reply["message"]["content"] == "The answer is 4."
    assert reply["retries"][0]["error"] == "StreamInterruptedError"
    # The deltas of the cut attempt were sent before the cut; the retry streams its own.
    assert "".join(e["detail"] for e in events if e["type"] == "model_delta").endswith("is 4.")


async def test_a_stream_that_ends_without_a_finish_reason_is_a_cut(
    server: MockOpenAIServer,
) -> None:
    server.add(Fault.no_finish("half an ans"))
    with pytest.raises(StreamInterruptedError) as info:
        await call(make_caller(server, retries=0))
    assert info.value.partial_text == "half an ans"


async def test_a_cut_non_streamed_body_is_a_cut_not_an_unreachable_server(
    server: MockOpenAIServer,
) -> None:
    server.add(Fault.cut())
    with pytest.raises(StreamInterruptedError):
        await call(make_caller(server, retries=0), listen=False)


@pytest.mark.parametrize("listen", [True, False])
async def test_empty_choices_are_a_typed_error(server: MockOpenAIServer, listen: bool) -> None:
    server.add(Fault.empty_choices())
    with pytest.raises(EmptyResponseError, match=r"no choices|empty stream"):
        await call(make_caller(server, retries=0), listen=listen)


@pytest.mark.parametrize("listen", [True, False])
async def test_invalid_json_in_tool_arguments_is_a_typed_error(
    server: MockOpenAIServer, listen: bool
) -> None:
    # Sent back once (see below); the second malformed reply is the error.
    server.add(*[Fault.malformed_tool_args("calculator", '{"expression": "2+')] * 2)
    with pytest.raises(MalformedToolCallError) as info:
        await call(make_caller(server, retries=0), listen=listen)
    assert info.value.tool == "calculator"
    assert info.value.raw_arguments == '{"expression": "2+'
    assert "again after the parse error was sent back to it" in str(info.value)
    assert len(server.requests) == 2


@pytest.mark.parametrize("listen", [True, False])
@pytest.mark.parametrize("depth", [150, 5000])
async def test_tool_arguments_nested_too_deeply_are_malformed_not_a_crash(
    server: MockOpenAIServer, listen: bool, depth: int
) -> None:
    # 150 levels parse, and their size, their schema check and the checkpoint would recurse
    # through them; 5,000 do not parse, and the parse error itself ran out of stack.
    deep = '{"expression": ' + "[" * depth + "]" * depth + "}"
    server.add(*[Fault.malformed_tool_args("calculator", deep)] * 2)
    with pytest.raises(MalformedToolCallError) as info:
        await call(make_caller(server, retries=0), listen=listen)
    assert info.value.tool == "calculator"
    assert "(nested more than 100 levels deep)" in str(info.value)
    assert info.value.raw_arguments.startswith('{"expression": [[[')
    assert len(server.requests) == 2  # the one repair chance, as for any malformed call


@pytest.mark.parametrize("listen", [True, False])
@pytest.mark.parametrize(
    ("number", "problem"),
    [
        ("NaN", "is NaN, which is not a JSON number; write a finite number"),
        ("-Infinity", "is -Infinity, which is not a JSON number"),
        ("1e999", "is Infinity, which is not a JSON number"),
        ("18446744073709551616", "must be a whole number of at most 64 bits"),
    ],
)
async def test_tool_arguments_with_numbers_no_store_keeps_are_malformed(
    server: MockOpenAIServer, listen: bool, number: str, problem: str
) -> None:
    # Python's parser reads the first three as floats (a tool's guard such as `if amount >
    # limit` is false for NaN); 2**64 failed the checkpoint's write, an internal error.
    raw = '{"expression": "1+1", "limit": [1, {"n": ' + number + "}]}"
    server.add(*[Fault.malformed_tool_args("calculator", raw)] * 2)
    with pytest.raises(MalformedToolCallError) as info:
        await call(make_caller(server, retries=0), listen=listen)
    assert info.value.tool == "calculator"
    assert f"limit.1.n {problem}" in str(info.value)
    assert len(server.requests) == 2  # the one repair chance, as for any malformed call


async def test_tool_arguments_that_are_not_an_object_are_malformed(
    server: MockOpenAIServer,
) -> None:
    server.add(*[Fault.malformed_tool_args("calculator", "[1, 2]")] * 2)
    with pytest.raises(MalformedToolCallError):
        await call(make_caller(server, retries=0))


async def test_sending_the_parse_error_back_can_be_turned_off(server: MockOpenAIServer) -> None:
    server.add(Fault.malformed_tool_args("calculator", "{"))
    caller = make_caller(server, retries=0)
    caller.repair_malformed_calls = False
    with pytest.raises(MalformedToolCallError) as info:
        await call(caller)
    assert "sent back" not in str(info.value) and len(server.requests) == 1


@pytest.mark.parametrize("listen", [True, False])
async def test_the_parse_error_goes_back_to_the_model_once(
    server: MockOpenAIServer, listen: bool
) -> None:
    server.add(
        Fault.malformed_tool_args("calculator", '{"expression": "2+'),
        Reply(tool_calls=[{"name": "calculator", "args": {"expression": "2+2"}}]),
    )
    reply, events = await call(make_caller(server, retries=0), listen=listen)
    assert reply["message"]["tool_calls"][0]["args"] == {"expression": "2+2"}
    assert reply["attempts"] == 2
    assert reply["retries"] == [{"error": "MalformedToolCallError", "wait": 0.0, "sent_back": True}]
    first, second = (r.body["messages"] for r in server.requests)
    # The same conversation, plus one message that says what was wrong, with the raw arguments.
    assert second[: len(first)] == first and len(second) == len(first) + 1
    told = second[-1]
    assert told["role"] == "user"
    assert "'calculator'" in told["content"] and '{"expression": "2+' in told["content"]
    assert "not valid JSON" in told["content"]
    if listen:
        assert any(e["type"] == "model_retry" for e in events)


async def test_malformed_arguments_are_retried_when_listed(server: MockOpenAIServer) -> None:
    server.add(
        Fault.malformed_tool_args(),
        Reply(tool_calls=[{"name": "calculator", "args": {"expression": "2+2"}}]),
    )
    caller = make_caller(server, retryable=("MalformedToolCall",))
    reply, _ = await call(caller)
    assert reply["message"]["tool_calls"][0]["args"] == {"expression": "2+2"}


@pytest.mark.parametrize("listen", [True, False])
async def test_a_giant_reply_passes_the_size_cap(server: MockOpenAIServer, listen: bool) -> None:
    server.add(Fault.giant(chars=300_000, chunk_chars=10_000))
    with pytest.raises(ResponseTooLargeError, match="size cap of 100000"):
        await call(make_caller(server, retries=0, cap=100_000), listen=listen)


async def test_a_giant_stream_is_abandoned_early(server: MockOpenAIServer) -> None:
    server.add(Fault.giant(chars=500_000, chunk_chars=1_000))
    events: list[Event] = []
    caller = make_caller(server, retries=0, cap=5_000)
    with pytest.raises(ResponseTooLargeError), listening(caller, events) as reporting:
        await reporting(list(ASK), [])
    assert sum(len(e["detail"]) for e in events) <= 5_000


# Circuit breaker -------------------------------------------------------------------------------


async def test_the_breaker_opens_and_then_fails_fast_without_calling_the_server(
    server: MockOpenAIServer,
) -> None:
    now = [0.0]
    breaker = CircuitBreaker(server.base_url, threshold=3, cooldown=30, clock=lambda: now[0])
    server.add(*[Fault.server_error()] * 3)
    caller = make_caller(server, retries=5, breaker=breaker)
    with pytest.raises(CircuitOpenError, match="circuit breaker"):
        await call(caller)
    assert len(server.requests) == 3  # the 4th attempt failed fast
    with pytest.raises(CircuitOpenError):
        await call(caller)
    assert len(server.requests) == 3
    now[0] = 31.0  # cooled down: one trial goes through and succeeds
    server.add("back")
    reply, _ = await call(caller)
    assert reply["message"]["content"] == "back"
    assert breaker.state == "closed"


def test_breaker_threshold_and_cooldown_come_from_settings() -> None:
    config = ErrorRecoveryConfig(circuit_breaker_threshold=2, circuit_breaker_timeout=5)
    breaker = CircuitBreaker(
        "srv",
        threshold=config.circuit_breaker_threshold,
        cooldown=config.circuit_breaker_timeout,
    )
    assert (breaker.threshold, breaker.cooldown) == (2, 5.0)


# Secrets -------------------------------------------------------------------------------------


async def test_the_api_key_never_reaches_logs_or_errors(
    server: MockOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server.add(Fault.status_code(500, f"upstream echoed Bearer {KEY}"), Fault.status_code(400, KEY))
    with pytest.raises(ModelResponseError) as info:
        await call(make_caller(server, retries=1, sleeps=Sleeps()))
    assert KEY not in str(info.value)
    assert "***" in str(info.value)
    assert "retry 1 of 1" in caplog.text
    assert KEY not in caplog.text


def test_classify_scrubs_secrets_from_unknown_errors() -> None:
    err = classify_model_error(ValueError(f"bad {KEY}"), base_url="http://x", secrets=[KEY])
    assert isinstance(err, ModelResponseError)
    assert KEY not in str(err)


# Request details (respx) -------------------------------------------------------------------------


def _completion(text: str) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    }


@respx.mock
async def test_request_carries_key_model_and_generation_parameters() -> None:
    route = respx.post("http://model.test/v1/chat/completions").mock(
        return_value=httpx.Response(200, json=_completion("hi"))
    )
    backend = ModelBackendSettings(
        base_url="http://model.test/v1", api_key=KEY, model="qwen", temperature=0, seed=7
    )
    caller = ChatModelCaller(make_chat_model(backend), base_url=backend.base_url)
    await caller(list(ASK), TOOLS)
    request = route.calls.last.request
    body = json.loads(request.content)
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert (body["model"], body["temperature"], body["seed"]) == ("qwen", 0, 7)
    assert body["tools"] == TOOLS
    assert body["messages"] == [{"role": "user", "content": "What is 2 + 2?"}]


@respx.mock
async def test_retry_after_ms_is_read() -> None:
    respx.post("http://model.test/v1/chat/completions").mock(
        side_effect=[
            httpx.Response(429, headers={"retry-after-ms": "1500"}, json={"error": {}}),
            httpx.Response(200, json=_completion("ok")),
        ]
    )
    backend = ModelBackendSettings(base_url="http://model.test/v1")
    sleeps = Sleeps()
    caller = ChatModelCaller(
        make_chat_model(backend),
        base_url=backend.base_url,
        retry=RetryPolicy(initial_backoff=0.1),
        sleep=sleeps,
    )
    await caller(list(ASK), [])
    assert sleeps.waits == [1.5]


@respx.mock
async def test_unknown_5xx_and_408_statuses() -> None:
    respx.post("http://model.test/v1/chat/completions").mock(
        side_effect=[
            httpx.Response(599, json={"error": {"message": "odd"}}),
            httpx.Response(408, json={"error": {"message": "slow"}}),
            httpx.Response(200, json=_completion("ok")),
        ]
    )
    backend = ModelBackendSettings(base_url="http://model.test/v1")
    caller = ChatModelCaller(
        make_chat_model(backend),
        base_url=backend.base_url,
        retry=RetryPolicy(initial_backoff=0),
        sleep=Sleeps(),
    )
    reply = await caller(list(ASK), [])
    assert [r["error"] for r in reply["retries"]] == [
        "ModelUnavailableError",
        "ModelResponseError",
    ]


@respx.mock
async def test_404_names_the_model_id_setting() -> None:
    respx.post("http://model.test/v1/chat/completions").mock(
        return_value=httpx.Response(404, json={"error": {"message": "model not found"}})
    )
    backend = ModelBackendSettings(base_url="http://model.test/v1")
    caller = ChatModelCaller(make_chat_model(backend), base_url=backend.base_url)
    with pytest.raises(ModelResponseError, match="MAMBA_MODEL_BACKEND__MODEL"):
        await caller(list(ASK), [])


# Context overflow ------------------------------------------------------------------------------


@pytest.mark.parametrize("listen", [True, False])
@pytest.mark.parametrize(
    ("fault", "prompt", "window"),
    [
        (Fault.context_overflow(9000, 8192), 9000, 8192),
        (Fault.context_overflow(6030, 2048, style="llama.cpp"), 6030, 2048),
        (Fault.status_code(400, "prompt is too long for this model"), None, None),
        (Fault.status_code(413, "x", code="context_length_exceeded"), None, None),
    ],
)
async def test_a_context_overflow_is_its_own_error_with_the_server_s_figures(
    server: MockOpenAIServer, listen: bool, fault: Fault, prompt: int | None, window: int | None
) -> None:
    server.add(fault)
    with pytest.raises(ContextOverflowError) as info:
        await call(make_caller(server), listen=listen)
    assert (info.value.prompt_tokens, info.value.window) == (prompt, window)
    assert "longer than the model's context window" in str(info.value)
    assert len(server.requests) == 1  # a 400 is never resent as it is


async def test_other_400s_are_not_overflows(server: MockOpenAIServer) -> None:
    server.add(Fault.status_code(400, "bad temperature", code="invalid_value"))
    with pytest.raises(ModelResponseError) as info:
        await call(make_caller(server))
    assert not isinstance(info.value, ContextOverflowError)
