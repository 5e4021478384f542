"""LangGraph's own checkpointer-parametrised tests, with the delta saver as their only checkpointer.

The test files beside this one are LangGraph's, unmodified (README.md says from where and how to
refresh them). Upstream's conftest parametrises ``sync_checkpointer`` and ``async_checkpointer``
over InMemorySaver, SqliteSaver, PostgresSaver...; this one gives both fixtures one value, a
`DeltaSaver` on a fresh SQLite file (opened as a context manager, sync or async, as upstream opens
its own), with the serializer upstream gives its savers (strict msgpack when
``LANGGRAPH_STRICT_MSGPACK`` is set, LangGraph's default otherwise). The other fixtures the files
use (durability, cache, store, deterministic uuids) are upstream's, limited to what runs without
Docker, as upstream's own ``NO_DOCKER=true`` runs them.

Tests that take no checkpointer fixture are deselected (they test LangGraph, not a saver);
``DESELECTED`` names the few checkpointer tests left out, each with its reason.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from uuid import UUID

import pytest
from langgraph.cache.base import BaseCache
from langgraph.cache.memory import InMemoryCache
from langgraph.cache.sqlite import SqliteCache
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langgraph.types import Durability
from pytest_mock import MockerFixture

from ai_agent.checkpoints import DeltaSaver

HERE = "tests/upstream_langgraph/vendor/"
VENDORED = "tests.upstream_langgraph.vendor"

# The vendored files import their helpers as ``tests.<name>`` (upstream's tests folder is the
# package ``tests``); ours is too, so each helper is registered under that name, in dependency
# order, instead of editing the imports. memory_assert's assertions are rewritten, as upstream asks.
pytest.register_assert_rewrite(f"{VENDORED}.memory_assert")
for _helper in ("any_int", "any_str", "agents", "fake_chat", "fake_tracer", "messages"):
    sys.modules[f"tests.{_helper}"] = importlib.import_module(f"{VENDORED}.{_helper}")
sys.modules["tests.memory_assert"] = importlib.import_module(f"{VENDORED}.memory_assert")

STRICT_MSGPACK = os.getenv("LANGGRAPH_STRICT_MSGPACK", "false").lower() in ("1", "true", "yes")

CHECKPOINTER_FIXTURES = frozenset({"sync_checkpointer", "async_checkpointer"})

DESELECTED: dict[str, str] = {}
"""Checkpointer tests left out (node id without parameters -> why); README.md lists them too."""


def _serde() -> JsonPlusSerializer:
    # What upstream's conftest gives its savers (``_strict_msgpack_serde`` / the default).
    if STRICT_MSGPACK:
        return JsonPlusSerializer(allowed_msgpack_modules=None)
    return JsonPlusSerializer()


def pytest_configure(config: pytest.Config) -> None:
    """Upstream's ``--snapshot-warn-unused``: its snapshots name the savers it runs, not ours."""
    config.option.warn_unused_snapshots = True


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep the tests that take a checkpointer, less those ``DESELECTED`` names."""
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        if HERE not in item.nodeid:
            kept.append(item)
            continue
        fixtures = set(getattr(item, "fixturenames", ()))
        base = item.nodeid.split("[", 1)[0].removeprefix(HERE)
        if fixtures & CHECKPOINTER_FIXTURES and base not in DESELECTED:
            # Upstream runs under Python's default warning filters; ours turn warnings into
            # errors, which fail LangChain's own deprecated calls inside these tests.
            item.add_marker(pytest.mark.filterwarnings("default"))
            kept.append(item)
        else:
            dropped.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(params=["delta"])
def sync_checkpointer(tmp_path: Path) -> Iterator[DeltaSaver]:
    """The delta saver on a fresh file, as upstream opens SqliteSaver (a context manager)."""
    with DeltaSaver(tmp_path / "checkpoints.sqlite", serde=_serde()) as saver:
        yield saver


@pytest.fixture(params=["delta_aio"])
async def async_checkpointer(tmp_path: Path) -> AsyncIterator[DeltaSaver]:
    """The delta saver on a fresh file, opened and closed on the event loop."""
    async with DeltaSaver(tmp_path / "checkpoints.sqlite", serde=_serde()) as saver:
        yield saver


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def deterministic_uuids(mocker: MockerFixture) -> MockerFixture:
    side_effect = (UUID(f"00000000-0000-4000-8000-{i:012}", version=4) for i in range(10000))
    return mocker.patch("uuid.uuid4", side_effect=side_effect)


@pytest.fixture(params=["sync", "async", "exit"])
def durability(request: pytest.FixtureRequest) -> Durability:
    value: Durability = request.param
    return value


@pytest.fixture(params=["sqlite", "memory"])
def cache(request: pytest.FixtureRequest) -> BaseCache[object]:
    # Upstream adds Redis when Docker runs; a cache is not a checkpointer.
    if request.param == "sqlite":
        return SqliteCache(path=":memory:")
    return InMemoryCache()


@pytest.fixture
def sync_store() -> BaseStore:
    return InMemoryStore()


@pytest.fixture
async def async_store() -> BaseStore:
    return InMemoryStore()
