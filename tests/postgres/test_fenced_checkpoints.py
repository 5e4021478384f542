"""The checkpointers fence a lease holder's writes by its lease, on both databases."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langgraph.checkpoint.base import empty_checkpoint

from ai_agent.checkpoints import open_checkpointer, open_run_store
from ai_agent.checkpoints.fencing import LEASE_KEY, lease_in, with_lease
from ai_agent.checkpoints.store import describe_location
from ai_agent.errors import LeaseLostError, StorageFullError


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str | Path:
    if request.param == "sqlite":
        return tmp_path / "c.sqlite"
    return str(request.getfixturevalue("pg_url"))


def config(thread: str, owner: str | None, checkpoint_id: str | None = None) -> Any:
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ""}
    if checkpoint_id is not None:
        conf["checkpoint_id"] = checkpoint_id
    with_lease(conf, owner)
    return {"configurable": conf}


def checkpoint(value: str) -> Any:
    cp = empty_checkpoint()
    cp["channel_values"] = {"a": value}
    cp["channel_versions"] = {"a": 1}
    return cp


def test_the_token_rides_in_the_config_and_only_when_there_is_one() -> None:
    assert lease_in(config("t", "abc")) == "abc"
    assert LEASE_KEY not in config("t", None)["configurable"]
    assert lease_in(config("t", None)) is None


async def test_a_stale_holder_cannot_write_checkpoints(location: str | Path) -> None:
    store, other = open_run_store(location), open_run_store(location)
    stale = await store.acquire("t", seconds=-1)
    async with open_checkpointer(location) as saver:
        first = await saver.aput(config("t", stale.owner), checkpoint("one"), {"step": 0}, {})
        taker = await other.acquire("t")  # the stale holder's lease ran out: taken over
        head = config("t", stale.owner, first["configurable"]["checkpoint_id"])
        with pytest.raises(LeaseLostError, match="the lease on thread t was taken over"):
            await saver.aput(head, checkpoint("two"), {"step": 1}, {"a": 2})

        async def late_writes() -> None:
            await saver.aput_writes(head, [("a", "late")], "task-1")
            await saver.aget_tuple(config("t", None))  # a buffered write fails by the next call

        with pytest.raises(LeaseLostError):
            await late_writes()
        latest = await saver.aget_tuple(config("t", None))
        assert latest is not None
        assert latest.checkpoint["channel_values"] == {"a": "one"}
        assert latest.pending_writes == []
        # The holder that took over writes as usual; writes outside any lease are not checked.
        taken = config("t", taker.owner, first["configurable"]["checkpoint_id"])
        await saver.aput(taken, checkpoint("three"), {"step": 1}, {"a": 2})
        await saver.aput(config("u", None), checkpoint("free"), {"step": 0}, {})
        latest = await saver.aget_tuple(config("t", None))
        assert latest is not None and latest.checkpoint["channel_values"] == {"a": "three"}
    store.close()
    other.close()


async def test_a_full_disk_on_postgresql_is_a_storage_full_error(pg_url: str) -> None:
    """PostgreSQL's "could not extend file" (SQLSTATE 53100) names the database, as SQLite's."""
    from ai_agent.checkpoints.postgres import FencedPostgresSaver, PostgresRunStore

    where = describe_location(pg_url)
    store = PostgresRunStore(pg_url)
    full = f"the database {re.escape(where)} is full"
    with pytest.raises(StorageFullError, match=full), store._db.transaction():
        raise psycopg.errors.DiskFull("could not extend file: No space left on device")
    store.close()
    async with open_checkpointer(pg_url) as saver:
        assert isinstance(saver, FencedPostgresSaver)
        with pytest.raises(StorageFullError, match=full), saver._writing(config("t", None)):
            raise psycopg.errors.DiskFull("could not extend file: No space left on device")
