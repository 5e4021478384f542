"""Snapshots worked out from the stored checkpoints equal LangGraph's own, checkpoint by checkpoint.

``ai-agent show``, ``history`` and ``export`` read runs without LangGraph's runtime
(`ai_agent.graph.stored_state`, through the delta saver's read API in
`ai_agent.checkpoints.reader`). Here real runs on a real SQLite file (finished, paused at the
gate, resumed, forked with an update, a parent with a subagent, a typed output) are read both
ways: every checkpoint of every thread as ``aget_state_history`` gives it, and the latest as
``aget_state`` does. Where the plain reading cannot be exact it must say so (`NotPlain`), and
the archive then reads through LangGraph: both are shown here too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from pydantic import BaseModel

from ai_agent import Agent, ToolCategory, ToolSpec
from ai_agent.checkpoints import RunStore, open_checkpointer
from ai_agent.checkpoints.reader import DeltaReader, NotPlain
from ai_agent.config import AgentSettings
from ai_agent.errors import UnknownThreadError
from ai_agent.graph import RunArchive
from ai_agent.graph.build import build_graph
from ai_agent.graph.channels import ENGINE_CHANNELS, UnreadChannels
from ai_agent.graph.chart import PIPELINE_MERMAID
from ai_agent.graph.database import RunDatabase, checkpoint_config
from ai_agent.graph.plain_reads import plain_history, plain_snapshot
from ai_agent.graph.stored_state import StoredSnapshot, snapshot_of
from ai_agent.testing import ScriptedModel
from tests.graph.conftest import call, text


def _note(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    return {"status": "ok", "content": "noted"}


NOTE = ToolSpec("note", _note, description="Write a note.", category=ToolCategory.MODIFICATION)


class Total(BaseModel):
    amount: float
    currency: str


def agent(db: Path, turns: list[Any], tools: list[Any], **kwargs: Any) -> Agent:
    kwargs.setdefault("settings", AgentSettings())
    return Agent(
        model=ScriptedModel(turns), tools=tools, checkpoint_path=db, memory_path=None, **kwargs
    )


async def seeded(db: Path, tmp_path: Path) -> list[str]:
    """A database with every kind of run the views show; its threads."""
    async with agent(db, [call("calculator", expression="6*7"), text("42")], ["calculator"]) as a:
        await a.run("what is 6*7", thread_id="done")
    turns = [call("note"), text("noted"), call("note"), text("noted again")]
    async with agent(db, turns, [NOTE]) as a:
        await a.run("take a note", thread_id="paused")
        await a.run("take a note", thread_id="resumed")
        await a.resume("resumed", {"approve": ["*"]})
        entries = {e.stage: e.checkpoint_id for e in await a.ahistory("paused")}
        forks = [
            await a.afork("paused", entries["decide"], {"reflection": "look again"}),
            await a.afork("paused", entries["reflect"]),  # paused at the gate, as the original
        ]
    child = Agent(
        model=ScriptedModel([call("calculator", expression="2+2"), text("4")]),
        tools=["calculator"],
        checkpoint_path=tmp_path / "child-own.sqlite",
        memory_path=None,
        settings=AgentSettings(),
    )
    parent = agent(db, [call("helper", task="2+2"), text("4")], [child.as_tool("helper", "Adds.")])
    async with parent:
        await parent.run("ask the child", thread_id="parent")
    async with agent(
        db, [text('{"amount": 68.055, "currency": "EUR"}')], [], output_type=Total
    ) as a:
        await a.run("total?", thread_id="typed")
    store = RunStore(db)
    try:
        threads = [r["thread_id"] for r in await store.list_runs(limit=None)]
    finally:
        store.close()
    assert set(forks) <= set(threads)
    return threads


def fields(snapshot: Any) -> dict[str, Any]:
    """What the views read of a snapshot, comparable across the two kinds."""
    return {
        "values": list(snapshot.values.items()),  # in order: JSON output follows it
        "next": tuple(snapshot.next),
        "config": snapshot.config["configurable"]["checkpoint_id"],
        "parent": (snapshot.parent_config or {}).get("configurable", {}).get("checkpoint_id"),
        "metadata": dict(snapshot.metadata or {}),
        "created_at": snapshot.created_at,
        "tasks": [(t.name, [(i.value, i.id) for i in t.interrupts]) for t in snapshot.tasks],
        "interrupts": [(i.value, i.id) for i in snapshot.interrupts],
    }


async def test_every_checkpoint_reads_as_langgraph_reads_it(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    threads = await seeded(db, tmp_path)
    assert len(threads) >= 7  # the child's run is a thread of its own in the same database
    compared = 0
    async with open_checkpointer(db) as saver:
        graph = build_graph(saver, reading=True)
        with DeltaReader(db) as reader:
            for thread in threads:
                config = checkpoint_config(thread)
                theirs = [s async for s in graph.aget_state_history(config)]
                ours = [snapshot_of(t, live=False) for t in reader.list(config)]
                assert [fields(s) for s in ours] == [fields(s) for s in theirs], thread
                latest = reader.get_tuple(config)
                assert latest is not None
                live = snapshot_of(latest, live=True)
                assert fields(live) == fields(await graph.aget_state(config)), thread
                compared += len(ours)
    assert compared > 60


async def test_a_paused_run_shows_its_gate_and_what_runs_next(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    async with agent(db, [call("note"), text("noted")], [NOTE]) as a:
        paused = await a.run("take a note", thread_id="p")
    assert paused.status == "paused"
    snapshot = plain_snapshot(RunDatabase.at(db), "p")
    assert isinstance(snapshot, StoredSnapshot)
    assert snapshot.next == ("gate",)
    (interrupt,) = snapshot.interrupts
    assert interrupt.value["token"] and "note" in interrupt.value["prompt"]
    # The archive opened on its own reads it plainly, and says what the Agent's says.
    archive = RunArchive.at(db)
    result = await archive.get_result("p")
    assert result.status == "paused" and result.gate == paused.gate


async def test_the_archive_reads_plainly_and_answers_as_through_langgraph(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    threads = await seeded(db, tmp_path)
    plain = RunArchive.at(db)
    through_graph = RunArchive(RunDatabase(db))  # no plain reads: LangGraph's runtime
    for thread in threads:
        assert plain_history(plain.database, thread) is not None, thread
        assert plain_history(through_graph.database, thread) is None
        assert await plain.ahistory(thread) == await through_graph.ahistory(thread)
        assert plain.history(thread) == through_graph.history(thread)
        ours, theirs = await plain.get_result(thread), await through_graph.get_result(thread)
        assert ours.to_dict() == theirs.to_dict(), thread
        report = json.dumps(await plain.run_report(thread), sort_keys=True, default=str)
        assert report == json.dumps(
            await through_graph.run_report(thread), sort_keys=True, default=str
        )
        view = await plain.get_agent_state(thread)
        assert view == await through_graph.get_agent_state(thread)
        # One read for both: the result and the state, as the two reads apart give them.
        result, state = await plain.get_outcome(thread)
        assert result.to_dict() == ours.to_dict() and state == await plain.get_state(thread)


async def test_a_finished_tasks_writes_on_the_latest_checkpoint_go_to_langgraph(
    tmp_path: Path,
) -> None:
    # A step that stopped after a task wrote but before its checkpoint: LangGraph counts the
    # writes as done (``live``), which the plain reading does not work out; it says so.
    db = tmp_path / "runs.sqlite"
    async with agent(db, [text("hi")], []) as a:
        await a.run("greet", thread_id="t")
    async with open_checkpointer(db) as saver:
        latest = await saver.aget_tuple(checkpoint_config("t"))
        assert latest is not None
        await saver.aput_writes(latest.config, [("final_text", "changed")], "task-after")
    with DeltaReader(db) as reader:
        stored = reader.get_tuple(checkpoint_config("t"))
        assert stored is not None
        try:
            snapshot_of(stored, live=True)
        except NotPlain:
            pass
        else:  # pragma: no cover - the assertion that fails
            raise AssertionError("a task's writes on the latest checkpoint read plainly")
    assert plain_snapshot(RunDatabase.at(db), "t") is None
    state = await RunArchive.at(db).get_state("t")  # through LangGraph, as before
    async with open_checkpointer(db) as saver:
        expected = (
            await build_graph(saver, reading=True).aget_state(checkpoint_config("t"))
        ).values
    assert state == expected


async def test_an_unknown_thread_is_the_same_error_either_way(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    async with agent(db, [text("hi")], []) as a:
        await a.run("greet", thread_id="t")
    for archive in (RunArchive.at(db), RunArchive(RunDatabase(db))):
        for read in (archive.get_state, archive.ahistory):
            with pytest.raises(UnknownThreadError, match="nope"):
                await read("nope")


def test_the_kept_chart_is_the_pipeline_as_langgraph_draws_it() -> None:
    assert build_graph(reading=True).get_graph().draw_mermaid() == PIPELINE_MERMAID


def test_the_engine_channels_are_those_of_the_compiled_pipeline() -> None:
    channels = set(build_graph(reading=True).channels)
    assert UnreadChannels.of(channels, ENGINE_CHANNELS) is None  # nothing of ours is "unread"
    assert channels >= ENGINE_CHANNELS  # and nothing listed is missing from the graph


async def test_a_custom_pipelines_run_read_plainly_names_what_it_cannot_read(
    tmp_path: Path,
) -> None:
    db = tmp_path / "c.sqlite"
    async with open_checkpointer(db) as saver:
        config = checkpoint_config("t")
        checkpoint = empty_checkpoint()
        checkpoint["channel_versions"] = {"task": 1, "reviews": 1, "branch:to:review": 1}
        await saver.aput(config, checkpoint, {}, {})
    unread = await RunDatabase.at(db).unread_channels("t")
    assert unread is not None and (unread.nodes, unread.fields) == (("review",), ("reviews",))
    assert await RunDatabase.at(db).unread_channels("other") is None
