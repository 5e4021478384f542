"""The mock OpenAI-compatible server itself: routes, scripts, faults, lifecycle."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest

from ai_agent.testing import Fault, MockOpenAIServer, RecordedRequest, Reply


def chat(server: MockOpenAIServer, **body: Any) -> httpx.Response:
    payload = {"model": "m", "messages": [{"role": "user", "content": "hi"}], **body}
    return httpx.post(f"{server.base_url}/chat/completions", json=payload, timeout=5)


def test_plain_reply_with_usage_estimate() -> None:
    with MockOpenAIServer(["Hello there"]) as server:
        response = chat(server)
    body = response.json()
    assert response.status_code == 200
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "Hello there"}
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["usage"]["completion_tokens"] == 3  # 11 characters, ~4 a token
    assert body["usage"]["total_tokens"] == body["usage"]["prompt_tokens"] + 3


def test_streamed_reply_is_server_sent_events_ending_in_done() -> None:
    reply = Reply(text="abcdefgh", tool_calls=[{"name": "t", "args": {"a": 1}, "id": "c9"}])
    with MockOpenAIServer([reply]) as server:
        response = chat(server, stream=True, stream_options={"include_usage": True})
    lines = [line for line in response.text.split("\n\n") if line]
    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert "".join(d.get("content") or "" for d in deltas) == "abcdefgh"
    head = next(d["tool_calls"][0] for d in deltas if d.get("tool_calls"))
    assert (head["id"], head["function"]["name"]) == ("c9", "t")
    assert chunks[-1]["choices"] == [] and "usage" in chunks[-1]
    finish = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    assert finish[-1] == "tool_calls"


def test_no_usage_when_asked_for_none() -> None:
    with MockOpenAIServer([Reply(text="x", usage={})]) as server:
        assert "usage" not in chat(server).json()
        server.add(Reply(text="x", usage={}))
        assert "usage" not in chat(server, stream=True, stream_options={"include_usage": True}).text


def test_the_openai_client_reads_scripted_tool_calls_and_errors() -> None:
    script: list[Reply | Fault | str | dict[str, Any]] = [
        Reply(tool_calls=[{"name": "calculator", "args": {"expression": "1+1"}}]),
        Fault.rate_limit(retry_after=3),
        {"text": "from a dict", "finish_reason": "length"},
    ]
    with MockOpenAIServer(script, api_key="sk-test") as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
        ask = [{"role": "user", "content": "hi"}]
        first = client.chat.completions.create(model="m", messages=ask)  # type: ignore[arg-type]
        call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
        assert json.loads(call.function.arguments) == {"expression": "1+1"}  # type: ignore[union-attr]
        with pytest.raises(openai.RateLimitError) as info:
            client.chat.completions.create(model="m", messages=ask)  # type: ignore[arg-type]
        assert info.value.response.headers["retry-after"] == "3"
        last = client.chat.completions.create(model="m", messages=ask)  # type: ignore[arg-type]
        assert last.choices[0].finish_reason == "length"
        assert last.choices[0].message.content == "from a dict"
        assert [r.headers["authorization"] for r in server.requests] == ["Bearer sk-test"] * 3


def test_a_wrong_key_gets_401_and_is_recorded() -> None:
    with MockOpenAIServer(["never"], api_key="right") as server:
        response = httpx.post(
            f"{server.base_url}/chat/completions",
            json={"messages": []},
            headers={"Authorization": "Bearer wrong"},
        )
        assert response.status_code == 401
        assert "right" not in response.text
        assert server.remaining == 1
        assert len(server.requests) == 1


def test_used_up_script_falls_back_to_the_responder_or_a_clear_500() -> None:
    seen: list[RecordedRequest] = []

    def responder(request: RecordedRequest) -> str:
        seen.append(request)
        return f"echo {request.body['messages'][-1]['content']}"

    with MockOpenAIServer() as server:
        response = chat(server)
        assert response.status_code == 500
        assert "script is used up" in response.json()["error"]["message"]
    with MockOpenAIServer(responder=responder) as server:
        assert chat(server).json()["choices"][0]["message"]["content"] == "echo hi"
    assert len(seen) == 1


def test_other_routes() -> None:
    with MockOpenAIServer(model="tiny") as server:
        models = httpx.get(f"{server.base_url}/models").json()
        assert models["data"][0]["id"] == "tiny"
        assert httpx.get(f"{server.base_url}/health").json() == {"status": "ok"}
        assert httpx.get(f"{server.base_url}/nothing").status_code == 404
        assert httpx.post(f"{server.base_url}/embeddings", json={}).status_code == 404
        bad = httpx.post(f"{server.base_url}/chat/completions", content=b"{not json")
        assert bad.status_code == 400


def test_status_faults_carry_their_headers() -> None:
    with MockOpenAIServer(
        [Fault.unavailable(retry_after=5), Fault.status_code(418, "teapot")]
    ) as s:
        first = chat(s)
        assert (first.status_code, first.headers["retry-after"]) == (503, "5")
        second = chat(s)
        assert (second.status_code, second.json()["error"]["message"]) == (418, "teapot")


def test_empty_choices_and_no_finish_without_streaming() -> None:
    with MockOpenAIServer([Fault.empty_choices(), Fault.no_finish("cut")]) as server:
        assert chat(server).json()["choices"] == []
        assert chat(server).json()["choices"][0]["finish_reason"] is None


def test_a_hanging_request_is_released_when_the_server_stops() -> None:
    server = MockOpenAIServer([Fault.hang()]).start()
    url = f"{server.base_url}/chat/completions"
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            url, json={"model": "m", "messages": [{"role": "user", "content": "hi"}]}, timeout=0.3
        )
    server.stop()
    server.stop()  # stopping twice is harmless


async def test_async_context_manager_and_lifecycle_errors() -> None:
    server = MockOpenAIServer(["hi"])
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.base_url
    async with server as running:
        assert running.start() is running  # already started
        async with httpx.AsyncClient() as client:
            response = await client.post(
                f"{running.base_url}/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
            )
        assert response.json()["choices"][0]["message"]["content"] == "hi"
    with pytest.raises(RuntimeError):
        _ = server.port
