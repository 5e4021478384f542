"""What a large tool output or plan costs in the database, measured on a real SQLite file.

Sizes are taken after folding the WAL into the file (``wal_checkpoint(TRUNCATE)``), so they do
not depend on when SQLite happens to checkpoint it.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ai_agent import Agent, ToolCategory, ToolSpec
from ai_agent.config import AgentSettings
from ai_agent.errors import InvalidPlanError
from ai_agent.testing import ScriptedModel
from tests.graph.conftest import call, text

MB = 1_000_000


def settled_size(db: Path) -> int:
    """The database's bytes on disk with the WAL folded in."""
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    wal = db.with_name(db.name + "-wal")
    return db.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def dump_tool(sizes: dict[str, int]) -> ToolSpec:
    def dump(args: dict[str, Any], ctx: dict[str, Any]) -> str:
        return "HEAD" + "x" * sizes[str(ctx["thread_id"])] + "TAIL"

    return ToolSpec(
        "dump",
        dump,
        description="Dump a file.",
        category=ToolCategory.READ_ONLY,
        parameters={"type": "object", "properties": {}},
    )


async def test_a_50_mb_tool_output_is_stored_once(db: Path) -> None:
    sizes = {"small": 10, "big": 50 * MB}
    agent = Agent(
        model=ScriptedModel([call("dump"), text("done")]),
        tools=[dump_tool(sizes)],
        checkpoint_path=db,
        memory_path=None,
        settings=AgentSettings(tool_config={"max_result_chars": 60 * MB}),
    )
    async with agent:
        await agent.run("dump it", thread_id="small")  # the tables and a run's fixed cost
        before = settled_size(db)
        done = await agent.run("dump it", thread_id="big")
        assert done.status == "completed"
        full = await agent.tool_output("big", "out-1-c1.0")
        assert len(full) == 50 * MB + 8 and full.endswith("xTAIL")
        # The journal (read through the recorded call) and the state hold the bounded result.
        (recorded,) = await agent.store.tool_calls("big")
        assert recorded["result"]["meta"]["output_ref"] == "out-1-c1.0"
        assert len(json.dumps(recorded)) < 20_000
        journal = await agent.store.lookup("big", 1, "c1.0")
        assert journal is not None and journal["result"] == recorded["result"]
        state = await agent.get_state("big")
        assert state["results"][0]["result"] == recorded["result"]
    grown = settled_size(db) - before
    assert 50 * MB < grown < 1.3 * 50 * MB, f"{grown:,} bytes for a 50 MB output"


async def test_a_replay_of_a_run_with_a_clipped_output_sees_what_the_run_saw(db: Path) -> None:
    sizes = {"t1": 30_000}
    agent = Agent(
        model=ScriptedModel([call("dump"), text("done")]),
        tools=[dump_tool(sizes)],
        checkpoint_path=db,
        memory_path=None,
        settings=AgentSettings(tool_config={"max_output_chars": 1000}),
    )
    async with agent:
        await agent.run("dump it", thread_id="t1")
        replay = await agent.replay("t1")  # before: the note named the new thread: diverged
        assert replay.status == "completed" and replay.divergence is None
        seen = [
            (await agent.get_state(t))["messages"][-2]["content"] for t in ("t1", replay.thread_id)
        ]
    assert seen[0] == seen[1] and "(ai-agent output t1 out-1-c1.0)" in seen[0]


def plan_agent(db: Path, **settings: Any) -> Agent:
    return Agent(
        model=ScriptedModel([call("calculator", expression="1+1"), text("2")]),
        checkpoint_path=db,
        memory_path=None,
        settings=AgentSettings(**settings),
    )


async def test_a_10_mb_plan_is_refused_by_default(db: Path) -> None:
    async with plan_agent(db) as agent:
        paused = await agent.run("add", thread_id="p")
        with pytest.raises(
            InvalidPlanError, match=r"more than the 100,000 allowed \(max_plan_chars\)"
        ):
            await agent.resume("p", {"instructions": "y" * (10 * MB)})
        assert (await agent.get_result(paused.thread_id)).status == "paused"


async def test_a_10_mb_plan_allowed_by_the_settings_is_stored_once(db: Path) -> None:
    async with plan_agent(db, max_plan_chars=11 * MB) as agent:
        await agent.run("add", thread_id="p")
        before = settled_size(db)
        done = await agent.resume(
            "p", {"instructions": "y" * (10 * MB), "activate_tools": ["calculator"]}
        )
        # Over any context window, the plan is sent as it is; compaction drops nothing for it.
        assert (done.status, done.final_text) == ("completed", "2")
    grown = settled_size(db) - before
    assert grown < 1.3 * 10 * MB, f"{grown:,} bytes for a 10 MB plan"
