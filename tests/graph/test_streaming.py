"""Agent.astream / Agent.stream: typed events in order, quiet tool phases, live tool output."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from ai_agent import Agent, ToolCategory, ToolSpec
from ai_agent.config import AgentSettings
from ai_agent.events import (
    FinalDelta,
    GatePaused,
    ModelDelta,
    ModelRetry,
    RunFinished,
    StageFinished,
    StageStarted,
    StreamEvent,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    _ModelFinished,
    _ModelToolCall,
    _ModelWaiting,
)
from ai_agent.graph.events import StreamView
from ai_agent.testing import Fault, MockOpenAIServer, Reply
from tests.graph.conftest import MakeAgent, call, text


def streaming_tool(delay: float = 0.0, *, is_async: bool = False) -> ToolSpec:
    """A tool that prints lines as it works, like a shell command or a big file read."""

    def work(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        lines = [f"line {i}\n" for i in range(int(args.get("lines", 3)))]
        for line in lines:
            ctx["on_output"](line)
            time.sleep(delay)
        ctx["on_output"](b"\xe2\x9c\x93 do", stream="stderr")  # a check mark split mid-bytes
        ctx["on_output"](b"ne\n", stream="stderr")
        return {"status": "ok", "content": "".join(lines)}

    async def awork(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        ctx["on_output"]("async " * 10)
        await asyncio.sleep(0)
        return {"status": "ok", "content": "async done"}

    return ToolSpec(
        "long_job",
        awork if is_async else work,
        description="Run a long job and stream its output.",
        category=ToolCategory.READ_ONLY,
        parameters={"type": "object", "properties": {"lines": {"type": "integer"}}},
    )


def kinds(events: list[StreamEvent]) -> list[str]:
    return [type(e).__name__ for e in events]


async def collect(agent: Agent, task: str, **kw: Any) -> list[StreamEvent]:
    async with agent:
        return [event async for event in agent.astream(task, **kw)]


async def test_a_run_streams_stages_tokens_tool_output_and_the_answer(
    make_agent: MakeAgent,
) -> None:
    agent = make_agent(
        [
            {"text": "Let me run it.", **call("long_job", lines=3)},
            text("All three lines ran fine."),
        ],
        tools=[streaming_tool()],
    )
    events = await collect(agent, "run the job")
    assert isinstance(events[0], StageStarted) and events[0].stage == "recall"
    assert isinstance(events[-1], RunFinished)
    assert events[-1].result.status == "completed"
    deltas = [e.text for e in events if isinstance(e, ModelDelta)]
    assert "".join(deltas) == "Let me run it.All three lines ran fine."
    # The tool phase's text is never part of the final answer.
    assert "".join(e.text for e in events if isinstance(e, FinalDelta)) == (
        "All three lines ran fine."
    )
    output = [e for e in events if isinstance(e, ToolOutput)]
    assert [e.text for e in output if e.stream == "stdout"] == ["line 0\n", "line 1\n", "line 2\n"]
    assert "".join(e.text for e in output if e.stream == "stderr") == "✓ done\n"
    started = next(e for e in events if isinstance(e, ToolStarted))
    finished = next(e for e in events if isinstance(e, ToolFinished))
    assert started.call_id == finished.call_id == output[0].call_id == "c1.0"
    assert finished.status == "ok"
    order = kinds(events)
    assert order.index("ToolStarted") < order.index("ToolOutput") < order.index("ToolFinished")
    stages = [e.stage for e in events if isinstance(e, StageFinished)]
    assert stages[:3] == ["recall", "draft", "decide"]
    assert stages[-2:] == ["finalize", "persist"]


async def test_quiet_tool_phases_stream_only_the_final_answer(make_agent: MakeAgent) -> None:
    agent = make_agent(
        [{"text": "Working on it", **call("long_job")}, text("Done: 3 lines.")],
        tools=[streaming_tool()],
    )
    events = await collect(agent, "run", quiet_tools=True)
    assert not [e for e in events if isinstance(e, ModelDelta | ToolOutput)]
    assert [e.text for e in events if isinstance(e, FinalDelta)] == ["Done: 3 lines."]
    assert any(isinstance(e, ToolStarted) for e in events)  # status still shows


async def test_a_long_answer_streams_live_once_it_is_clearly_prose(make_agent: MakeAgent) -> None:
    answer = " ".join(f"word{i}" for i in range(120))
    events = await collect(make_agent([text(answer)]), "write a lot", quiet_tools=True)
    finals = [e.text for e in events if isinstance(e, FinalDelta)]
    assert "".join(finals) == answer
    assert len(finals) > 10  # held until past the threshold, then one delta per token
    assert len(finals[0]) > 256


@pytest.mark.parametrize("quiet", [True, False])
async def test_long_prose_before_a_tool_call_is_never_streamed_as_the_answer(
    make_agent: MakeAgent, quiet: bool
) -> None:
    musing = " ".join(f"thinking{i}" for i in range(60))  # past the hold, then a tool call
    agent = make_agent(
        [{"text": musing, **call("long_job")}, text("Done: 3 lines.")],
        tools=[streaming_tool()],
    )
    events = await collect(agent, "run", quiet_tools=quiet)
    assert len(musing) > 256
    assert [e.text for e in events if isinstance(e, FinalDelta)] == ["Done: 3 lines."]


async def test_without_model_streaming_the_answer_comes_in_one_piece(
    make_agent: MakeAgent,
) -> None:
    settings = AgentSettings(streaming={"stream_model_responses": False})
    agent = make_agent([text("whole answer")], settings=settings)
    events = await collect(agent, "answer")
    assert [e.text for e in events if isinstance(e, FinalDelta)] == ["whole answer"]
    assert not [e for e in events if isinstance(e, ModelDelta)]


async def test_tool_output_streaming_can_be_switched_off(make_agent: MakeAgent) -> None:
    settings = AgentSettings(streaming={"stream_tool_results": False})
    agent = make_agent(
        [call("long_job"), text("done")], tools=[streaming_tool()], settings=settings
    )
    events = await collect(agent, "run")
    assert not [e for e in events if isinstance(e, ToolOutput)]
    assert events[-1].result.final_text == "done"  # type: ignore[union-attr]


async def test_tool_output_is_chunked_by_chunk_size(make_agent: MakeAgent) -> None:
    settings = AgentSettings(streaming={"chunk_size": 16})
    agent = make_agent(
        [call("long_job"), text("ok")], tools=[streaming_tool(is_async=True)], settings=settings
    )
    events = await collect(agent, "run")
    chunks = [e.text for e in events if isinstance(e, ToolOutput)]
    assert "".join(chunks) == "async " * 10
    assert all(len(c.encode()) <= 16 for c in chunks)
    assert len(chunks) == 4


async def test_a_paused_run_streams_the_gate_report(make_agent: MakeAgent) -> None:
    agent = make_agent([call("missing_tool"), text("never")])
    events = await collect(agent, "use a tool that does not exist")
    paused = [e for e in events if isinstance(e, GatePaused)]
    assert len(paused) == 1
    assert paused[0].report is not None
    assert paused[0].report["issues"][0]["code"] == "TOOL_MISSING"
    result = events[-1].result  # type: ignore[union-attr]
    assert result.status == "paused"
    async with agent:
        resumed = [
            e
            async for e in agent.astream_resume(
                result.thread_id, {"allow_continue": False}, quiet_tools=True
            )
        ]
    assert resumed[-1].result.status == "cancelled"  # type: ignore[union-attr]


async def test_leaving_the_stream_early_cancels_the_run_which_stays_resumable(
    make_agent: MakeAgent,
) -> None:
    agent = make_agent(
        [call("long_job", lines=40), text("finished")], tools=[streaming_tool(delay=0.05)]
    )
    async with agent:
        stream = agent.astream("run", thread_id="early")
        async for event in stream:
            if isinstance(event, ToolOutput):
                break
        await stream.aclose()  # type: ignore[attr-defined]
        record = await agent.store.get_run("early")
        assert record is not None and record["status"] == "failed"
        result = await agent.resume("early")
    assert result.status == "completed"
    assert result.final_text == "finished"


async def test_model_retries_are_streamed() -> None:
    with MockOpenAIServer([Fault.unavailable(), Reply(text="back again")]) as server:
        settings = AgentSettings(
            model_backend={"base_url": server.base_url, "max_retries": 2},
            retry={"initial_backoff_seconds": 0.01},
        )
        agent = Agent(settings=settings, checkpoint_path="c.sqlite", memory_path=None)
        events = await collect(agent, "hello")
    retries = [e for e in events if isinstance(e, ModelRetry)]
    assert len(retries) == 1
    assert "503" in retries[0].error
    assert retries[0].wait_seconds == pytest.approx(0.01)
    assert "".join(e.text for e in events if isinstance(e, FinalDelta)) == "back again"


def test_the_sync_stream(make_agent: MakeAgent) -> None:
    agent = make_agent([call("long_job"), text("sync ok")], tools=[streaming_tool()])
    events = list(agent.stream("run"))
    assert isinstance(events[-1], RunFinished)
    assert events[-1].result.final_text == "sync ok"
    assert [e.text for e in events if isinstance(e, ToolOutput)][:1] == ["line 0\n"]


def test_the_sync_stream_can_be_left_early(make_agent: MakeAgent) -> None:
    agent = make_agent([call("long_job", lines=50), text("x")], tools=[streaming_tool(delay=0.05)])
    for event in agent.stream("run", thread_id="leave"):
        if isinstance(event, ToolOutput):
            break
    result = agent.resume_sync("leave")
    assert result.status == "completed"


def test_the_sync_stream_raises_what_the_run_raises(make_agent: MakeAgent) -> None:
    agent = make_agent([text("x")])
    with pytest.raises(Exception, match="the task is empty"):
        list(agent.stream("   "))


def test_sync_resume_stream(make_agent: MakeAgent) -> None:
    agent = make_agent([call("missing_tool"), text("x")])
    first = list(agent.stream("go", thread_id="s1"))
    assert first[-1].result.status == "paused"  # type: ignore[union-attr]
    again = list(agent.stream_resume("s1", {"allow_continue": False}))
    assert again[-1].result.status == "cancelled"  # type: ignore[union-attr]


def test_the_stream_view_leaves_out_internal_events_and_holds_tool_phases() -> None:
    view = StreamView()
    assert view(_ModelWaiting(1)) == []
    assert view(ToolStarted("t", "", 0)) == [ToolStarted("t", "", 0)]
    # A tool call seen mid-turn: the held text is a tool phase, never a final answer.
    view(StageStarted("draft", 0))
    view(ModelDelta("Let me check", 1))
    assert view(_ModelToolCall("t", 1)) == []
    assert view(_ModelToolCall("u", 1)) == []  # a second call of the turn
    assert view(ModelDelta("more", 1)) == [ModelDelta("more", 1)]  # still no final answer
    assert view(_ModelFinished("", ("t",), 1)) == []
    # An empty final turn gives no delta.
    view(StageStarted("draft", 1))
    assert view(_ModelFinished("", (), 2)) == []


async def test_listeners_hear_model_retries_of_a_plain_run(tmp_path: Any) -> None:
    # Retries are a lifecycle event: a listener hears them whether or not anyone streams.
    with MockOpenAIServer([Fault.unavailable(), Reply(text="back again")]) as server:
        settings = AgentSettings(
            model_backend={"base_url": server.base_url, "max_retries": 2},
            retry={"initial_backoff_seconds": 0.01},
        )
        agent = Agent(
            settings=settings, checkpoint_path=str(tmp_path / "c.sqlite"), memory_path=None
        )
        heard: list[ModelRetry] = []
        agent.add_listener(heard.append, ModelRetry)
        async with agent:
            result = await agent.run("hello")
    assert result.final_text == "back again"
    assert len(heard) == 1
    assert "503" in heard[0].error
    assert heard[0].wait_seconds == pytest.approx(0.01)
    assert heard[0].iteration == 1
