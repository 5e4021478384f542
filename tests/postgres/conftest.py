"""Fixtures for the PostgreSQL tests: one private server per session, one database per test."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ai_agent import Agent
from ai_agent.config import AgentSettings
from ai_agent.testing import ScriptedModel
from tests.graph.conftest import text
from tests.postgres.cluster import Cluster, ClusterError, start_cluster

MakePgAgent = Callable[..., Agent]


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    try:
        cluster = start_cluster()
    except ClusterError as exc:
        # Not a skip: CI installs PostgreSQL, so a missing server is a broken set-up.
        pytest.fail(f"cannot start the test PostgreSQL server: {exc}", pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def pg_url(pg_cluster: Cluster) -> str:
    """A URL (with the canary password) to a new, empty database."""
    return pg_cluster.create_database(f"t_{uuid.uuid4().hex[:12]}")


@pytest.fixture
def canary(pg_cluster: Cluster) -> str:
    """The server's password: it must never appear in any output, file or stored row."""
    return pg_cluster.password


@pytest.fixture
def make_pg_agent(pg_url: str, tmp_path: Path) -> MakePgAgent:
    def make(turns: list[Any] | None = None, **kwargs: Any) -> Agent:
        kwargs.setdefault("model", ScriptedModel(turns or [text("done")]))
        kwargs.setdefault("checkpoint_url", pg_url)
        kwargs.setdefault("memory_path", tmp_path / "memory.jsonl")
        kwargs.setdefault("settings", AgentSettings())
        return Agent(**kwargs)

    return make
