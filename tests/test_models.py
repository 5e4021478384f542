"""The model layer: conversion, error mapping and retries against real HTTP and respx."""

from __future__ import annotations

import dataclasses
from typing import Any

import httpx
import openai
import pytest
import respx
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import SecretStr

from ai_agent.config import ModelBackendSettings
from ai_agent.errors import (
    ModelAuthError,
    ModelRateLimitError,
    ModelResponseError,
    ModelUnavailableError,
)
from ai_agent.models import (
    ChatModelCaller,
    classify_model_error,
    from_langchain,
    make_chat_model,
    request_hash,
    to_langchain,
    usage_of,
)
from ai_agent.state import Message
from tests.openai_stub import completion, openai_stub

URL = "http://127.0.0.1:9/v1"


def test_messages_convert_both_ways() -> None:
    messages: list[Message] = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "name": "calc", "args": {"x": 1}}],
        },
        {"role": "tool", "content": "1", "tool_call_id": "c1"},
    ]
    lc = to_langchain(messages)
    assert [type(m) for m in lc] == [SystemMessage, HumanMessage, AIMessage, ToolMessage]
    assistant = lc[2]
    assert isinstance(assistant, AIMessage)
    assert assistant.tool_calls == [
        {"id": "c1", "name": "calc", "args": {"x": 1}, "type": "tool_call"}
    ]
    back = from_langchain(assistant, turn=0)
    assert back == {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "c1", "name": "calc", "args": {"x": 1}}],
    }


def test_calls_without_ids_get_stable_ones_and_list_content_is_joined() -> None:
    message = AIMessage(
        content=[{"type": "text", "text": "a"}, "b", {"type": "image"}],
        tool_calls=[{"id": None, "name": "t", "args": {}}],
    )
    assert from_langchain(message, turn=3) == {
        "role": "assistant",
        "content": "ab",
        "tool_calls": [{"id": "call_3_0", "name": "t", "args": {}}],
    }


def reply(*calls: tuple[str, str]) -> Message:
    """An assistant message whose calls carry (engine id, model id)."""
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": e, "model_id": m, "name": "t", "args": {}} for e, m in calls],
    }


def answer(engine_id: str, text: str | None = None) -> Message:
    return {"role": "tool", "content": text or engine_id, "tool_call_id": engine_id}


def test_the_model_gets_its_own_ids_back_each_answered_once() -> None:
    legacy: Message = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "call_9", "name": "t", "args": {}}],
    }
    messages = [
        legacy,
        answer("call_9"),
        reply(("c1.0", "call_1"), ("c1.1", "call_1")),  # one id twice in one reply
        answer("c1.0"),
        answer("c1.1"),
        reply(("c2.0", "call_1"), ("c2.1", "call_9")),  # and again in later replies
        answer("c2.1"),
        answer("c2.0"),
    ]
    lc = to_langchain(messages)
    sent = [
        [c["id"] for c in m.tool_calls] if isinstance(m, AIMessage) else m.tool_call_id  # type: ignore[attr-defined]
        for m in lc
    ]
    assert sent == [
        ["call_9"],  # a run from before engine ids: as it was
        "call_9",
        ["call_1", "call_1_2"],
        "call_1",
        "call_1_2",
        ["call_1_3", "call_9_2"],
        "call_9_2",
        "call_1_3",
    ]
    # The hash is of what the model sees: the engine's ids do not change it.
    renamed = [
        reply(("x1", "call_1"), ("x2", "call_1")),
        answer("x1", "c1.0"),
        answer("x2", "c1.1"),
    ]
    assert request_hash(messages[2:5], []) == request_hash(renamed, [])
    plain: list[Message] = [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "call_1", "name": "t", "args": {}},
                {"id": "call_1_2", "name": "t", "args": {}},
            ],
        },
        {"role": "tool", "content": "c1.0", "tool_call_id": "call_1"},
        {"role": "tool", "content": "c1.1", "tool_call_id": "call_1_2"},
    ]
    assert request_hash(messages[2:5], []) == request_hash(plain, [])


def test_usage_uses_openai_names() -> None:
    message = AIMessage(
        "x",
        usage_metadata={
            "input_tokens": 5,
            "output_tokens": 2,
            "total_tokens": 7,
            "input_token_details": {"cache_read": 3},
        },
    )
    assert usage_of(message) == {
        "prompt_tokens": 5,
        "completion_tokens": 2,
        "total_tokens": 7,
        "cached_tokens": 3,
    }
    assert usage_of(AIMessage("x")) == {}


def test_request_hash_is_stable_and_sensitive() -> None:
    m: list[Message] = [{"role": "user", "content": "a"}]
    assert request_hash(m, []) == request_hash([{"content": "a", "role": "user"}], [])
    assert request_hash(m, []) != request_hash([{"role": "user", "content": "b"}], [])


def test_make_chat_model_passes_settings() -> None:
    backend = ModelBackendSettings(
        base_url=URL,
        model="m1",
        api_key=SecretStr("k-123456"),
        temperature=0.0,
        max_tokens=64,
        seed=7,
        timeout=5,
    )
    model: Any = make_chat_model(backend)
    assert (model.model_name, model.openai_api_base, model.temperature) == ("m1", URL, 0.0)
    assert (model.max_tokens, model.seed, model.max_retries) == (64, 7, 0)
    assert model.stream_usage is True
    assert model.openai_api_key.get_secret_value() == "k-123456"
    keyless: Any = make_chat_model(ModelBackendSettings(base_url=URL))
    assert keyless.openai_api_key.get_secret_value() == "not-needed"


def _status(code: int, body: str = "nope", headers: dict[str, str] | None = None) -> Exception:
    request = httpx.Request("POST", URL)
    response = httpx.Response(code, request=request, headers=headers or {}, text=body)
    kinds: dict[int, type[openai.APIStatusError]] = {
        400: openai.BadRequestError,
        401: openai.AuthenticationError,
        403: openai.PermissionDeniedError,
        404: openai.NotFoundError,
        429: openai.RateLimitError,
        500: openai.InternalServerError,
        503: openai.InternalServerError,
    }
    return kinds[code](body, response=response, body=None)


@pytest.mark.parametrize(
    ("exc", "kind", "text"),
    [
        (_status(401), ModelAuthError, "refused the API key (401)"),
        (_status(403), ModelAuthError, "refused the API key (403)"),
        (_status(404), ModelResponseError, "Check the model id"),
        (_status(400), ModelResponseError, "answered 400"),
        (_status(500), ModelUnavailableError, "answered 500"),
        (_status(429), ModelRateLimitError, "rate limiting (429)"),
        (ValueError("odd"), ModelResponseError, "could not be used (ValueError)"),
    ],
)
def test_errors_map_onto_the_tree(exc: Exception, kind: type[Exception], text: str) -> None:
    error = classify_model_error(exc, base_url=URL)
    assert isinstance(error, kind)
    assert text in str(error)


def test_connection_and_timeout_errors_name_the_url() -> None:
    request = httpx.Request("POST", URL)
    refused = classify_model_error(openai.APIConnectionError(request=request), base_url=URL)
    assert isinstance(refused, ModelUnavailableError)
    assert f"cannot reach the model server at {URL}" in str(refused)
    slow = classify_model_error(openai.APITimeoutError(request=request), base_url=URL)
    assert "did not answer in time" in str(slow)


def test_retry_after_is_read_and_secrets_scrubbed() -> None:
    error = classify_model_error(
        _status(429, "key k-secret-1 over quota", {"retry-after": "2.5"}),
        base_url=URL,
        secrets=["k-secret-1"],
    )
    assert isinstance(error, ModelRateLimitError)
    assert error.retry_after == 2.5
    assert "It asked to wait 2.5 s (Retry-After)." in str(error)
    assert "k-secret-1" not in str(error) and "***" in str(error)
    bad = classify_model_error(_status(429, headers={"retry-after": "soon"}), base_url=URL)
    assert isinstance(bad, ModelRateLimitError) and bad.retry_after is None


def _caller(base_url: str, retries: int = 2) -> ChatModelCaller:
    model = make_chat_model(ModelBackendSettings(base_url=base_url, timeout=5))
    return ChatModelCaller(
        model, base_url=base_url, max_retries=retries, initial_backoff=0.01, max_backoff=0.05
    )


async def test_caller_retries_rate_limits_over_real_http() -> None:
    limited = {"status": 429, "body": {"error": {"message": "slow down"}}}
    with openai_stub([limited, completion("fine")]) as stub:
        reply = await _caller(stub.base_url)([{"role": "user", "content": "hi"}], [])
    assert reply["message"] == {"role": "assistant", "content": "fine"}
    assert reply["usage"]["total_tokens"] == 18
    assert len(stub.requests) == 2
    assert stub.requests[0]["body"]["messages"] == [{"role": "user", "content": "hi"}]


async def test_caller_gives_up_after_its_retries() -> None:
    down = {"status": 503, "body": {"error": {"message": "down"}}}
    with openai_stub([down]) as stub, pytest.raises(ModelUnavailableError, match="answered 503"):
        await _caller(stub.base_url, retries=1)([{"role": "user", "content": "x"}], [])
    assert len(stub.requests) == 2


async def test_caller_never_retries_a_bad_request() -> None:
    bad = {"status": 400, "body": {"error": {"message": "bad"}}}
    with openai_stub([bad]) as stub, pytest.raises(ModelResponseError, match="answered 400"):
        await _caller(stub.base_url)([{"role": "user", "content": "x"}], [])
    assert len(stub.requests) == 1


@respx.mock(assert_all_called=True)
async def test_caller_sends_tools_and_honours_retry_after(respx_mock: respx.MockRouter) -> None:
    route = respx_mock.post("http://model.test/v1/chat/completions")
    route.side_effect = [
        httpx.Response(429, headers={"retry-after": "0"}, json={"error": {"message": "x"}}),
        httpx.Response(200, json=completion(tool_calls=[{"name": "calc", "args": {"a": 1}}])),
    ]
    tools = [
        {
            "type": "function",
            "function": {"name": "calc", "description": "d", "parameters": {"type": "object"}},
        }
    ]
    caller = _caller("http://model.test/v1")
    caller.retry = dataclasses.replace(caller.retry, initial_backoff=30.0)  # Retry-After: 0 wins
    reply = await caller([{"role": "user", "content": "x"}], tools)
    assert reply["message"]["tool_calls"] == [{"id": "call_0", "name": "calc", "args": {"a": 1}}]
    sent = route.calls[1].request
    assert b'"tools"' in sent.content and b'"calc"' in sent.content
