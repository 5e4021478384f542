"""Whole runs on real SQLite files: no configured secret enters state, whatever brings it in.

A key exported after a pause, a hook's output, a tool's error text, the task and a person's plan:
each is scanned for in every byte the run wrote (database, WAL, memory file).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from ai_agent import Agent, ToolCategory, ToolSpec, UserPlan
from ai_agent.config import AgentSettings
from ai_agent.context import Event
from ai_agent.events import ModelDelta, ToolFinished, ToolOutput
from ai_agent.graph.secrets import ScrubbedEvents
from ai_agent.observability.redaction import SecretValues
from ai_agent.testing import ScriptedModel
from tests.graph.conftest import MakeAgent, call, recorder, text

KEY = "sk-canary-graph-8e2b4d6f1a"  # the backend key, given in the settings (not the environment)
LATE = "late-canary-5c7e9a1b3d"  # a tool's key, exported while the run waits at the gate


def written(tmp_path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(tmp_path)): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()
    }


def leaks(tmp_path: Path, *secrets: str) -> list[str]:
    return [
        f"{secret} in {name}"
        for name, data in written(tmp_path).items()
        for secret in secrets
        if secret.encode() in data
    ]


def keyed() -> AgentSettings:
    return AgentSettings(_env_file=None, model_backend={"api_key": KEY})


async def test_a_key_exported_after_a_pause_is_masked_from_then_on(
    make_agent: MakeAgent, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log: list[dict[str, Any]] = []
    monkeypatch.delenv("WEATHER_ACCESS", raising=False)
    tool = recorder(log, requires_env=("WEATHER_ACCESS",))  # a name that does not look secret
    turns = [call("note", text="rain"), text(f"Used the key {LATE}.")]
    agent = make_agent(turns, tools=[tool])
    async with agent:
        paused = await agent.run("note the weather")
        assert paused.status == "paused"
        assert [i["code"] for i in paused.gate["issues"]] == ["MISSING_ENV"]  # type: ignore[index]
        monkeypatch.setenv("WEATHER_ACCESS", LATE)
        done = await agent.resume(paused.thread_id, UserPlan(instructions="the key is set"))
    assert done.final_text == "Used the key ***."
    assert log[0]["ctx"]["env"] == {"WEATHER_ACCESS": LATE}  # the tool still gets the key
    assert leaks(tmp_path, LATE) == []


async def test_hooks_and_error_text_cannot_put_a_key_into_state(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    def broken(args: dict[str, Any], ctx: dict[str, Any]) -> str:
        raise RuntimeError(f"refused key {KEY}")

    tool = ToolSpec("fetch", broken, description="Fetch.", category=ToolCategory.READ_ONLY)
    hooks = {
        "reflect": lambda task, ctx: f"progress with {KEY}",
        "finalize": lambda task, ctx: f"final answer using {KEY}",
    }
    agent = make_agent(
        [call("fetch"), text("giving up")], tools=[tool], hooks=hooks, settings=keyed()
    )
    async with agent:
        paused = await agent.run("fetch it")  # TOOL_ERROR (0.90) pauses the run
        assert paused.status == "paused"
        assert "refused key ***" in paused.gate["prompt"]  # type: ignore[index]
        done = await agent.resume(paused.thread_id, UserPlan(instructions="stop trying"))
        state = await agent.get_state(done.thread_id)
    assert done.final_text == "final answer using ***"
    assert any(e.get("detail") == "progress with ***" for e in state["trace"])
    assert leaks(tmp_path, KEY) == []


async def test_the_task_and_a_plan_keep_no_key(
    make_agent: MakeAgent, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log: list[dict[str, Any]] = []
    tool = recorder(log, category=ToolCategory.MODIFICATION)  # waits for a person
    agent = make_agent([call("note", text="x"), text("done")], tools=[tool], settings=keyed())
    async with agent:
        paused = await agent.run(f"note it with {KEY}")
        assert paused.status == "paused"
        queued = await agent.submit_plan(
            paused.thread_id, UserPlan(approve=["*"], instructions=f"use {KEY} if asked")
        )
        done = await agent.resume(
            paused.thread_id, UserPlan(approve=["*"], instructions=f"use {KEY} if asked")
        )
        state = await agent.get_state(done.thread_id)
    assert queued["plan"]["instructions"] == "use *** if asked"
    assert done.status == "completed"
    assert state["task"] == "note it with ***"
    assert "the task holds a configured secret" in caplog.text
    assert KEY not in caplog.text
    assert leaks(tmp_path, KEY) == []


def test_a_secret_too_short_to_mask_is_named_in_a_warning(
    make_agent: MakeAgent, caplog: pytest.LogCaptureFixture
) -> None:
    settings = AgentSettings(
        _env_file=None,
        model_backend={"api_key": "ollama"},
        mcp_servers=[{"name": "api", "url": "http://h/mcp", "headers": {"X-Key": "k-123"}}],
    )
    with caplog.at_level(logging.WARNING, logger="ai_agent"):
        make_agent(settings=settings)
    warned = [r.getMessage() for r in caplog.records if "too short to be masked" in r.getMessage()]
    named = sorted(w.split(" is shorter than 8 characters")[0] for w in warned)
    assert named == [
        "the secret in mcp_servers[0].headers.X-Key",
        "the secret in model_backend.api_key",
    ]
    assert not any("ollama" in w or "k-123" in w for w in warned)


def test_events_flush_what_a_stream_held_before_anything_else() -> None:
    seen: list[Event] = []
    events = ScrubbedEvents(lambda e: seen.append(e.progress()), SecretValues([KEY]))  # type: ignore[arg-type]
    events(ToolOutput("t", "c1", "key: sk-canary-gr", "stdout", 1))
    events(ModelDelta("plain", 1))
    events(ToolFinished("t", "c1", KEY, 0.0, 1))
    assert [(e["type"], e.get("detail")) for e in seen] == [
        ("tool_output", "key: "),
        ("model_delta", "plain"),
        ("tool_output", "sk-canary-gr"),  # the stream ended without the rest of a secret
        ("tool_finished", "***"),
    ]


async def test_a_direct_tool_call_masks_what_the_caller_may_print(make_agent: MakeAgent) -> None:
    def careless(args: dict[str, Any], ctx: dict[str, Any]) -> str:
        return f"configured with {KEY}"

    tool = ToolSpec("careless", careless, description="Say.", category=ToolCategory.READ_ONLY)
    agent = make_agent(tools=[tool], settings=keyed())
    result = await agent.call_tool("careless", {})
    assert (result["content"], result["summary"]) == (
        "configured with ***",
        "careless: configured with ***",
    )


async def test_a_childs_answer_keeps_no_key_its_parent_knows(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    """The child's runs are stored in the parent's database: its mask is the parent's too.

    A child built with its own settings does not know the parent's backend key; its answer,
    run row, checkpoints and recorded calls held the key in the parent's database.
    """
    child = Agent(
        model=ScriptedModel([text(f"the key is {KEY}")]),
        memory_path=None,
        settings=AgentSettings(_env_file=None),
    )
    turns = [call("helper", task="find the key"), text("done")]
    parent = make_agent(turns, tools=[child.as_tool("helper", "Helps.")], settings=keyed())
    async with parent:
        done = await parent.run("ask the helper", thread_id="p")
        assert done.status == "completed"
        answered = await parent.get_result("p.c1.0")
    assert answered.final_text == "the key is ***"
    assert leaks(tmp_path, KEY) == []
