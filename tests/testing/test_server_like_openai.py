"""The mock server behaves like the real API: one id per completion, 400s, string error codes.

Shapes measured on the real llama.cpp server (tests/local) and documented by OpenAI: a test that
passes against the mock must not rely on an answer a real server would never give.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest

from ai_agent.testing import Fault, MockOpenAIServer, Reply

USER = {"role": "user", "content": "hi"}
TOOL = {"type": "function", "function": {"name": "calc", "parameters": {"type": "object"}}}
CALL = {"id": "call_1", "type": "function", "function": {"name": "calc", "arguments": "{}"}}


def post(server: MockOpenAIServer, body: Any) -> httpx.Response:
    return httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=5)


def test_every_chunk_of_a_streamed_completion_carries_its_one_id() -> None:
    reply = Reply(text="abcdefghijkl", tool_calls=[{"name": "calc", "args": {"x": 1}}])
    with MockOpenAIServer([reply, "again"]) as server:
        body = {"model": "m", "messages": [USER], "stream": True}
        first = post(server, {**body, "stream_options": {"include_usage": True}})
        second = post(server, body)
    ids = [
        json.loads(line.removeprefix("data: "))["id"]
        for line in first.text.split("\n\n")
        if line.startswith("data: {")
    ]
    assert len(ids) > 3 and len(set(ids)) == 1
    assert ids[0].startswith("chatcmpl-")
    assert ids[0] not in second.text  # each completion has its own


INVALID: dict[str, tuple[Any, str | None]] = {
    "body not an object": ([USER], None),
    "no model": ({"messages": [USER]}, "model"),
    "no messages": ({"model": "m"}, "messages"),
    "messages not a list": ({"model": "m", "messages": "hi"}, "messages"),
    "empty messages": ({"model": "m", "messages": []}, "messages"),
    "message not an object": ({"model": "m", "messages": ["hi"]}, "messages[0]"),
    "no role": ({"model": "m", "messages": [{"content": "hi"}]}, "messages[0].role"),
    "unknown role": (
        {"model": "m", "messages": [{"role": "wizard", "content": "hi"}]},
        "messages[0].role",
    ),
    "user without content": ({"model": "m", "messages": [{"role": "user"}]}, "messages[0].content"),
    "content of the wrong type": (
        {"model": "m", "messages": [{"role": "user", "content": 3}]},
        "messages[0].content",
    ),
    "tool result without its call id": (
        {"model": "m", "messages": [USER, {"role": "tool", "content": "4"}]},
        "messages[1].tool_call_id",
    ),
    "tool result answering no call": (
        {"model": "m", "messages": [USER, {"role": "tool", "content": "4", "tool_call_id": "x"}]},
        "messages.[1].role",
    ),
    "call left unanswered": (
        {"model": "m", "messages": [USER, {"role": "assistant", "tool_calls": [CALL]}, USER]},
        "messages",
    ),
    "last call unanswered": (
        {"model": "m", "messages": [USER, {"role": "assistant", "tool_calls": [CALL]}]},
        "messages",
    ),
    "tool calls not a list": (
        {"model": "m", "messages": [USER, {"role": "assistant", "tool_calls": "calc"}]},
        "messages[1].tool_calls",
    ),
    "call without an id": (
        {
            "model": "m",
            "messages": [USER, {"role": "assistant", "tool_calls": [{**CALL, "id": ""}]}],
        },
        "messages[1].tool_calls[0].id",
    ),
    "call without a function": (
        {"model": "m", "messages": [USER, {"role": "assistant", "tool_calls": [{"id": "c"}]}]},
        "messages[1].tool_calls[0]",
    ),
    "call arguments not a string": (
        {
            "model": "m",
            "messages": [
                USER,
                {"role": "assistant", "tool_calls": [{**CALL, "function": {"name": "calc"}}]},
            ],
        },
        "messages[1].tool_calls[0].function",
    ),
    "tools not a list": ({"model": "m", "messages": [USER], "tools": "calc"}, "tools"),
    "tool of another type": (
        {"model": "m", "messages": [USER], "tools": [{"type": "code"}]},
        "tools[0].type",
    ),
    "tool without a function": (
        {"model": "m", "messages": [USER], "tools": [{"type": "function"}]},
        "tools[0]",
    ),
    "function without a name": (
        {"model": "m", "messages": [USER], "tools": [{"type": "function", "function": {}}]},
        "tools[0].function.name",
    ),
    "function name with a space": (
        {
            "model": "m",
            "messages": [USER],
            "tools": [{"type": "function", "function": {"name": "two words"}}],
        },
        "tools[0].function.name",
    ),
    "parameters not an object": (
        {
            "model": "m",
            "messages": [USER],
            "tools": [{"type": "function", "function": {"name": "f", "parameters": []}}],
        },
        "tools[0].function.parameters",
    ),
    "tool_choice without tools": (
        {"model": "m", "messages": [USER], "tool_choice": "auto"},
        "tool_choice",
    ),
    "unknown tool_choice": (
        {"model": "m", "messages": [USER], "tools": [TOOL], "tool_choice": "sometimes"},
        "tool_choice",
    ),
    "tool_choice of the wrong shape": (
        {"model": "m", "messages": [USER], "tools": [TOOL], "tool_choice": {"type": "x"}},
        "tool_choice",
    ),
    "tool_choice naming another tool": (
        {
            "model": "m",
            "messages": [USER],
            "tools": [TOOL],
            "tool_choice": {"type": "function", "function": {"name": "other"}},
        },
        "tool_choice",
    ),
    "stream_options without stream": (
        {"model": "m", "messages": [USER], "stream_options": {"include_usage": True}},
        "stream_options",
    ),
    "stream_options not an object": (
        {"model": "m", "messages": [USER], "stream": True, "stream_options": True},
        "stream_options",
    ),
    "unknown stream option": (
        {"model": "m", "messages": [USER], "stream": True, "stream_options": {"x": 1}},
        "stream_options",
    ),
    "model not a string": ({"model": 3, "messages": [USER]}, "model"),
}


@pytest.mark.parametrize("case", INVALID)
def test_an_invalid_request_body_gets_400_and_uses_no_script_item(case: str) -> None:
    body, param = INVALID[case]
    with MockOpenAIServer(["never"]) as server:
        response = post(server, body)
        assert server.remaining == 1
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    assert error["code"] is None or isinstance(error["code"], str)
    assert error["message"]


VALID: dict[str, dict[str, Any]] = {
    "a full tool round": {
        "messages": [
            {"role": "system", "content": "s"},
            USER,
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
            {"role": "tool", "content": "4", "tool_call_id": "call_1"},
            {"role": "assistant", "content": "4"},
            {"role": "user", "content": [{"type": "text", "text": "thanks"}]},
        ],
        "tools": [TOOL],
        "tool_choice": {"type": "function", "function": {"name": "calc"}},
    },
    "streamed with usage": {
        "messages": [USER],
        "stream": True,
        "stream_options": {"include_usage": True},
        "tool_choice": None,
    },
    "tool_choice required": {"messages": [USER], "tools": [TOOL], "tool_choice": "required"},
}


@pytest.mark.parametrize("case", VALID)
def test_what_the_api_accepts_is_answered(case: str) -> None:
    with MockOpenAIServer(["fine"]) as server:
        response = post(server, {"model": "m", **VALID[case]})
    assert response.status_code == 200
    assert "fine" in response.text


def test_error_bodies_carry_string_codes_as_openai_sends_them() -> None:
    script = [
        Fault.rate_limit(retry_after=None),
        Fault.server_error(),
        Fault.status_code(400, "bad", code="invalid_value"),
        Fault.context_overflow(9000, 8192),
    ]
    with MockOpenAIServer(script, api_key="k") as server:
        url = f"{server.base_url}/chat/completions"
        body = {"model": "m", "messages": [USER]}
        errors = [
            httpx.post(url, json=body, headers={"Authorization": "Bearer k"}).json()["error"]
            for _ in script
        ]
        wrong_key = httpx.post(url, json=body).json()["error"]
        not_json = httpx.post(url, content=b"{no", headers={"Authorization": "Bearer k"})
    assert [(e["type"], e["code"]) for e in errors] == [
        ("requests", "rate_limit_exceeded"),
        ("server_error", None),
        ("invalid_request_error", "invalid_value"),
        ("invalid_request_error", "context_length_exceeded"),
    ]
    assert errors[3]["param"] == "messages"
    assert "maximum context length is 8192 tokens" in errors[3]["message"]
    assert (wrong_key["type"], wrong_key["code"]) == ("invalid_request_error", "invalid_api_key")
    assert not_json.status_code == 400 and not_json.json()["error"]["code"] is None


def test_a_llama_cpp_context_overflow_has_the_real_server_s_shape() -> None:
    # As the real llama.cpp server answered (n_ctx 2048): see tests/local.
    with MockOpenAIServer([Fault.context_overflow(6030, 2048, style="llama.cpp")]) as server:
        response = post(server, {"model": "m", "messages": [USER]})
    assert response.status_code == 400
    assert response.json()["error"] == {
        "message": "request (6030 tokens) exceeds the available context size (2048 tokens), "
        "try increasing it",
        "type": "exceed_context_size_error",
        "param": None,
        "code": None,
        "n_prompt_tokens": 6030,
        "n_ctx": 2048,
    }


def test_the_openai_client_sees_the_400_as_a_bad_request() -> None:
    with MockOpenAIServer(["never"]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        with pytest.raises(openai.BadRequestError) as caught:
            client.chat.completions.create(
                model="m", messages=[{"role": "tool", "content": "x", "tool_call_id": "x"}]
            )
    assert caught.value.code is None
    assert "must be a response to a preceeding message" in str(caught.value)
