"""What Agent(model=...) accepts, made into a caller (ai_agent.models.resolve).

The real local server is driven end to end in tests/local (it needs the model); here a stand-in
with its interface shows what resolution does around it: events, the key kept secret, the client
pointed at it, and the server stopped when anything after its start fails.
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any, ClassVar, cast

import pytest

import ai_agent.local
from ai_agent.config import AgentSettings
from ai_agent.context import Event
from ai_agent.errors import ConfigError
from ai_agent.models import resolve
from ai_agent.models.resolve import (
    check_backend,
    read_model_argument,
    resolve_model,
    summary_caller,
)
from ai_agent.observability.redaction import SecretValues
from ai_agent.testing import ScriptedModel


class StandInServer:
    """The interface of `ai_agent.local.LocalModelServer` that resolution uses."""

    started: ClassVar[list[StandInServer]] = []

    def __init__(self, *, progress: Any) -> None:
        self.progress = progress
        self.base_url = "http://127.0.0.1:9/v1"
        self.model_id = "qwen-local"
        self.api_key = "local-key-5f2b9c"
        self.running = False

    async def start(self) -> None:
        self.progress("model ready")
        self.running = True
        StandInServer.started.append(self)

    async def stop(self) -> None:
        self.running = False


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> type[StandInServer]:
    StandInServer.started = []
    monkeypatch.setattr(ai_agent.local, "LocalModelServer", StandInServer)
    return StandInServer


def test_only_known_backends() -> None:
    assert check_backend("openai") == "openai"
    with pytest.raises(ConfigError, match=r"unknown backend 'ollama'; use 'openai' or 'local'"):
        check_backend("ollama")


def test_a_script_is_read_when_the_argument_is(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["hello"]), encoding="utf-8")
    assert isinstance(read_model_argument(f"scripted:{script}"), ScriptedModel)
    assert read_model_argument("qwen2.5") == "qwen2.5"
    with pytest.raises(ConfigError, match="does not exist"):
        read_model_argument(f"scripted:{tmp_path / 'none.json'}")


async def test_a_model_id_is_a_model_on_the_configured_server() -> None:
    settings = AgentSettings(model_backend={"base_url": "http://models.test/v1"})
    resolved = await resolve_model(
        "qwen2.5", backend="openai", settings=settings, secrets=SecretValues()
    )
    assert resolved.backend is not None and resolved.local is None
    assert (resolved.backend.model, resolved.caller.base_url) == (
        "qwen2.5",
        "http://models.test/v1",
    )
    await resolved.caller.aclose()


async def test_the_local_backend_starts_the_server_and_calls_it(
    stand_in: type[StandInServer],
) -> None:
    events: list[Event] = []
    secrets = SecretValues()
    resolved = await resolve_model(
        None,
        backend="local",
        settings=AgentSettings(model_backend={"temperature": 0.7}),
        secrets=secrets,
        on_event=lambda event: events.append(event.progress()),  # type: ignore[arg-type]
    )
    [server] = stand_in.started
    assert server.running and resolved.local is cast(Any, server)
    assert [e.get("detail") for e in events] == [
        "starting the local llama.cpp server",
        "model ready",
    ]
    assert server.api_key in secrets.values()
    backend = resolved.backend
    assert backend is not None and backend.api_key is not None
    assert (backend.base_url, backend.model, backend.api_key.get_secret_value()) == (
        server.base_url,
        server.model_id,
        server.api_key,
    )
    assert (backend.temperature, backend.seed) == (0.7, 42)
    assert resolved.caller.base_url == server.base_url
    await resolved.caller.aclose()


async def test_a_failure_after_the_local_server_started_stops_it(
    stand_in: type[StandInServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_client(*args: Any, **kwargs: Any) -> Any:
        raise ImportError("langchain_openai is missing")

    monkeypatch.setattr(resolve, "make_chat_model", no_client)
    with pytest.raises(ImportError):
        await resolve_model(None, backend="local", settings=AgentSettings(), secrets=SecretValues())
    [server] = stand_in.started
    assert not server.running


async def test_a_summary_model_is_another_model_on_the_same_server() -> None:
    settings = AgentSettings(model_backend={"base_url": "http://models.test/v1"})
    caller = summary_caller(settings.model_backend, "small", settings, SecretValues())
    assert (caller.model_name, caller.base_url) == ("small", "http://models.test/v1")
    await caller.aclose()


async def test_the_client_is_made_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The first run imports the chat client's packages (a second or more) as it makes the
    client: the loop must go on meanwhile (a heartbeat, a timeout, a cancellation, a page).
    Here making the client waits until a task on the loop has run: on the loop's own thread it
    could never see it, and the wait would end unanswered."""
    from ai_agent import Agent
    from ai_agent.testing import MockOpenAIServer

    started, loop_ran = threading.Event(), threading.Event()
    seen: list[bool] = []
    make = resolve.make_chat_model  # type: ignore[attr-defined]  # what the module calls

    def making(*args: Any, **kwargs: Any) -> Any:
        started.set()
        seen.append(loop_ran.wait(10))  # on the loop's thread: never set, False after 10 s
        return make(*args, **kwargs)

    monkeypatch.setattr(resolve, "make_chat_model", making)
    with MockOpenAIServer(["hello"]) as server:
        settings = AgentSettings(model_backend={"base_url": server.base_url})
        agent = Agent(settings=settings, checkpoint_path=tmp_path / "c.sqlite", memory_path=None)
        async with agent:
            run = asyncio.create_task(agent.run("hi"))
            assert await asyncio.to_thread(started.wait, 30)  # the run is making the client
            loop_ran.set()  # and this task ran meanwhile
            assert (await run).status == "completed"
    assert seen == [True]
