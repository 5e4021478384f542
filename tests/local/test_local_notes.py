"""The notes-assistant flow on the real local model: generated queries bounded, sources cited.

At temperature 0 and a fixed seed the 0.5B model answers "Search my notes..." with a
``find_similar`` call. Only the protocol is asserted (what the engine does with whatever the
model wrote), never the model's judgement about the queries or the answer's wording.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_openai import ChatOpenAI

from ai_agent import Agent, AgentSettings
from ai_agent.local import LocalModelServer

from .conftest import TEST_SEED

pytestmark = pytest.mark.local_model


@pytest.fixture
async def http_client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "tides.md").write_text("# Tides\n\nHigh tide comes twice a day, pulled by the moon.\n")
    (root / "bread.md").write_text("# Bread\n\nFlour, water, salt and time make bread.\n")
    return root


def notes_agent(
    server: LocalModelServer, client: httpx.AsyncClient, folder: Path, db: Path, **notes: Any
) -> Agent:
    model = ChatOpenAI(
        http_async_client=client,
        base_url=server.base_url,
        api_key=server.api_key,
        model=server.model_id,
        temperature=0,
        seed=TEST_SEED,
        max_completion_tokens=160,
        use_responses_api=False,
    )
    settings = AgentSettings(
        tool_config={"notes": {"folder": str(folder), "min_chunk_chars": 0, **notes}},
        model_backend={"timeout": 300},
        max_iterations=3,
    )
    return Agent(model=model, tools=["find_similar"], settings=settings, checkpoint_path=db)


async def test_the_real_models_queries_are_bounded(
    local_server: LocalModelServer, http_client: httpx.AsyncClient, notes: Path, tmp_path: Path
) -> None:
    agent = notes_agent(local_server, http_client, notes, tmp_path / "runs.sqlite", max_queries=1)
    async with agent:
        result = await agent.run("Search my notes with find_similar: when is high tide?")
    state = await agent.get_state(result.thread_id)
    searches = [r for r in state["results"] if r["call"]["name"] == "find_similar"]
    assert searches, "the model made no find_similar call (the protocol under test)"
    for outcome in searches:
        written = [q for q in outcome["call"]["args"].get("queries", []) if q.strip()]
        found = outcome["result"]
        if found["status"] != "ok":
            continue  # a call that does not fit the schema is the model's; it was not run
        assert len(found["meta"]["queries"]) == 1
        assert ("note" in found["content"]) == (len(written) > 1)
