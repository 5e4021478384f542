"""A server that asks to be left alone for 31 years: the gate shows a day, and says so."""

from __future__ import annotations

from pathlib import Path

from ai_agent import Agent
from ai_agent.config import AgentSettings
from ai_agent.testing import Fault, MockOpenAIServer


async def test_a_retry_after_of_a_billion_seconds_reaches_the_gate_as_a_day(
    tmp_path: Path,
) -> None:
    with MockOpenAIServer([Fault.rate_limit(retry_after=1e9)]) as server:
        settings = AgentSettings(model_backend={"base_url": server.base_url, "max_retries": 3})
        agent = Agent(settings=settings, checkpoint_path=tmp_path / "c.sqlite", memory_path=None)
        async with agent:
            paused = await agent.run("hello")
        assert len(server.requests) == 1  # past max_backoff_seconds: not retried, to the gate
    assert paused.status == "paused"
    assert paused.gate is not None
    [issue] = paused.gate["issues"]
    assert issue["code"] == "RATE_LIMIT"
    assert "It asked to wait 1000000000 s (Retry-After), more than a day" in issue["message"]
    assert "the wait is taken as a day (86400 s)" in issue["message"]
