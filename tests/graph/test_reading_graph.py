"""The graph built for reading: LangGraph reads every checkpoint as the running graph does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ai_agent import UserPlan
from ai_agent.checkpoints import open_checkpointer
from ai_agent.errors import RunError
from ai_agent.graph import build_graph
from ai_agent.graph.database import checkpoint_config
from ai_agent.nodes import STAGES
from tests.graph.conftest import MakeAgent
from tests.graph.test_history import paused_run


def _seen(snapshot: Any) -> tuple[Any, ...]:
    """What a reader takes from a snapshot: values, what runs next, the interrupts, where."""
    interrupts = [(i.id, i.value) for i in snapshot.interrupts]
    return (snapshot.values, snapshot.next, interrupts, snapshot.config, snapshot.metadata)


async def test_state_and_history_read_the_same_as_the_running_graph(
    make_agent: MakeAgent, db: Path
) -> None:
    log: list[dict[str, Any]] = []
    agent, paused = await paused_run(make_agent, log)
    config = checkpoint_config(paused.thread_id)
    async with open_checkpointer(db) as saver:
        running, reading = build_graph(saver), build_graph(saver, reading=True)
        # Paused at the gate: the interrupt and the stage that waits are read alike.
        at_gate = await reading.aget_state(config)
        assert at_gate.next == ("gate",) and at_gate.interrupts
        assert _seen(at_gate) == _seen(await running.aget_state(config))
    resumed = await agent.resume(paused.thread_id, UserPlan(approve=["*"], instructions="go on"))
    assert resumed.status == "completed"
    async with open_checkpointer(db) as saver:
        running, reading = build_graph(saver), build_graph(saver, reading=True)
        # Ended: every checkpoint of the history, newest to oldest, is read alike.
        ours = [_seen(s) async for s in reading.aget_state_history(config)]
        theirs = [_seen(s) async for s in running.aget_state_history(config)]
    assert len(ours) > 10 and ours == theirs


def test_it_has_the_running_graphs_stages_and_edges() -> None:
    assert build_graph(reading=True).get_graph().draw_mermaid() == (
        build_graph().get_graph().draw_mermaid()
    )
    assert list(build_graph(reading=True).nodes)[1:] == list(STAGES)  # after __start__


async def test_its_stages_refuse_to_run() -> None:
    graph = build_graph(reading=True)
    with pytest.raises(RunError, match="the recall stage of a graph built for reading"):
        await graph.ainvoke({"task": "x", "messages": []})
