"""Where checkpoints go: an in-memory database, and a LangGraph saver the caller brings.

``checkpoint_path=":memory:"`` keeps the runs for as long as the Agent lives, in one process: a
run, its pause, its resume, its state and its history all see one database. ``Agent(checkpointer=
saver)`` sends the checkpoints to any LangGraph saver while the run store (runs, leases, the
tool-call journal, recorded calls, plans) stays in the Agent's own database.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from ai_agent import Agent, AgentSettings, ToolCategory, UserPlan
from ai_agent.errors import UnknownThreadError
from ai_agent.testing import ScriptedModel
from tests.graph.conftest import call, recorder, text

Saver = BaseCheckpointSaver[Any]


def _agent(log: list[dict[str, Any]], **kwargs: Any) -> Agent:
    """A run that pauses for approval of a MODIFICATION call, then finishes."""
    return Agent(
        model=ScriptedModel([call("note", text="x"), text("done")]),
        tools=[recorder(log, category=ToolCategory.MODIFICATION)],
        memory_path=None,
        settings=AgentSettings(),
        **kwargs,
    )


def test_an_in_memory_database_keeps_the_run_within_the_process() -> None:
    log: list[dict[str, Any]] = []
    agent = _agent(log, checkpoint_path=":memory:")
    paused = agent.run_sync("write")  # run_sync closes what it opened: the runs must stay
    assert paused.status == "paused"
    assert asyncio.run(agent.get_result(paused.thread_id)).status == "paused"
    stages = [entry.stage for entry in agent.history(paused.thread_id)]
    assert stages[:3] == ["input", "start", "recall"]
    assert stages[-1] == "reflect"  # the gate paused before its checkpoint
    done = asyncio.run(agent.resume(paused.thread_id, UserPlan(approve=["c1.0"])))
    assert done.status == "completed"
    assert len(log) == 1
    assert agent.history(paused.thread_id)[-1].stage == "persist"
    runs = asyncio.run(agent.archive.list_runs())
    assert [(run["thread_id"], run["status"]) for run in runs] == [(paused.thread_id, "completed")]
    assert asyncio.run(agent.get_state(paused.thread_id))["task"] == "write"


async def test_in_memory_databases_are_one_per_agent() -> None:
    log: list[dict[str, Any]] = []
    async with _agent(log, checkpoint_path=":memory:") as agent:
        paused = await agent.run("write")
        other = _agent(log, checkpoint_path=":memory:")
        with pytest.raises(UnknownThreadError):
            await other.resume(paused.thread_id, UserPlan(approve=["c1.0"]))
        assert (await agent.resume(paused.thread_id, UserPlan(approve=["c1.0"]))).status == (
            "completed"
        )


@pytest.fixture(params=["memory", "sqlite", "async-sqlite"])
async def saver(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Saver]:
    if request.param == "memory":
        yield InMemorySaver()
    elif request.param == "sqlite":
        conn = sqlite3.connect(tmp_path / "lg.sqlite", check_same_thread=False)
        yield SqliteSaver(conn)
        conn.close()
    else:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "lg.sqlite")) as lg:
            yield lg


async def test_a_langgraph_saver_holds_the_checkpoints(saver: Saver, tmp_path: Path) -> None:
    log: list[dict[str, Any]] = []
    db = tmp_path / "runs.sqlite"
    async with _agent(log, checkpointer=saver, checkpoint_path=db) as agent:
        paused = await agent.run("write")
        assert paused.status == "paused"
        # The checkpoints are in the caller's saver: LangGraph's own API reads them.
        config: RunnableConfig = {
            "configurable": {"thread_id": paused.thread_id, "checkpoint_ns": ""}
        }
        stored = await asyncio.to_thread(saver.get_tuple, config)
        assert stored is not None
        assert stored.checkpoint["channel_values"]["task"] == "write"
        assert (await agent.get_result(paused.thread_id)).status == "paused"
        done = await agent.resume(paused.thread_id, UserPlan(approve=["c1.0"]))
        assert done.status == "completed"
        assert (await agent.ahistory(paused.thread_id))[-1].stage == "persist"
    assert len(log) == 1
    # The run store stays in the Agent's database: the run and its journal are there.
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT status FROM agent_runs").fetchall() == [("completed",)]
    # ... and no checkpoint is: the saver was the only checkpointer.
    with sqlite3.connect(db) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert not any(name.startswith("delta_") for name in tables)


def test_a_foreign_saver_is_left_open_for_its_owner(tmp_path: Path) -> None:
    log: list[dict[str, Any]] = []
    conn = sqlite3.connect(tmp_path / "lg.sqlite", check_same_thread=False)
    saver = SqliteSaver(conn)
    agent = _agent(log, checkpointer=saver, checkpoint_path=tmp_path / "runs.sqlite")
    paused = agent.run_sync("write")
    assert [entry.stage for entry in agent.history(paused.thread_id)][-1] == "reflect"
    assert saver.get_tuple({"configurable": {"thread_id": paused.thread_id}}) is not None
    conn.close()
