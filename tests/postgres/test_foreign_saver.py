"""``Agent(checkpointer=...)`` with LangGraph's PostgreSQL savers, async and sync.

The checkpoints go to the caller's saver on the real server; the run store stays in the Agent's
own database (a SQLite file here).
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

from ai_agent import Agent, AgentSettings, ToolCategory, UserPlan
from ai_agent.testing import ScriptedModel
from tests.graph.conftest import call, recorder, text


@pytest.fixture(params=["async", "sync"])
async def pg_saver(request: pytest.FixtureRequest, pg_url: str) -> AsyncIterator[Any]:
    if request.param == "async":
        async with AsyncPostgresSaver.from_conn_string(pg_url) as saver:
            await saver.setup()
            yield saver
        return
    with PostgresSaver.from_conn_string(pg_url) as sync_saver:
        sync_saver.setup()
        yield sync_saver


async def test_langgraphs_postgres_saver_runs_pauses_and_resumes(
    pg_saver: BaseCheckpointSaver[Any], tmp_path: Path
) -> None:
    log: list[dict[str, Any]] = []
    db = tmp_path / "runs.sqlite"
    agent = Agent(
        model=ScriptedModel([call("note", text="x"), text("done")]),
        tools=[recorder(log, category=ToolCategory.MODIFICATION)],
        memory_path=None,
        settings=AgentSettings(),
        checkpoint_path=db,
        checkpointer=pg_saver,
    )
    async with agent:
        paused = await agent.run("write")
        assert paused.status == "paused"
        done = await agent.resume(paused.thread_id, UserPlan(approve=["c1.0"]))
        assert done.status == "completed"
        assert (await agent.ahistory(paused.thread_id))[-1].stage == "persist"
    assert len(log) == 1
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT status FROM agent_runs").fetchall() == [("completed",)]
