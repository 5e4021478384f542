"""Pruning: old checkpoints and recorded calls go; what a paused run or a kept fork needs stays."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any, cast

import pytest

from ai_agent import ToolCategory, UserPlan
from ai_agent.checkpoints import RunStore
from ai_agent.errors import ConfigError, UnknownThreadError
from ai_agent.graph.database import checkpoint_config
from ai_agent.graph.prune import keep_latest
from tests.graph.conftest import MakeAgent, call, recorder, text


def many_calls(n: int) -> list[Any]:
    return [call("calculator", expression=f"{i}*{i}") for i in range(n)] + [text("done")]


async def test_prune_keeps_a_paused_run_resumable(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    turns = [call("calculator", expression="1+1"), call("note", text="x"), text("noted")]
    tools = ["calculator", recorder(log, category=ToolCategory.MODIFICATION)]
    agent = make_agent(turns, tools=tools)
    paused = await agent.run("add, then note")
    assert paused.status == "paused"
    before = await agent.ahistory(paused.thread_id)

    report = await agent.prune(paused.thread_id)

    assert report.pruned == [paused.thread_id]
    assert report.checkpoints_deleted == len(before) - 1
    assert report.calls_deleted == 3  # two model calls, one tool call
    assert report.vacuumed
    (head,) = await agent.ahistory(paused.thread_id)
    assert (head.checkpoint_id, head.paused) == (before[-1].checkpoint_id, True)
    assert (head.stage, head.summary) == ("pruned", "earlier checkpoints were pruned; paused")
    assert (await agent.get_result(paused.thread_id)).status == "paused"
    timeline = await agent.timeline(paused.thread_id)  # the trace survives in the state
    assert [r["stage"] for r in timeline][:2] == ["recall", "draft"]
    assert timeline[0]["step"] is None

    done = await agent.resume(paused.thread_id, UserPlan(approve=["*"]))
    assert (done.status, done.final_text) == ("completed", "noted")
    assert [e["args"] for e in log] == [{"text": "x"}]


async def test_prune_reclaims_space(make_agent: MakeAgent, db: Path) -> None:
    agent = make_agent(many_calls(8), tools=["calculator"], max_iterations=10)
    result = await agent.run("squares")
    report = await agent.prune(keep_last=0)
    assert report.pruned == [result.thread_id]
    # Before: the file and its WAL, which the saver cuts back every 32 commits, so anywhere
    # from empty to a few hundred kilobytes; with an empty one the prune still takes 40%.
    assert report.bytes_after < report.bytes_before * 0.7
    assert not (await agent.store.model_calls(result.thread_id))
    assert (await agent.get_result(result.thread_id)).final_text == "done"
    assert await agent.store.lookup(result.thread_id, 1, "c1.0") is None  # journal gone


async def test_prune_keeps_the_recording_a_kept_fork_needs(make_agent: MakeAgent) -> None:
    agent = make_agent([call("calculator", expression="2+3"), text("5")], tools=["calculator"])
    original = await agent.run("add")
    entries = await agent.ahistory(original.thread_id)
    fork = await agent.afork(original.thread_id, entries[6].checkpoint_id)
    await agent.resume(fork)

    report = await agent.prune(original.thread_id)
    assert report.calls_deleted == 0
    assert len(await agent.store.model_calls(original.thread_id)) == 2
    # The finished run's journal went, but the outcome its kept recorded call names.
    (kept,) = await agent.store.tool_calls(original.thread_id)
    assert kept["result"]["content"] == "5"
    replay = await agent.replay(fork)  # its first steps come from the parent's recording
    assert (replay.divergence, replay.final_text) == (None, "5")


async def test_prune_selects_by_age_and_count(make_agent: MakeAgent) -> None:
    agent = make_agent([text("a")])
    old = await agent.run("old")
    new = await agent.run("new")
    with cast(RunStore, agent.store)._tx() as conn:
        conn.execute(
            "UPDATE agent_runs SET updated_at = ? WHERE thread_id = ?",
            (time.time() - 10 * 86400, old.thread_id),
        )
    report = await agent.prune(older_than_days=7, vacuum=False)
    assert (report.pruned, report.vacuumed) == ([old.thread_id], False)
    report = await agent.prune(keep_last=1)
    assert report.pruned == [old.thread_id]  # already thin: only its calls were left
    assert new.thread_id not in report.pruned


async def test_prune_skips_a_run_in_progress_elsewhere(make_agent: MakeAgent) -> None:
    agent = make_agent([text("a")])
    result = await agent.run("x")
    # A live lease held by another process on this host.
    with cast(RunStore, agent.store)._tx() as conn:
        conn.execute(
            "INSERT INTO agent_leases VALUES (?, 'other', 'elsewhere', ?, ?, ?)",
            (result.thread_id, os.getpid(), time.time(), time.time() + 300),
        )
    report = await agent.prune(result.thread_id)
    assert report.skipped == {result.thread_id: "another process is working on it"}
    assert len(await agent.ahistory(result.thread_id)) > 1


async def test_an_interrupted_prune_is_finished_by_the_next(make_agent: MakeAgent) -> None:
    agent = make_agent([text("a")])
    result = await agent.run("x")
    async with agent:
        saver = agent._db.saver
        assert saver is not None
        head = await saver.aget_tuple(checkpoint_config(result.thread_id))
        assert head is not None
        # As if a prune stopped after deleting the thread: only the aside copy is left.
        from ai_agent.graph.prune import _put_alone

        await _put_alone(saver, f"{result.thread_id}.prune", head)
        await saver.adelete_thread(result.thread_id)
        assert await keep_latest(saver, result.thread_id) == 0
        restored = await saver.aget_tuple(checkpoint_config(result.thread_id))
        assert restored is not None and restored.checkpoint["id"] == head.checkpoint["id"]
        assert await saver.aget_tuple(checkpoint_config(f"{result.thread_id}.prune")) is None
    assert (await agent.get_result(result.thread_id)).final_text == "a"


async def test_prune_arguments_are_checked(make_agent: MakeAgent) -> None:
    agent = make_agent()
    with pytest.raises(ConfigError, match="exactly one"):
        await agent.prune()
    with pytest.raises(ConfigError, match="exactly one"):
        await agent.prune("t", keep_last=1)
    with pytest.raises(ConfigError, match="keep_last"):
        await agent.prune(keep_last=-1)
    with pytest.raises(ConfigError, match="older_than_days"):
        await agent.prune(older_than_days=-1)
    with pytest.raises(ConfigError, match="older_than_days must be a finite number"):
        await agent.prune(older_than_days=math.nan)  # pruned nothing, and said nothing
    with pytest.raises(UnknownThreadError):
        await agent.prune("ghost")
