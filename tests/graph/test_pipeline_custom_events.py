"""``get_stream_writer()`` in a node or a tool: a CustomEvent on the run's events and the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langgraph.config import get_stream_writer

from ai_agent import PipelineBuilder, ToolCategory, ToolSpec
from ai_agent.cli import main
from ai_agent.config import AgentSettings
from ai_agent.events import CustomEvent
from tests.graph.conftest import MakeAgent, call, text

MODULE = """
from langgraph.config import get_stream_writer

from ai_agent import PipelineBuilder


def progress(state):
    get_stream_writer()({"step": "checked", "task": state["task"]})


pipeline = PipelineBuilder().add_node("progress", progress, after="recall")
"""


def progress(state: dict[str, Any]) -> None:
    get_stream_writer()({"step": "checked", "task": state["task"]})


def fetcher() -> ToolSpec:
    def fetch(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        get_stream_writer()({"fetched": args.get("url"), "of": 2})
        return {"status": "ok", "content": "page"}

    return ToolSpec(
        "fetch",
        fetch,
        description="Fetch a page.",
        category=ToolCategory.READ_ONLY,
        parameters={"type": "object", "properties": {"url": {"type": "string"}}},
    )


def writing() -> PipelineBuilder:
    return PipelineBuilder().add_node("progress", progress, after="recall")


async def test_a_nodes_and_a_tools_writes_reach_listeners_on_event_and_the_stream(
    make_agent: MakeAgent,
) -> None:
    seen: list[CustomEvent] = []
    dicts: list[dict[str, Any]] = []
    turns = [call("fetch", url="http://x"), text("done")]
    agent = make_agent(turns, tools=[fetcher()], pipeline=writing(), on_event=dicts.append)
    agent.add_listener(seen.append, CustomEvent)

    result = await agent.run("read x")

    assert result.status == "completed"
    assert seen == [
        CustomEvent({"step": "checked", "task": "read x"}),
        CustomEvent({"fetched": "http://x", "of": 2}),
    ]
    assert [d for d in dicts if d["type"] == "custom"] == [
        {"type": "custom", "data": {"step": "checked", "task": "read x"}},
        {"type": "custom", "data": {"fetched": "http://x", "of": 2}},
    ]

    streamed = [
        e
        async for e in make_agent(turns, tools=[fetcher()], pipeline=writing()).astream("read x")
        if isinstance(e, CustomEvent)
    ]
    assert streamed == seen


async def test_a_secret_written_to_the_stream_is_masked(
    make_agent: MakeAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAMBA_API_KEY", "sk-canary-654321")
    seen: list[CustomEvent] = []
    agent = make_agent(pipeline=writing(), settings=AgentSettings())
    agent.add_listener(seen.append, CustomEvent)
    await agent.run("use sk-canary-654321")
    assert seen == [CustomEvent({"step": "checked", "task": "use ***"})]


def test_the_cli_prints_a_status_line_for_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "flows_custom.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "done"}]))
    argv = ["run", "the task", "--db", str(tmp_path / "c.sqlite"), "--no-stream"]
    argv += ["--model", f"scripted:{script}", "--pipeline", "flows_custom:pipeline"]

    assert main(argv) == 0

    err = capsys.readouterr().err
    assert '[custom] {"step": "checked", "task": "the task"}' in err.splitlines()
