"""The real llama.cpp server with the real model: tool calls streamed and not, and a round trip.

At temperature 0 and a fixed seed the 0.5B model reliably turns "What is the weather in Paris?"
into a call of the one tool offered. The tests assert the protocol (a call of that tool with
arguments that parse), not the model's judgement about the values.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.tools import tool

from ai_agent.errors import LocalBackendError
from ai_agent.local import LocalModelServer

from .conftest import TEST_THREADS, local_chat

pytestmark = pytest.mark.local_model

QUESTION = "What is the weather in Paris?"


@tool
def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: The city's name.
    """
    return f"18 C and sunny in {city}"


@pytest.fixture
async def http_client() -> AsyncIterator[httpx.AsyncClient]:
    """A client closed at the end of each test.

    ChatOpenAI otherwise falls back to a shared, never-closed client whose connections outlive
    the test's event loop (a ResourceWarning, so an error here).
    """
    async with httpx.AsyncClient() as client:
        yield client


def _is_process_alive(pid: int) -> bool:
    """True while the process runs; a zombie (exited, not yet reaped) counts as gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


async def test_non_streamed_tool_call(
    local_server: LocalModelServer, http_client: httpx.AsyncClient
) -> None:
    reply = (
        await local_chat(local_server, http_client)
        .bind_tools([get_weather])
        .ainvoke([HumanMessage(QUESTION)])
    )

    assert isinstance(reply, AIMessage)
    assert reply.invalid_tool_calls == []
    assert [call["name"] for call in reply.tool_calls] == ["get_weather"]
    assert isinstance(reply.tool_calls[0]["args"], dict)
    assert reply.tool_calls[0]["id"]
    assert reply.response_metadata["finish_reason"] == "tool_calls"


async def test_streamed_tool_call_with_usage(
    local_server: LocalModelServer, http_client: httpx.AsyncClient
) -> None:
    model = local_chat(local_server, http_client, stream_usage=True).bind_tools([get_weather])
    chunks: list[AIMessageChunk] = []
    async for chunk in model.astream([HumanMessage(QUESTION)]):
        assert isinstance(chunk, AIMessageChunk)
        chunks.append(chunk)

    assert any(chunk.tool_call_chunks for chunk in chunks)
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged += chunk
    assert isinstance(merged, AIMessageChunk)
    assert [call["name"] for call in merged.tool_calls] == ["get_weather"]
    assert isinstance(merged.tool_calls[0]["args"], dict)
    assert merged.usage_metadata is not None
    assert merged.usage_metadata["input_tokens"] > 0
    assert merged.usage_metadata["output_tokens"] > 0


async def test_tool_result_round_trip(
    local_server: LocalModelServer, http_client: httpx.AsyncClient
) -> None:
    model = local_chat(local_server, http_client).bind_tools([get_weather])
    question = HumanMessage(QUESTION)
    call = await model.ainvoke([question])
    assert isinstance(call, AIMessage)
    assert call.tool_calls
    result = ToolMessage(
        get_weather.invoke(call.tool_calls[0]["args"]), tool_call_id=call.tool_calls[0]["id"]
    )

    answer = await model.ainvoke([question, call, result])

    # The template's "do not call the same tool again" turn is what makes this a text answer.
    assert isinstance(answer, AIMessage)
    assert answer.tool_calls == []
    assert isinstance(answer.content, str)
    assert answer.content.strip()


async def test_server_renders_the_adapted_template(local_server: LocalModelServer) -> None:
    conversation = {
        "messages": [
            {"role": "user", "content": QUESTION},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call-1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call-1", "content": "18 C"},
        ],
        "tools": [{"type": "function", "function": get_weather_schema()}],
    }
    base = local_server.base_url.removesuffix("/v1")
    async with httpx.AsyncClient(
        headers={"Authorization": f"Bearer {local_server.api_key}"}
    ) as client:
        response = await client.post(f"{base}/apply-template", json=conversation)
        models = await client.get(f"{local_server.base_url}/models")
        unauthorised = await client.get(
            f"{local_server.base_url}/models", headers={"Authorization": "Bearer wrong"}
        )

    prompt = response.json()["prompt"]
    assert '```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```' in prompt
    assert "</tool_response><|im_end|>\n<|im_start|>system\nThe tool returned" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")
    assert [m["id"] for m in models.json()["data"]] == [local_server.model_id]
    assert unauthorised.status_code == 401


def get_weather_schema() -> dict[str, object]:
    return {
        "name": "get_weather",
        "description": "Get the current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    }


async def test_stop_leaves_no_process_and_no_thread(model_path: Path) -> None:
    threads_before = {t.ident for t in threading.enumerate()}
    started = time.monotonic()
    async with LocalModelServer(model_path, n_threads=TEST_THREADS, n_ctx=512) as local:
        ready_after = time.monotonic() - started
        pid = local.pid
        assert pid is not None
        assert local.base_url.startswith("http://127.0.0.1:")
        assert local.base_url.endswith("/v1")
        await local.start()  # already running: no second process
        assert local.pid == pid
    assert not _is_process_alive(pid)
    # asyncio's executor threads (the template is read in one) belong to the loop, not to us.
    left = [
        t
        for t in threading.enumerate()
        if t.ident not in threads_before and not t.name.startswith("asyncio_")
    ]
    assert left == []
    assert ready_after < 60


async def test_start_timeout_is_reported_and_cleaned_up(model_path: Path) -> None:
    local = LocalModelServer(model_path, n_threads=TEST_THREADS, n_ctx=512, startup_timeout=0.05)

    with pytest.raises(LocalBackendError, match=r"did not report ready within 0\.05 s"):
        await local.start()

    assert local.pid is None


def test_child_exits_when_the_parent_is_killed(model_path: Path, tmp_path: Path) -> None:
    parent_code = textwrap.dedent(
        f"""
        import asyncio
        from pathlib import Path
        from ai_agent.local import LocalModelServer

        async def main():
            server = LocalModelServer(Path({str(model_path)!r}), n_threads=1, n_ctx=512)
            await server.start()
            print(server.pid, flush=True)
            await asyncio.sleep(600)

        asyncio.run(main())
        """
    )
    # Its temporary folder is made inside tmp_path, where the test looks for it.
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    with subprocess.Popen(
        [sys.executable, "-c", parent_code], stdout=subprocess.PIPE, text=True, env=env
    ) as parent:
        try:
            assert parent.stdout is not None
            child = int(parent.stdout.readline())
            assert _is_process_alive(child)
            parent.send_signal(signal.SIGKILL)  # no cleanup code of the parent runs
            parent.wait()
            deadline = time.monotonic() + 15
            while _is_process_alive(child) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert not _is_process_alive(child)
            # The child removed the parent's temporary folder (template, log, ready file).
            assert list(tmp_path.glob("ai-agent-local-*")) == []
        finally:
            parent.kill()
