"""Lifecycle listeners, metrics and logs of whole runs (scripted models, real SQLite)."""

from __future__ import annotations

from typing import Any

from ai_agent import ToolCategory, ToolSpec, UserPlan
from ai_agent.events import (
    Compacted,
    GatePaused,
    GateResumed,
    RunFinished,
    RunStarted,
    StageFinished,
    StageStarted,
    ToolFinished,
    ToolStarted,
)
from ai_agent.observability import current_ids
from ai_agent.testing import FunctionModel
from tests.observability import collectors
from tests.observability.conftest import Logs, MakeAgent, call, text

NOTES: list[dict[str, Any]] = [
    {"path": "tides.md", "section": "Tides", "score": 0.8123456, "snippet": "High tide " * 30},
    {"path": "moon.md", "section": None, "score": 0.5, "snippet": "The moon pulls."},
]


def search_tool() -> ToolSpec:
    """A find_similar look-alike: the notes flow's result shape."""

    def fn(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        return {
            "status": "ok",
            "content": {"ok": True, "data": NOTES, "took_ms": 1.5},
            "meta": {"k": args.get("k", 20)},
        }

    return ToolSpec(
        "search_notes",
        fn,
        description="Search the notes.",
        category=ToolCategory.READ_ONLY,
        parameters={"type": "object", "properties": {"k": {"type": "integer"}}},
    )


def writer() -> ToolSpec:
    return ToolSpec(
        "write_note",
        lambda args, ctx: {"status": "ok", "content": "written"},
        description="Write a note.",
        category=ToolCategory.MODIFICATION,
        parameters={"type": "object", "properties": {"text": {"type": "string"}}},
    )


def kinds(events: list[Any]) -> list[str]:
    return [type(e).__name__ for e in events]


async def test_listeners_see_the_whole_lifecycle_of_a_run(make_agent: MakeAgent) -> None:
    events: list[Any] = []
    agent = make_agent([call("search_notes", k=5), text("Twice a day.")], tools=[search_tool()])
    agent.add_listener(events.append)
    async with agent:
        result = await agent.run("when is high tide?")
    assert result.status == "completed"
    stages = [e.stage for e in events if isinstance(e, StageStarted)]
    assert stages == [
        "recall", "draft", "decide", "discover", "act", "reflect", "gate",
        "draft", "decide", "finalize", "persist",
    ]  # fmt: skip
    assert kinds(events)[:2] == ["RunStarted", "StageStarted"]
    assert kinds(events)[-2:] == ["StageFinished", "RunFinished"]
    act = kinds(events).index("ToolStarted")
    assert kinds(events)[act - 1 : act + 3] == [
        "StageStarted", "ToolStarted", "ToolFinished", "StageFinished",
    ]  # fmt: skip
    started = events[0]
    assert isinstance(started, RunStarted)
    assert (started.thread_id, started.resumed) == (result.thread_id, False)
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.result.status == "completed"
    tool = next(e for e in events if isinstance(e, ToolFinished))
    assert (tool.tool, tool.status, tool.telemetry["k"], tool.telemetry["item_count"]) == (
        "search_notes",
        "ok",
        5,
        2,
    )
    assert tool.telemetry["items"][0] == {
        "path": "tides.md",
        "section": "Tides",
        "score": 0.8123,
        "snippet": NOTES[0]["snippet"],
    }
    assert all(e.duration_ms >= 0 for e in events if isinstance(e, StageFinished))


async def test_listeners_can_pick_types_and_see_the_runs_ids(make_agent: MakeAgent) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    def listener(event: StageStarted | ToolStarted) -> None:
        seen.append((type(event).__name__, current_ids()))

    agent = make_agent([call("calculator", expression="1+1"), text("2")], tools=["calculator"])
    remove = agent.add_listener(listener, ToolStarted)
    async with agent:
        first = await agent.run("add")
        remove()
        await agent.run("add again")
    assert [name for name, _ in seen] == ["ToolStarted"]
    ids = seen[0][1]
    assert ids["thread_id"] == first.thread_id and ids["stage"] == "act"
    assert ids["iteration"] == 1 and ids["run_id"]


async def test_a_pause_and_a_resume_are_two_runs_of_one_thread(make_agent: MakeAgent) -> None:
    events: list[Any] = []
    agent = make_agent([call("write_note", text="hi"), text("written")], tools=[writer()])
    agent.add_listener(events.append, RunStarted, GatePaused, GateResumed, RunFinished)
    async with agent:
        paused = await agent.run("write it")
        done = await agent.resume(paused.thread_id, UserPlan(approve=["*"]))
    assert (paused.status, done.status) == ("paused", "completed")
    assert kinds(events) == [
        "RunStarted", "GatePaused", "RunFinished", "RunStarted", "GateResumed", "RunFinished",
    ]  # fmt: skip
    first, second = events[0], events[3]
    assert (first.resumed, second.resumed) == (False, True)
    assert first.thread_id == second.thread_id and first.run_id != second.run_id
    pause, resume = events[1], events[4]
    assert pause.report["issues"][0]["code"] == "APPROVAL_REQUIRED"
    assert resume == GateResumed(pause.iteration, "resume", True, approve=("*",))
    assert events[2].result.status == "paused"


async def test_a_plan_from_the_hook_is_a_gate_resume_from_the_hook(make_agent: MakeAgent) -> None:
    events: list[Any] = []
    agent = make_agent(
        [call("write_note", text="hi"), text("not written")],
        tools=[writer()],
        hooks={"query_user_plan": lambda task, gate, ctx: {"deny": ["*"]}},
    )
    agent.add_listener(events.append, GateResumed)
    async with agent:
        result = await agent.run("write it")
    assert result.status == "completed"
    assert events == [GateResumed(1, "hook", True, deny=("*",))]


async def test_failing_listeners_and_callbacks_do_not_stop_the_run(
    make_agent: MakeAgent, logs: Logs
) -> None:
    logs.start("WARNING")

    def broken(event: object) -> None:
        raise RuntimeError("listener bug")

    def broken_callback(event: object) -> None:
        raise ValueError("callback bug")

    agent = make_agent([text("fine")], on_event=broken_callback)
    agent.add_listener(broken)
    async with agent:
        result = await agent.run("go")
    assert result.status == "completed" and result.final_text == "fine"
    warnings = logs.where(level="WARNING")
    assert any("failed on RunStarted" in w["message"] for w in warnings)
    assert any(w["message"].startswith("the on_event callback failed") for w in warnings)
    assert all(w["thread_id"] == result.thread_id for w in warnings)


async def test_compaction_is_an_event_and_a_log_line(make_agent: MakeAgent, logs: Logs) -> None:
    logs.start("INFO")
    events: list[Any] = []
    page = ToolSpec(
        "page",
        lambda args, ctx: {"status": "ok", "content": "lorem ipsum dolor " * 120},
        description="Fetch a long page.",
        category=ToolCategory.READ_ONLY,
        parameters={"type": "object", "properties": {"n": {"type": "integer"}}},
    )
    turns = [call("page", n=1), call("page", n=2), call("page", n=3), text("done")]
    replies = iter(turns)  # by count, not by the conversation: compaction shortens it
    model = FunctionModel(lambda messages, info: next(replies))
    settings = {
        "context": {
            "strategy": "sliding_window",
            "trigger_threshold_tokens": 600,
            "target_tokens": 400,
            "preserve_recent_turns": 1,
        }
    }
    agent = make_agent(model=model, tools=[page], settings=settings)
    agent.add_listener(events.append, Compacted)
    async with agent:
        result = await agent.run("read pages")
    assert result.status == "completed"
    assert events and all(e.strategy == "sliding_window" for e in events)
    assert all(e.tokens_after < e.tokens_before for e in events)
    lines = logs.where(event="compacted")
    assert len(lines) == len(events) and lines[0]["tokens_after"] == events[0].tokens_after


async def test_metrics_time_runs_stages_model_and_tool_calls(make_agent: MakeAgent) -> None:
    collectors.SEEN.clear()
    agent = make_agent(
        [call("calculator", expression="2*3"), text("6")],
        tools=["calculator"],
        settings={
            "observability": {"custom_collectors": ["tests.observability.collectors:Recorder"]}
        },
    )
    async with agent:
        await agent.run("multiply")
    metrics = agent.metrics
    assert metrics is not None
    assert metrics.stats("ai_agent.run.duration", status="completed").count == 1
    assert metrics.stats("ai_agent.stage.duration", stage="draft").count == 2
    assert metrics.stats("ai_agent.model.duration", model="scripted", status="ok").count == 2
    assert metrics.stats("ai_agent.tool.duration", tool="calculator", status="ok").count == 1
    names = {m.name for m in collectors.SEEN}
    assert names == {
        "ai_agent.run.duration",
        "ai_agent.stage.duration",
        "ai_agent.model.duration",
        "ai_agent.tool.duration",
    }
    assert len(collectors.SEEN) == sum(s.stats.count for s in metrics.snapshot())


async def test_metrics_can_be_turned_off(make_agent: MakeAgent) -> None:
    agent = make_agent(settings={"observability": {"metrics_enabled": False}})
    async with agent:
        await agent.run("go")
    assert agent.metrics is None


async def test_ulid_ids_name_the_run_and_the_model_calls(make_agent: MakeAgent) -> None:
    events: list[Any] = []
    agent = make_agent(settings={"observability": {"request_id_format": "ulid"}})
    agent.add_listener(events.append, RunStarted)
    async with agent:
        result = await agent.run("go")
    draft = next(line for line in result.trace if line["stage"] == "draft")
    assert len(events[0].run_id) == 26 and len(draft["request_id"]) == 26


async def test_tool_calls_log_the_notes_flow_telemetry(make_agent: MakeAgent, logs: Logs) -> None:
    logs.start("DEBUG")
    agent = make_agent([call("search_notes", k=7), text("ok")], tools=[search_tool()])
    async with agent:
        result = await agent.run("search")
    line = logs.where(event="tool_call")[0]
    assert line["message"].startswith("tool search_notes ok in ")
    assert "(K=7, items=2)" in line["message"]
    assert (line["k"], line["item_count"], line["took_ms"], line["stage"]) == (7, 2, 1.5, "act")
    assert line["thread_id"] == result.thread_id and line["tool_call_id"]
    items = logs.where(event="retrieved_item")
    assert [(i["rank"], i["path"], i["score"]) for i in items] == [
        (1, "tides.md", 0.8123),
        (2, "moon.md", 0.5),
    ]
    assert items[0]["message"].startswith("retrieved #1 tides.md #Tides score=0.8123: High tide")
    assert items[0]["snippet"].endswith("...") and len(items[0]["snippet"]) == 163
    arguments = [r for r in logs.records() if "arguments" in r["message"]]
    assert arguments[0]["message"].endswith("arguments: {'k': 7}")


async def test_tool_retries_are_warnings_with_their_backoff(
    make_agent: MakeAgent, logs: Logs
) -> None:
    logs.start("INFO")
    attempts: list[int] = []

    def flaky(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        attempts.append(1)
        if len(attempts) < 3:
            return {"status": "error", "error": "busy", "meta": {"code": "TemporaryFailure"}}
        return {"status": "ok", "content": "read it"}

    tool = ToolSpec(
        "read_flaky",
        flaky,
        description="Read something flaky.",
        category=ToolCategory.READ_ONLY,
        parameters={"type": "object", "properties": {}},
    )
    agent = make_agent(
        [call("read_flaky"), text("ok")],
        tools=[tool],
        settings={"retry": {"initial_backoff_seconds": 0.01, "tool_max_retries": 3}},
    )
    async with agent:
        await agent.run("read")
    retries = logs.where(event="tool_retry")
    assert [(r["level"], r["retry"]) for r in retries] == [("WARNING", 1), ("WARNING", 2)]
    assert retries[1]["backoff_seconds"] > retries[0]["backoff_seconds"] > 0
    assert "retry 1 of 3" in retries[0]["message"]
    assert logs.where(event="tool_call")[0]["attempts"] == 3


async def test_a_failed_run_is_an_error_line(make_agent: MakeAgent, logs: Logs) -> None:
    logs.start("INFO")
    agent = make_agent([call("calculator", expression="1")], tools=["calculator"])  # then no turn
    async with agent:
        result = await agent.run("go")
    assert result.status == "failed"
    errors = logs.where(level="ERROR")
    assert any(e["message"].startswith("model call to scripted failed") for e in errors)
    run_line = logs.where(event="run_finished")[0]
    assert run_line["level"] == "ERROR" and run_line["status"] == "failed"


async def test_the_notes_tools_log_k_items_and_chars_read(
    make_agent: MakeAgent, logs: Logs, tmp_path: Any
) -> None:
    logs.start("DEBUG")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "tides.md").write_text(
        "# Tides\n\nHigh tide comes twice a day, pulled by the moon. " * 6 + "\n"
    )
    (notes / "bread.md").write_text("# Bread\n\nFlour, water, salt and time. " * 6 + "\n")
    events: list[Any] = []
    agent = make_agent(
        [
            call("find_similar", queries=["high tide"], k=3),
            call("read_note", path="tides.md", max_chars=100),
            text("Twice a day."),
        ],
        tools=["find_similar", "read_note"],
        settings={"tool_config": {"notes": {"folder": str(notes), "min_chunk_chars": 0}}},
    )
    agent.add_listener(events.append, ToolFinished)
    async with agent:
        result = await agent.run("when is high tide?")
    assert result.status == "completed"
    found, read = logs.where(event="tool_call")
    assert (found["tool"], found["k"]) == ("find_similar", 3)
    assert found["item_count"] >= 1 and "took_ms" in found
    assert read["tool"] == "read_note" and read["chars"] > 100  # the clip hint comes on top
    items = logs.where(event="retrieved_item", tool="find_similar")
    assert items[0]["path"] == "tides.md" and items[0]["score"] > 0
    assert "High tide" in items[0]["snippet"]
    assert [e.telemetry.get("k") for e in events] == [3, None]
    assert events[1].telemetry["chars"] == read["chars"]
