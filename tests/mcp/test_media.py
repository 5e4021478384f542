"""Images and audio from MCP tools: content parts for a model that reads them, text otherwise.

Real servers on both ends: server-everything's ``get-tiny-image`` and our FastMCP server's
``chime`` (audio) over stdio, and the mock OpenAI server, which refuses what the real API refuses
(an image in a tool message), records each request body as it arrived.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest

from ai_agent import Agent, RunResult, UserPlan, tool
from ai_agent.config import AgentSettings, McpServerConfig
from ai_agent.context import Event
from ai_agent.testing import MockOpenAIServer, Reply
from tests.mcp.conftest import SCOPE, everything_server, fastmcp_stdio

pytestmark = pytest.mark.timeout(180)


def _tiny_image() -> str:
    """server-everything's MCP logo, as the server sends it (base64 PNG)."""
    source = SCOPE / "server-everything" / "dist" / "tools" / "get-tiny-image.js"
    found = re.search(r'MCP_TINY_IMAGE = "([A-Za-z0-9+/=]+)"', source.read_text())
    assert found is not None
    return found[1]


def _settings(server: MockOpenAIServer, **backend: Any) -> AgentSettings:
    return AgentSettings(model_backend={"base_url": server.base_url, "model": "m", **backend})


def _agent(tmp_path: Path, settings: AgentSettings, mcp: McpServerConfig, **kw: Any) -> Agent:
    return Agent(
        settings=settings,
        mcp_servers=[mcp],
        checkpoint_path=tmp_path / "runs.sqlite",
        memory_path=None,
        **kw,
    )


def _after_the_tool(body: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The tool message of a request and the messages after it."""
    messages = body["messages"]
    index = next(i for i, m in enumerate(messages) if m["role"] == "tool")
    return messages[index], messages[index + 1 :]


def _call(tool: str, **args: Any) -> Reply:
    return Reply(tool_calls=[{"name": tool, "args": args}])


async def test_an_image_reaches_a_model_that_reads_images_as_a_content_part(
    everything_entry: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    image = _tiny_image()
    digest = hashlib.sha256(base64.b64decode(image)).hexdigest()
    size = len(base64.b64decode(image))
    events: list[Event] = []
    script = [_call("every__get-tiny-image"), Reply(text="the MCP logo")]
    with MockOpenAIServer(script) as server:
        settings = _settings(server, media_inputs=["image"])
        settings.logging.include_request_body = True
        settings.logging.body_size_limit = 1_000_000
        caplog.set_level(logging.DEBUG, logger="ai_agent")
        agent = _agent(
            tmp_path, settings, everything_server(everything_entry), on_event=events.append
        )
        result = await agent.run("what does the image show?")
        await agent.aclose()
    assert result.status == "completed", result.error
    assert result.final_text == "the MCP logo"
    assert len(server.requests) == 2
    tool, after = _after_the_tool(server.requests[1].body)
    # The tool message is text, as the API requires: the server's text and the image described.
    description = f"[image image/png, {size} bytes, sha256 {digest[:12]}]"
    assert tool["content"] == (
        f"Here's the image you requested:\n{description}\nThe image above is the MCP logo."
    )
    # The image follows as a user message of content parts, its bytes as a data URL.
    assert [m["role"] for m in after] == ["user"]
    parts = after[0]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url"]
    assert (
        f"returned by the tool every.get-tiny-image in reply to call {tool['tool_call_id']}"
        in (parts[0]["text"])
    )
    assert parts[1]["image_url"] == {"url": f"data:image/png;base64,{image}"}

    # The checkpoint keeps the part (a resume sends it again); nothing shown keeps its bytes.
    state = await agent.get_state(result.thread_id)
    kept = next(m for m in state["messages"] if m["role"] == "tool")
    assert [(p["kind"], p["size"], p["sha256"]) for p in kept["media"]] == [("image", size, digest)]
    assert image not in json.dumps(result.trace)
    finished = [e for e in events if e.get("type") == "tool_finished"]
    assert image not in json.dumps(finished, default=str)
    assert finished[0]["data"]["result"]["media"][0]["sha256"] == digest
    assert image[:200] not in caplog.text
    assert f"<base64: {size} bytes, sha256 {digest[:12]}>" in caplog.text


async def _described(
    everything_entry: Path, tmp_path: Path, **backend: Any
) -> tuple[Agent, RunResult, dict[str, Any]]:
    """A run whose tool returns an image the model is not sent: it gets the description only."""
    script = [_call("every__get-tiny-image"), Reply(text="an image I cannot see")]
    with MockOpenAIServer(script) as server:
        settings = _settings(server, **backend)
        agent = _agent(tmp_path, settings, everything_server(everything_entry))
        result = await agent.run("what does the image show?")
        await agent.aclose()
    assert result.status == "completed", result.error
    tool, after = _after_the_tool(server.requests[1].body)
    assert "[image image/png, " in tool["content"]
    assert after == []
    return agent, result, server.requests[1].body


async def test_a_model_that_reads_no_images_gets_the_description_only(
    everything_entry: Path, tmp_path: Path
) -> None:
    agent, result, body = await _described(everything_entry, tmp_path)
    assert "image_url" not in json.dumps(body)
    state = await agent.get_state(result.thread_id)
    # No bytes are kept that no request carries: not in the checkpoint, not in the journal.
    assert "media" not in next(m for m in state["messages"] if m["role"] == "tool")
    assert "media" not in state["results"][0]["result"]


async def test_an_image_over_the_size_limit_is_described(
    everything_entry: Path, tmp_path: Path
) -> None:
    await _described(
        everything_entry, tmp_path, media_inputs=["image", "audio"], max_media_bytes=100
    )


async def test_audio_reaches_a_model_that_reads_audio_as_input_audio(tmp_path: Path) -> None:
    script = [_call("py__chime"), _call("py__chime", kind="ogg"), Reply(text="silence")]
    with MockOpenAIServer(script) as server:
        agent = _agent(tmp_path, _settings(server, media_inputs=["audio"]), fastmcp_stdio())
        result = await agent.run("listen")
        await agent.aclose()
    assert result.status == "completed", result.error
    tool, after = _after_the_tool(server.requests[1].body)
    assert tool["content"].startswith("[audio audio/wav, 844 bytes, sha256 ")
    audio = after[0]["content"][1]
    assert audio["type"] == "input_audio"
    assert audio["input_audio"]["format"] == "wav"
    wav = base64.b64decode(audio["input_audio"]["data"])
    assert wav.startswith(b"RIFF") and len(wav) == 844
    # audio/ogg is not a format input_audio takes: the model gets its description.
    last = server.requests[2].body["messages"]
    assert last[-1]["role"] == "tool"
    assert last[-1]["content"].startswith("[audio audio/ogg, 844 bytes, sha256 ")
    sent = [p for m in last if isinstance(m["content"], list) for p in m["content"]]
    assert [p["type"] for p in sent] == ["text", "input_audio"]  # the first clip only


@tool(category="modification")
def save_note(text: str) -> str:
    """Save a note (a change a person approves first)."""
    return f"saved {text}"


async def test_a_paused_run_resumes_and_replays_with_its_image(
    everything_entry: Path, tmp_path: Path
) -> None:
    image = _tiny_image()
    script = [
        _call("every__get-tiny-image"),
        _call("save_note", text="logo"),
        Reply(text="the MCP logo"),
    ]
    with MockOpenAIServer(script) as server:
        settings = _settings(server, media_inputs=["image"])
        mcp = everything_server(everything_entry)
        agent = _agent(tmp_path, settings, mcp, tools=[save_note])
        paused = await agent.run("what does the image show?")
        await agent.aclose()
        assert paused.status == "paused", paused.error
        # Another Agent (another process, as far as the run knows) resumes it from the database.
        again = _agent(tmp_path, settings, mcp, tools=[save_note])
        resumed = await again.resume(paused.thread_id, UserPlan(approve=["*"]))
        assert resumed.status == "completed", resumed.error
        assert resumed.final_text == "the MCP logo"
        assert len(server.requests) == 3
        # The request after the resume carries the image the checkpoint kept.
        assert f"data:image/png;base64,{image}" in json.dumps(server.requests[2].body)
        # A recorded replay asks no model and calls no tool: each request it rebuilds, image
        # included, hashes as the recorded one did.
        replay = await again.replay(resumed.thread_id)
        await again.aclose()
    assert replay.divergence is None
    assert replay.status == "completed"
    assert replay.final_text == "the MCP logo"
    assert len(server.requests) == 3


def test_the_mock_server_refuses_an_image_in_a_tool_message_as_the_api_does() -> None:
    import httpx

    body = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "t", "arguments": "{}"}}
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "a",
                "content": [
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}
                ],
            },
        ],
    }
    with MockOpenAIServer([Reply(text="never")]) as server:
        answer = httpx.post(f"{server.base_url}/chat/completions", json=body)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["message"] == (
        "Invalid 'messages[2]'. Image URLs are only allowed for messages with role 'user', but "
        "this message with role 'tool' contains an image URL."
    )
    assert error["param"] == "messages[2].content[0]"
