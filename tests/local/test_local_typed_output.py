"""Typed outputs against the real llama.cpp server and the small local model.

Temperature 0 and a fixed seed. Only the protocol is asserted: the run completes and its output
is a value of the type (the server's grammar holds a ``json_schema`` response format to the
schema; the final-answer tool's arguments are checked by pydantic), never what the model said.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from ai_agent import Agent, tool
from ai_agent.config import AgentSettings
from ai_agent.local import LocalModelServer

from .conftest import TEST_SEED

pytestmark = pytest.mark.local_model


class Weather(BaseModel):
    city: str
    temperature_c: int


@tool(category="read_only")
def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: The city's name.
    """
    return f"18 C and sunny in {city}"


def _agent(server: LocalModelServer, tmp_path: Path, mode: str) -> Agent:
    settings = AgentSettings(
        model_backend={
            "base_url": server.base_url,
            "api_key": server.api_key,
            "model": server.model_id,
            "temperature": 0,
            "seed": TEST_SEED,
            "max_tokens": 128,
            "timeout": 300,
        },
        output={"mode": mode},
    )
    return Agent(
        settings=settings,
        tools=[get_weather],
        checkpoint_path=tmp_path / "runs.sqlite",
        memory_path=None,
        output_type=Weather,
    )


@pytest.mark.parametrize("mode", ["native", "tool"])
async def test_the_real_model_gives_a_typed_answer(
    local_server: LocalModelServer, tmp_path: Path, mode: str
) -> None:
    async with _agent(local_server, tmp_path, mode) as agent:
        res = await agent.run("What is the weather in Paris? Report the city and temperature.")
        calls = await agent.store.model_calls(res.thread_id)
        asked = await agent.store.model_request(calls[-1]["seq"])
    assert res.status == "completed", res.gate or res.error
    assert isinstance(res.output, Weather)
    # The typed answer was asked for as the mode says (the last request made).
    assert ("response_format" in asked["params"]) is (mode == "native")
    if mode == "tool":
        assert [t["function"]["name"] for t in asked["tools"]] == ["final_answer"]
