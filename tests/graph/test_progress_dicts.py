"""``Agent(on_event=...)`` receives the same progress dicts whatever builds them.

The engine's events are typed where they are produced; the dicts of the ``on_event`` callback are
rendered from them at that one boundary. These tests pin the dicts' shape (types, stages, tools,
details and the keys of ``data``) so a change in how events are built cannot change them.
"""

from __future__ import annotations

from typing import Any

from ai_agent import ToolCategory, ToolSpec, UserPlan
from tests.graph.conftest import MakeAgent, call, text


def shout() -> ToolSpec:
    def work(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        ctx["on_output"]("loud\n")
        return {"status": "ok", "content": "shouted"}

    return ToolSpec("shout", work, description="Shout.", category=ToolCategory.READ_ONLY)


def write() -> ToolSpec:
    return ToolSpec(
        "write_note",
        lambda args, ctx: {"status": "ok", "content": "written"},
        description="Write a note.",
        category=ToolCategory.MODIFICATION,
        parameters={"type": "object", "properties": {"text": {"type": "string"}}},
    )


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
    iteration: int, tool: str, call_id: str, args: dict[str, Any], content: str
) -> dict[str, Any]:
    call = {"id": call_id, "name": tool, "args": args, "model_id": f"call_{iteration - 1}_0"}
    result = {
        "status": "ok",
        "content": content,
        "execution_time_ms": 0,
        "summary": f"{tool}: {content}",
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
        tools=[shout(), write()],
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
        "gate_token": None, "grant_scope": "call", "instructions": None,
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
        ran(2, "write_note", "c2.0", {"text": "hi"}, "written"),
        {"type": "stage_finished", "stage": "act", "iteration": 2, "duration_ms": 0},
        *stages(2, "reflect", "gate"),
        *draft(3, 2, None, "done"),
        *stages(3, "decide", "finalize", "persist"),
        {"type": "tool_started", "stage": "call_tool", "tool": "write_note"},
        {"type": "tool_finished", "stage": "call_tool", "tool": "write_note", "detail": "ok"},
    ]
