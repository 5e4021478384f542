"""Events are typed where they are produced; ``Agent(on_event=...)`` still receives its dicts.

The dicts of the ``on_event`` callback are rendered from the typed events at that one boundary.
These tests pin the dicts (a run paused and resumed, a direct tool call, each event's rendering),
that they are spelled in one place, and that listeners and the stream receive the very objects
the stages built (each fact reported once).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, get_args

import ai_agent
from ai_agent import ToolCategory, ToolSpec, UserPlan
from ai_agent.events import (
    Compacted,
    FinalDelta,
    LifecycleEvent,
    ModelDelta,
    ModelRetry,
    ProgressEvent,
    RunFinished,
    RunStarted,
    StageFinished,
    StageStarted,
    StreamEvent,
    ToolFinished,
    ToolStarted,
    _BackendNotice,
    _McpNotice,
    _ModelFinished,
    _ModelToolCall,
    _ModelWaiting,
    _TypedAnswer,
)
from tests.graph.conftest import MakeAgent, call, text
from tests.observability.test_agent_events import writer


def shout() -> ToolSpec:
    def work(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        ctx["on_output"]("loud\n")
        return {"status": "ok", "content": "shouted"}

    return ToolSpec("shout", work, description="Shout.", category=ToolCategory.READ_ONLY)


def timeless(value: Any) -> Any:
    """``value`` with its timings zeroed (they differ from run to run)."""
    if isinstance(value, dict):
        return {
            k: 0 if k in ("duration_ms", "execution_time_ms") else timeless(v)
            for k, v in value.items()
        }
    return value


def stages(iteration: int, *names: str) -> list[dict[str, Any]]:
    """The start and end of stages that report nothing else."""
    return [
        e
        for name in names
        for e in (
            {"type": "stage_started", "stage": name, "iteration": iteration},
            {"type": "stage_finished", "stage": name, "iteration": iteration, "duration_ms": 0},
        )
    ]


def draft(iteration: int, before: int, tool: str | None, detail: str = "") -> list[dict[str, Any]]:
    at = {"stage": "draft", "iteration": iteration}
    said: list[dict[str, Any]] = (
        [{"type": "model_tool_call", "tool": tool, **at}]
        if tool
        else [{"type": "model_delta", "detail": detail, **at}]
    )
    return [
        {"type": "stage_started", "stage": "draft", "iteration": before},
        {"type": "model_waiting", **at},
        *said,
        {
            "type": "model_finished",
            "detail": detail,
            "data": {"tool_calls": [tool] if tool else []},
            **at,
        },
        {"type": "stage_finished", "duration_ms": 0, **at},
    ]


def ran(
    iteration: int,
    tool: str,
    call_id: str,
    args: dict[str, Any],
    content: str,
    category: str = "read_only",
) -> dict[str, Any]:
    call = {"id": call_id, "name": tool, "args": args, "model_id": f"call_{iteration - 1}_0"}
    result = {
        "status": "ok",
        "content": content,
        "execution_time_ms": 0,
        "summary": f"{tool}: {content}",
        "tool_name": tool,  # named by the registry, from the catalog
        "category": category,
    }
    return {
        "type": "tool_finished",
        "stage": "act",
        "tool": tool,
        "iteration": iteration,
        "detail": "ok",
        "duration_ms": 0,
        "data": {"call_id": call_id, "call": call, "result": result},
    }


async def test_a_run_paused_and_resumed_gives_on_event_the_same_dicts(
    make_agent: MakeAgent,
) -> None:
    events: list[dict[str, Any]] = []
    agent = make_agent(
        [call("shout"), call("write_note", text="hi"), text("done")],
        tools=[shout(), writer()],
        on_event=events.append,
    )
    async with agent:
        paused = [e async for e in agent.astream("go", thread_id="t1")][-1]
        done = [e async for e in agent.astream_resume("t1", UserPlan(approve=["*"]))][-1]
        direct = await agent.call_tool("write_note", {"text": "x"}, approved=True)
    assert (paused.result.status, done.result.status) == ("paused", "completed")  # type: ignore[union-attr]
    assert direct["status"] == "ok"
    (report,) = [e["data"] for e in events if e["type"] == "gate_paused"]
    assert report["issues"][0]["code"] == "APPROVAL_REQUIRED"
    act, gate = {"stage": "act"}, {"stage": "gate", "iteration": 2}
    plan = {
        "activate_tools": [], "allow_continue": True, "approve": ["*"], "deny": [],
        "gate_token": None, "grant_scope": "call", "instructions": None, "edit_args": {},
        "always_allow": None, "confirm_always": False,
    }  # fmt: skip
    assert [timeless(e) for e in events] == [
        *stages(0, "recall"),
        *draft(1, 0, "shout"),
        *stages(1, "decide", "discover"),
        {"type": "stage_started", "stage": "act", "iteration": 1},
        {
            "type": "tool_started",
            "tool": "shout",
            "iteration": 1,
            "data": {"call_id": "c1.0"},
            **act,
        },
        {
            "type": "tool_output",
            "tool": "shout",
            "iteration": 1,
            "detail": "loud\n",
            "data": {"call_id": "c1.0", "stream": "stdout"},
            **act,
        },
        ran(1, "shout", "c1.0", {}, "shouted"),
        {"type": "stage_finished", "stage": "act", "iteration": 1, "duration_ms": 0},
        *stages(1, "reflect", "gate"),
        *draft(2, 1, "write_note"),
        *stages(2, "decide", "discover", "act", "reflect"),
        {"type": "stage_started", **gate},
        {"type": "gate_paused", "data": report, **gate},
        {"type": "stage_started", **gate},
        {"type": "gate_resumed", "data": {"source": "resume", "plan": plan}, **gate},
        {"type": "stage_finished", "duration_ms": 0, **gate},
        {"type": "stage_started", "stage": "act", "iteration": 2},
        {
            "type": "tool_started",
            "tool": "write_note",
            "iteration": 2,
            "data": {"call_id": "c2.0"},
            **act,
        },
        ran(2, "write_note", "c2.0", {"text": "hi"}, "written", "modification"),
        {"type": "stage_finished", "stage": "act", "iteration": 2, "duration_ms": 0},
        *stages(2, "reflect", "gate"),
        *draft(3, 2, None, "done"),
        *stages(3, "decide", "finalize", "persist"),
        {"type": "tool_started", "stage": "call_tool", "tool": "write_note"},
        {"type": "tool_finished", "stage": "call_tool", "tool": "write_note", "detail": "ok"},
    ]


RENDERED: list[tuple[ProgressEvent, dict[str, Any]]] = [
    (ModelRetry("503", 1.5, 2), {"type": "model_retry", "detail": "503", "duration_ms": 1500.0}),
    (ModelDelta("Hi", 2), {"type": "model_delta", "detail": "Hi"}),
    (_ModelWaiting(2), {"type": "model_waiting"}),
    (_ModelToolCall("t", 2), {"type": "model_tool_call", "tool": "t"}),
    (
        _ModelFinished("", ("t",), 2),
        {"type": "model_finished", "detail": "", "data": {"tool_calls": ["t"]}},
    ),
    (
        Compacted(2, "sliding_window", 900, 400, {"iteration": 2, "at": 1.0, "strategy": "s",
                  "tokens_before": 900, "tokens_after": 400, "removed": 3}),
        {"type": "compacted", "data": {"iteration": 2, "at": 1.0, "strategy": "s",
         "tokens_before": 900, "tokens_after": 400, "removed": 3}},
    ),
]  # fmt: skip


def test_each_event_renders_the_dict_on_event_always_received() -> None:
    for event, expected in RENDERED:
        assert event.progress() == {**expected, "stage": "draft", "iteration": 2}
    assert _BackendNotice("model ready").progress() == {"type": "backend", "detail": "model ready"}
    assert _McpNotice("up").progress() == {"type": "mcp", "detail": "up"}
    assert _TypedAnswer("{}", 3).progress() == {
        "type": "typed_answer", "stage": "finalize", "iteration": 3, "detail": "{}"
    }  # fmt: skip


def test_every_event_the_engine_reports_renders_its_dict() -> None:
    reported = set(get_args(ProgressEvent))
    assert all(callable(getattr(kind, "progress", None)) for kind in reported)
    # Listeners and the stream get the engine's events themselves (and what only they add).
    assert set(get_args(LifecycleEvent)) - reported == {RunStarted, RunFinished}
    assert set(get_args(StreamEvent)) - reported == {FinalDelta, RunFinished}


# The types of the progress dicts: they are spelled in ai_agent/events.py only, where each event
# renders its own; a producer that wrote a dict again would show here.
TYPES = (
    "stage_started", "stage_finished", "gate_paused", "gate_resumed", "compacted",
    "tool_started", "tool_output", "tool_finished", "model_waiting", "model_tool_call",
    "model_delta", "model_finished", "model_retry", "backend", "mcp", "typed_answer",
)  # fmt: skip


def test_progress_dicts_are_made_in_one_place() -> None:
    package = Path(ai_agent.__file__).parent
    names = "|".join(TYPES)
    spelled = re.compile(r'("type"\s*:\s*|type=)"(' + names + ')"')
    found = {
        path.relative_to(package).as_posix()
        for path in package.rglob("*.py")
        if spelled.search(path.read_text(encoding="utf-8"))
    }
    assert found == {"events.py"}


async def test_listeners_and_the_stream_receive_the_same_event_objects(
    make_agent: MakeAgent,
) -> None:
    heard: list[Any] = []
    agent = make_agent([call("shout"), text("done")], tools=[shout()])
    agent.add_listener(heard.append, StageStarted, StageFinished, ToolStarted, ToolFinished)
    async with agent:
        streamed = [e async for e in agent.astream("go")]
    shared = [
        e
        for e in streamed
        if isinstance(e, StageStarted | StageFinished | ToolStarted | ToolFinished)
    ]
    assert len(heard) == len(shared) > 4
    assert all(a is b for a, b in zip(heard, shared, strict=True))
    (finished,) = [e for e in heard if isinstance(e, ToolFinished)]
    assert finished.call is not None and finished.call["name"] == "shout"
    assert finished.tool_result is not None and finished.tool_result["content"] == "shouted"
