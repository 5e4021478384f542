"""The run page shows a window of cycles, read without the run's whole history."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from ai_agent import Agent
from ai_agent.console import views
from ai_agent.graph.run_page import read_run_page
from tests.console.conftest import MakeAgent

Open = Callable[[Agent], httpx.AsyncClient]

CYCLES = 24  # more than two windows of views.WINDOW


def counting(cycles: int) -> list[Any]:
    """A scripted model that calls the calculator ``cycles`` times, then answers."""
    calls = [{"name": "calculator", "args": {"expression": f"{i}+1"}} for i in range(cycles)]
    return [{"tool_calls": [call]} for call in calls] + [{"text": "counted"}]


async def test_each_window_matches_the_full_timeline(make_agent: MakeAgent) -> None:
    agent = make_agent(counting(CYCLES), tools=["calculator"], max_iterations=CYCLES + 2)
    async with agent:
        done = await agent.run("count", thread_id="long")
        full = await agent.archive.timeline("long")  # through the whole history
        history = {e.checkpoint_id: e for e in await agent.ahistory("long")}
        latest = await read_run_page(agent.archive.database, "long", window=10)
        middle = await read_run_page(agent.archive.database, "long", window=5, last=12)
        first = await read_run_page(agent.archive.database, "long", window=3, last=0)
    assert done.status == "completed"
    last_cycle = max(row["iteration"] for row in full)
    assert (latest.first, latest.last, latest.cycles) == (last_cycle - 9, last_cycle, last_cycle)
    for page in (latest, middle, first):
        expected = [r for r in full if page.first <= r["iteration"] <= page.last]
        assert page.timeline == expected
        assert all(page.first <= c["iteration"] <= page.last for c in page.tool_calls)
        for mark in page.checkpoints:  # every mark is a checkpoint of the run, as history says
            assert history[mark.checkpoint_id].step == mark.step
    assert (middle.first, middle.last) == (8, 12)
    assert len(middle.tool_calls) == 5 and len(middle.model_calls) == 5
    assert first.timeline[0]["stage"] == "recall"
    assert [m.stage for m in first.checkpoints][:2] == ["start", "recall"]


async def test_the_run_page_pages_through_cycles_and_the_conversation(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    agent = make_agent(counting(CYCLES), tools=["calculator"], max_iterations=CYCLES + 2)
    async with agent:
        await agent.run("count", thread_id="long")
        http = signed_in(agent)
        page = (await http.get("/runs/long")).text
        older = (await http.get("/runs/long", params={"last": "3"})).text
        everything = (await http.get("/runs/long", params={"conversation": "all"})).text
        bad = await http.get("/runs/long", params={"last": "-1"})
    last = CYCLES + 1
    assert f"Cycles {last - views.WINDOW + 1}\N{EN DASH}{last} of {last}" in page
    assert f'href="/runs/long?last={last - views.WINDOW}#cycles">Earlier cycles' in page
    assert "Later cycles" not in page
    assert "Cycles 0\N{EN DASH}3 of" in older and "Earlier cycles" not in older
    assert f'href="/runs/long?last={3 + views.WINDOW}#cycles">Later cycles' in older
    assert f"The last {views.CONVERSATION} of" in page
    assert "Show them all" not in everything
    assert everything.count('<li class="message') > views.CONVERSATION
    assert bad.status_code == 400 and "is not a cycle number" in bad.text
