"""Savers under test: the delta saver and LangGraph's SQLite savers, behind one fixture each.

``saver`` (sync) is the delta saver or LangGraph's ``SqliteSaver``; ``asaver`` (async) is the
delta saver or ``AsyncSqliteSaver``. Tests that take them run once per saver with the same
assertions, which is what makes them a conformance suite.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import aiosqlite
import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, Checkpoint, CheckpointMetadata
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from ai_agent.checkpoints import DeltaSaver, strict_serializer

SAVERS = ["delta", "sqlite"]


@pytest.fixture(params=SAVERS)
def saver(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BaseCheckpointSaver[Any]]:
    path = tmp_path / "c.sqlite"
    if request.param == "delta":
        with DeltaSaver(path) as delta:
            yield delta
        return
    conn = sqlite3.connect(path, check_same_thread=False)
    lg = SqliteSaver(conn, serde=strict_serializer())
    lg.setup()
    yield lg
    conn.close()


@pytest.fixture(params=SAVERS)
async def asaver(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    path = tmp_path / "c.sqlite"
    if request.param == "delta":
        async with DeltaSaver(path) as delta:
            yield delta
        return
    async with aiosqlite.connect(path) as conn:
        lg = AsyncSqliteSaver(conn, serde=strict_serializer())
        await lg.setup()
        yield lg


def make_checkpoint(
    values: dict[str, Any],
    versions: dict[str, Any],
    *,
    step: int = 0,
    seen: dict[str, dict[str, Any]] | None = None,
) -> Checkpoint:
    """A checkpoint as LangGraph builds one (a fresh, increasing id)."""
    return Checkpoint(
        v=4,
        id=str(uuid6(clock_seq=step)),
        ts=datetime.now(UTC).isoformat(),
        channel_values=values,
        channel_versions=versions,
        versions_seen=seen or {},
        updated_channels=sorted(versions),
    )


def config(thread_id: str, checkpoint_id: str | None = None, ns: str = "") -> RunnableConfig:
    conf: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ns}
    if checkpoint_id is not None:
        conf["checkpoint_id"] = checkpoint_id
    return {"configurable": conf}


def meta(**values: Any) -> CheckpointMetadata:
    """Checkpoint metadata with any keys (savers keep keys LangGraph does not name)."""
    return cast(CheckpointMetadata, values)


def new_thread() -> str:
    return uuid.uuid4().hex
