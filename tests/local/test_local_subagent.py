"""A subagent on the real local model: its run is a linked thread and the parent completes.

The parent is scripted (it delegates once); the child answers with the real llama.cpp model.
Only the protocol is asserted (the child thread exists, is linked to the parent's call, ran a
real model request whose usage rolled up into the parent's, and the parent completed), never
the small model's wording.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from langchain_openai import ChatOpenAI

from ai_agent import Agent
from ai_agent.checkpoints import RunStore
from ai_agent.config import AgentSettings
from ai_agent.local import LocalModelServer
from ai_agent.testing import ScriptedModel

from .conftest import TEST_SEED

pytestmark = pytest.mark.local_model


@pytest.fixture
async def http_client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


async def test_a_child_on_the_local_model_runs_as_a_linked_thread(
    local_server: LocalModelServer, http_client: httpx.AsyncClient, tmp_path: Path
) -> None:
    model = ChatOpenAI(
        http_async_client=http_client,
        base_url=local_server.base_url,
        api_key=local_server.api_key,
        model=local_server.model_id,
        temperature=0,
        seed=TEST_SEED,
        max_completion_tokens=48,
        use_responses_api=False,
        timeout=300,
    )
    child = Agent(
        model=model,
        system_prompt="You answer in one short sentence.",
        max_iterations=2,
        memory_path=None,
        settings=AgentSettings(),
    )
    db = tmp_path / "runs.sqlite"
    parent = Agent(
        model=ScriptedModel(
            [
                {"tool_calls": [{"name": "ask", "args": {"task": "Name one primary colour."}}]},
                {"text": "The helper answered."},
            ]
        ),
        tools=[child.as_tool("ask", "Answers a question.")],
        checkpoint_path=db,
        memory_path=None,
        settings=AgentSettings(),
    )
    async with parent:
        result = await parent.run("ask the helper", thread_id="p")
        child_result = await parent.get_result("p.c1.0")
    assert (result.status, result.final_text) == ("completed", "The helper answered.")
    assert child_result.status == "completed"
    assert (child_result.final_text or "").strip()
    assert child_result.usage["prompt_tokens"] > 0  # a real request, with the server's usage

    store = RunStore(db)
    try:
        row = await store.get_run("p.c1.0")
    finally:
        store.close()
    assert row is not None
    assert (row["origin"], row["parent_thread_id"], row["parent_call_id"]) == ("child", "p", "c1.0")
    assert result.usage["total_tokens"] >= child_result.usage["total_tokens"] > 0
