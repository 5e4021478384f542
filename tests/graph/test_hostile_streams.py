"""A consumer that misbehaves or goes away: left streams, cancelled runs, an Agent closed early.

Each test counts the side effects of a MODIFICATION tool in a file it appends to, and checks
what is left afterwards: the run's row, its lease, the tasks of the event loop, and a resume.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from ai_agent import ToolCategory, ToolSpec
from ai_agent.events import RunFinished, ToolOutput
from tests.graph.conftest import MakeAgent, call, text


def effect_tool(
    work: Path,
    *,
    seconds: float = 0.5,
    is_async: bool = False,
    started: asyncio.Event | None = None,
) -> ToolSpec:
    """A tool with a side effect: it writes started.txt, streams lines, then appends effects.txt.

    The async one sets ``started`` once it began.
    """

    def work_sync(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        with (work / "started.txt").open("a") as f:
            f.write("x\n")
        for i in range(5):
            ctx["on_output"](f"line {i}\n")
            time.sleep(seconds / 5)
        with (work / "effects.txt").open("a") as f:
            f.write("x\n")
        return {"status": "ok", "content": "did it"}

    async def work_async(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        with (work / "started.txt").open("a") as f:
            f.write("x\n")
        if started is not None:
            started.set()
        for i in range(5):
            ctx["on_output"](f"line {i}\n")
            await asyncio.sleep(seconds / 5)
        with (work / "effects.txt").open("a") as f:
            f.write("x\n")
        return {"status": "ok", "content": "did it"}

    return ToolSpec(
        "effect",
        work_async if is_async else work_sync,
        description="Do something with a side effect.",
        category=ToolCategory.MODIFICATION,
        parameters={"type": "object", "properties": {}},
    )


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def row_and_leases(db: Path, thread_id: str) -> tuple[list[Any], list[Any]]:
    with sqlite3.connect(db) as conn:
        row = conn.execute(
            "SELECT status, error FROM agent_runs WHERE thread_id = ?", (thread_id,)
        ).fetchall()
        leases = conn.execute("SELECT thread_id FROM agent_leases").fetchall()
    return row, leases


def cancelled(thread_id: str) -> tuple[list[Any], list[Any]]:
    """The row and leases of a run its caller cancelled: failed, saying so and how to go on."""
    return (
        [
            (
                "failed",
                "the run was cancelled by its caller (a stream left early, a cancelled task or "
                "timeout, Ctrl-C, or the Agent closing): it stopped at its last checkpoint, and "
                f"`ai-agent resume {thread_id}` (or Agent.resume) continues it (a subagent's: its "
                "parent's)",
            )
        ],
        [],
    )


def others() -> list[asyncio.Task[Any]]:
    """The tasks of the loop besides the test's own."""
    return [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]


async def resumed_after(make_agent: MakeAgent, work: Path, thread_id: str) -> Any:
    agent = make_agent(
        [call("effect"), text("finished")], tools=[effect_tool(work)], unattended=True
    )
    async with agent:
        return await agent.resume(thread_id)


async def test_a_stream_left_by_break_is_wound_down_before_the_agent_closes(
    make_agent: MakeAgent, db: Path, tmp_path: Path
) -> None:
    # No aclose() of the stream: the generator is finalized by the loop, later. Closing the
    # Agent right after must not meet the run still marking its row (a closed database: an
    # error in place of none, or a crash of the SQLite driver).
    agent = make_agent(
        [call("effect"), text("finished")], tools=[effect_tool(tmp_path)], unattended=True
    )
    heard: list[RunFinished] = []
    agent.add_listener(heard.append, RunFinished)
    async with agent:
        async for event in agent.astream("go", thread_id="t"):
            if isinstance(event, ToolOutput):
                break
    assert others() == []  # nothing of the run runs on after the Agent closed
    assert row_and_leases(db, "t") == cancelled("t")
    # Listeners hear the same sentence as the run's row, not "CancelledError".
    assert [(f.result.status, f.result.error) for f in heard] == cancelled("t")[0]
    result = await resumed_after(make_agent, tmp_path, "t")
    # The call may have had its effect: it is never re-run silently.
    assert result.status == "paused"
    assert [i["code"] for i in result.gate["issues"]] == ["UNKNOWN_OUTCOME"]
    assert len(lines(tmp_path / "started.txt")) == 1


async def test_a_run_task_cancelled_and_never_awaited_is_wound_down_by_the_close(
    make_agent: MakeAgent, db: Path, tmp_path: Path
) -> None:
    started = asyncio.Event()
    agent = make_agent(
        [call("effect"), text("finished")],
        tools=[effect_tool(tmp_path, is_async=True, started=started)],
        unattended=True,
    )
    async with agent:
        run = asyncio.create_task(agent.run("go", thread_id="t"))
        await started.wait()
        run.cancel()  # and never awaited by its owner
    assert run.cancelled()
    assert others() == []
    assert row_and_leases(db, "t") == cancelled("t")
    result = await resumed_after(make_agent, tmp_path, "t")
    assert [i["code"] for i in result.gate["issues"]] == ["UNKNOWN_OUTCOME"]
    assert lines(tmp_path / "effects.txt") == []  # the async tool was stopped mid-way


async def test_closing_the_agent_under_a_running_run_cancels_it_cleanly(
    make_agent: MakeAgent, db: Path, tmp_path: Path
) -> None:
    started = asyncio.Event()
    agent = make_agent(
        [call("effect"), text("finished")],
        tools=[effect_tool(tmp_path, seconds=5, is_async=True, started=started)],
        unattended=True,
    )
    await agent.__aenter__()
    run = asyncio.create_task(agent.run("go", thread_id="t"))
    await started.wait()
    await agent.aclose()  # a shutdown while the run is in flight, in another task
    assert run.done() and run.cancelled()
    assert others() == []
    assert row_and_leases(db, "t") == cancelled("t")


def test_ctrl_c_in_a_sync_stream_during_a_sync_tool_leaves_a_resumable_run(
    make_agent: MakeAgent, db: Path, tmp_path: Path
) -> None:
    agent = make_agent(
        [call("effect"), text("finished")], tools=[effect_tool(tmp_path)], unattended=True
    )

    def consume() -> None:
        for event in agent.stream("go", thread_id="t"):
            if isinstance(event, ToolOutput):
                raise KeyboardInterrupt  # Ctrl-C while the consumer handles an event

    before = set(threading.enumerate())  # other tests' threads may still be winding down
    with pytest.raises(KeyboardInterrupt):
        consume()
    # The sync tool could not be stopped in its thread: it finished, and nothing is left.
    assert [t.name for t in threading.enumerate() if t not in before] == []
    assert lines(tmp_path / "effects.txt") == ["x"]
    assert row_and_leases(db, "t") == cancelled("t")
    result = asyncio.run(resumed_after(make_agent, tmp_path, "t"))
    assert [i["code"] for i in result.gate["issues"]] == ["UNKNOWN_OUTCOME"]
    assert lines(tmp_path / "started.txt") == ["x"]  # never re-run
