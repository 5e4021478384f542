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

from ai_agent import Agent, AgentSettings
from ai_agent.local import LocalModelServer

from .conftest import local_chat

pytestmark = pytest.mark.local_model


@pytest.fixture
async def http_client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    # At temperature 0 the small model filters on the folder "notes" and the tag "weather":
    # the notes are there too, so its search finds something to cite.
    (root / "notes").mkdir(parents=True)
    tides = "---\ntags: [weather]\n---\n# Tides\n\nHigh tide comes twice a day, by the moon.\n"
    for folder in (root, root / "notes"):
        (folder / "tides.md").write_text(tides)
        (folder / "bread.md").write_text("# Bread\n\nFlour, water, salt and time make bread.\n")
    return root


def notes_agent(
    server: LocalModelServer, client: httpx.AsyncClient, folder: Path, db: Path, **notes: Any
) -> Agent:
    model = local_chat(server, client, max_tokens=160)
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


async def test_the_real_models_answer_cites_only_what_the_tools_returned(
    local_server: LocalModelServer, http_client: httpx.AsyncClient, notes: Path, tmp_path: Path
) -> None:
    agent = notes_agent(local_server, http_client, notes, tmp_path / "runs.sqlite")
    async with agent:
        result = await agent.run("Search my notes with find_similar: when is high tide?")
    state = await agent.get_state(result.thread_id)
    returned = {
        source["id"]: source
        for outcome in state["results"]
        for source in (outcome["result"].get("meta") or {}).get("sources", [])
    }
    assert returned, [r["call"]["args"] for r in state["results"]]
    # Whatever the model wrote, a citation is a source a tool returned, with its URI, and its
    # claims are sentences of the answer; it is the checkpoint's, read back the same.
    for citation in result.citations:
        assert returned[citation["id"]]["uri"] == citation["uri"]
        assert all(claim in (result.final_text or "") for claim in citation["claims"])
    assert (await agent.get_result(result.thread_id)).citations == result.citations
