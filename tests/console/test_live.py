"""Live updates: the event stream names the runs whose status changed since its last look."""

from __future__ import annotations

import json

from ai_agent.console.live import run_changes
from tests.console.conftest import MakeAgent, write_call


async def test_a_changed_run_is_sent_and_an_unchanged_one_is_not(make_agent: MakeAgent) -> None:
    agent = make_agent([write_call(), {"text": "written"}])
    async with agent:
        await agent.run("write", thread_id="l1")
        stream = run_changes(agent.archive, interval=0)
        assert await anext(stream) == "retry: 2000\n\n"
        # The first look recorded what was there; the next look finds the run resumed.
        await agent.resume("l1", {"approve": ["*"]})
        event = await anext(stream)
        assert event.startswith("event: runs\ndata: ") and event.endswith("\n\n")
        assert json.loads(event.split("data: ", 1)[1]) == [
            {"thread_id": "l1", "status": "completed"}
        ]
        await stream.aclose()


async def test_the_stream_ends_when_told(make_agent: MakeAgent) -> None:
    agent = make_agent([write_call()])
    async with agent:
        stream = run_changes(agent.archive, interval=0, stopping=lambda: True)
        assert [e async for e in stream] == ["retry: 2000\n\n"]


async def test_a_change_between_the_page_and_the_stream_is_sent_at_once(
    make_agent: MakeAgent,
) -> None:
    agent = make_agent([write_call()])
    async with agent:
        await agent.run("write", thread_id="l2")
        (run,) = await agent.archive.list_runs()
        assert run["updated_at"] is not None
        stream = run_changes(agent.archive, interval=0, since=run["updated_at"] - 1)
        assert await anext(stream) == "retry: 2000\n\n"
        event = await anext(stream)
        assert json.loads(event.split("data: ", 1)[1]) == [{"thread_id": "l2", "status": "paused"}]
        await stream.aclose()
