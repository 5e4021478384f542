"""The lease of a running run: renewed while it runs, and its loss stops the run at once."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk, ChatResult

from ai_agent import ToolCategory, ToolSpec
from ai_agent.checkpoints import open_run_store
from ai_agent.config import AgentSettings
from ai_agent.errors import LeaseLostError, RunError, ThreadBusyError
from ai_agent.events import RunFinished
from ai_agent.graph import Agent
from ai_agent.testing import ScriptedModel
from tests.graph.conftest import MakeAgent, call, text


def waiting_tool(started: asyncio.Event, finished: list[str]) -> ToolSpec:
    """A read-only tool that waits until it is cancelled (or a minute passes)."""

    async def wait(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        started.set()
        await asyncio.sleep(60)
        finished.append("done")
        return {"status": "ok", "content": "waited"}

    return ToolSpec("wait", wait, description="Wait.", category=ToolCategory.READ_ONLY, timeout=120)


async def test_the_heartbeat_keeps_the_lease_and_a_lost_lease_stops_the_run(
    make_agent: MakeAgent, db: Path
) -> None:
    started, finished = asyncio.Event(), list[str]()
    agent = make_agent(
        [call("wait"), text("done")],
        tools=[waiting_tool(started, finished)],
        settings=AgentSettings(lease_seconds=0.5),  # renewed every 0.1 s
    )
    heard: list[RunFinished] = []
    agent.add_listener(heard.append, RunFinished)
    run = asyncio.create_task(agent.run("wait", thread_id="t"))
    await started.wait()
    other = open_run_store(db)  # another process
    await asyncio.sleep(1.0)  # twice the lease: only the heartbeat keeps it
    with pytest.raises(ThreadBusyError):
        await other.acquire("t")
    with sqlite3.connect(db) as conn:  # then it stalls past its lease and another takes over
        conn.execute(
            "UPDATE agent_leases SET owner = 'taker', pid = 1, expires_at = expires_at + 600 "
            "WHERE thread_id = 't'"
        )
    with pytest.raises(LeaseLostError, match="the lease on thread t was taken over"):
        await run  # the next renewal finds out and stops the run mid-call
    assert finished == []
    # Listeners hear why it stopped (before: "cancelled by its caller", which it was not).
    [stopped] = [event.result for event in heard]
    assert stopped.status == "failed" and stopped.error is not None
    assert stopped.error.startswith("the lease on thread t was taken over"), stopped.error
    assert "process 1 on" in stopped.error and "wrote nothing more" in stopped.error
    run_row = await other.get_run("t")
    assert run_row is not None and run_row["status"] == "running"  # not marked by the loser
    with sqlite3.connect(db) as conn:  # nor was the taker's lease given back by it
        assert conn.execute("SELECT owner FROM agent_leases").fetchall() == [("taker",)]
    other.close()
    await agent.aclose()


def stalling_model() -> tuple[ScriptedModel, asyncio.Event]:
    """A model whose reply never comes, and the event set when it is asked."""
    asked = asyncio.Event()

    class Stalling(ScriptedModel):
        async def _agenerate(self, *args: Any, **kwargs: Any) -> ChatResult:
            asked.set()
            await asyncio.sleep(60)
            raise AssertionError("the run should have been stopped by now")

        async def _astream(self, *args: Any, **kwargs: Any) -> AsyncIterator[ChatGenerationChunk]:
            await self._agenerate()
            yield ChatGenerationChunk(message=AIMessageChunk(content=""))

    return Stalling(turns=[]), asked


TAKE_OVER = "UPDATE agent_leases SET owner = 'taker', expires_at = expires_at + 600"
"""Another process takes the thread over (on either database)."""


async def lost_while_asked(make: Callable[..., Agent], take_over: Callable[[], None]) -> None:
    """Lose a run's lease while its model is asked: the run stops, and says why to listeners."""
    model, asked = stalling_model()
    agent = make(model=model, settings=AgentSettings(lease_seconds=0.5))
    heard: list[RunFinished] = []
    agent.add_listener(heard.append, RunFinished)
    run = asyncio.create_task(agent.run("wait", thread_id="t"))
    await asked.wait()
    take_over()
    with pytest.raises(LeaseLostError, match="the lease on thread t was taken over"):
        await run
    [stopped] = [event.result for event in heard]
    assert stopped.error is not None
    assert stopped.error.startswith("the lease on thread t was taken over"), stopped.error
    run_row = await agent.store.get_run("t")
    assert run_row is not None and run_row["status"] == "running"  # not marked by the loser
    await agent.aclose()


async def test_a_lease_lost_while_the_model_is_asked_is_named_as_such(
    make_agent: MakeAgent, db: Path
) -> None:
    """The heartbeat cancels the run: its listeners hear the lost lease, not a cancelled run."""

    def take_over() -> None:
        with sqlite3.connect(db) as conn:
            conn.execute(TAKE_OVER)

    await lost_while_asked(make_agent, take_over)


async def test_a_run_cancelled_from_outside_is_cancelled_not_a_lost_lease(
    make_agent: MakeAgent, db: Path
) -> None:
    started, finished = asyncio.Event(), list[str]()
    agent = make_agent([call("wait"), text("done")], tools=[waiting_tool(started, finished)])
    run = asyncio.create_task(agent.run("wait", thread_id="t"))
    await started.wait()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    store = open_run_store(db)
    lease = await store.acquire("t")  # given back on the way out
    await store.release(lease)
    store.close()
    await agent.aclose()


async def test_a_run_row_without_a_checkpoint_restarts_without_a_plan_only(
    make_agent: MakeAgent, db: Path
) -> None:
    store = open_run_store(db)
    await store.create_run("t", "say done")  # a crash right after this, before any checkpoint
    store.close()
    agent = make_agent([text("done")])
    with pytest.raises(RunError, match="stopped before its first step and is not waiting for a"):
        await agent.resume("t", {"approve": ["*"]})
    with pytest.raises(RunError, match="thread t already exists; resume it"):
        await agent.run("say done", thread_id="t")
    result = await agent.resume("t")
    assert (result.status, result.final_text) == ("completed", "done")
    await agent.aclose()
