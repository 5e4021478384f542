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
    from ai_agent.checkpoints.postgres import PostgresRunStore
    from ai_agent.checkpoints.postgres_saver import FencedPostgresSaver

    where = describe_location(pg_url)
    store = PostgresRunStore(pg_url)
    full = f"the database {re.escape(where)} is full"
    with pytest.raises(StorageFullError, match=full), store._db.transaction():
        raise psycopg.errors.DiskFull("could not extend file: No space left on device")
    store.close()
    async with open_checkpointer(pg_url) as saver:
        assert isinstance(saver, FencedPostgresSaver)
        store = PostgresRunStore(pg_url)
        for lease in (None, (await store.acquire("t")).owner):
            with pytest.raises(StorageFullError, match=full):
                async with saver._transaction(("t", lease)):
                    raise psycopg.errors.DiskFull("could not extend file: No space left on device")
        store.close()


async def test_task_writes_are_stored_as_langgraphs_own_saver_stores_them(pg_url: str) -> None:
    """Our writes serialize in place (no thread hop) with LangGraph's statements: the same rows.

    Plain channels go in once (a repeat is ignored); LangGraph's special channels (an error, an
    interrupt) replace what the task wrote before. Both savers get the same calls on two threads.
    """
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    async with open_checkpointer(pg_url) as ours:
        assert isinstance(ours, AsyncPostgresSaver)
        theirs = AsyncPostgresSaver(ours.conn, serde=ours.serde)
        calls: list[tuple[list[tuple[str, Any]], str]] = [
            ([("a", "one"), ("b", {"n": 1}), ("branch:to:x", None)], "task-1"),
            ([("a", "again")], "task-1"),  # a repeat of idx 0: ignored
            ([("__error__", ValueError("boom"))], "task-2"),
            ([("__error__", ValueError("later"))], "task-2"),  # special: replaces
            ([("__interrupt__", ["ask"])], "task-3"),
        ]
        for saver, thread in ((ours, "ours"), (theirs, "theirs")):
            store = open_run_store(pg_url)
            lease = await store.acquire(thread)
            for writes, task in calls:
                await saver.aput_writes(config(thread, lease.owner, "cp-1"), writes, task, "p")
            store.close()
        with psycopg.connect(pg_url) as conn:
            rows = {
                thread: conn.execute(
                    "SELECT checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, "
                    "type, blob FROM checkpoint_writes WHERE thread_id = %s "
                    "ORDER BY task_id, idx",
                    (thread,),
                ).fetchall()
                for thread in ("ours", "theirs")
            }
        # Writes without their checkpoint are not a checkpoint.
        assert await ours.aget_tuple(config("ours", None, "cp-1")) is None
    assert rows["ours"] == rows["theirs"]
    assert [(r[2], r[5]) for r in rows["ours"]] == [
        ("task-1", "a"),
        ("task-1", "b"),
        ("task-1", "branch:to:x"),
        ("task-2", "__error__"),
        ("task-3", "__interrupt__"),
    ]


async def test_checkpoints_are_stored_as_langgraphs_own_saver_stores_them(pg_url: str) -> None:
    """The same rows as LangGraph's saver: primitives inline, the rest and delta snapshots blobs."""
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from langgraph.checkpoint.serde.types import _DeltaSnapshot

    cp = empty_checkpoint()
    cp["channel_values"] = {
        "text": "one",
        "n": 2,
        "none": None,
        "items": [{"a": 1}],
        "delta": _DeltaSnapshot(["x", "y"]),
    }
    cp["channel_versions"] = {"text": 1, "n": 1, "none": 1, "items": 1, "delta": 1}
    async with open_checkpointer(pg_url) as ours:
        assert isinstance(ours, AsyncPostgresSaver)
        theirs = AsyncPostgresSaver(ours.conn, serde=ours.serde)
        for saver, thread in ((ours, "ours"), (theirs, "theirs")):
            store = open_run_store(pg_url)
            lease = await store.acquire(thread)
            head = config(thread, lease.owner, "parent-1")
            saved = await saver.aput(
                head, cp, {"step": 3, "source": "loop"}, cp["channel_versions"]
            )
            assert saved == {
                "configurable": {
                    "thread_id": thread,
                    "checkpoint_ns": "",
                    "checkpoint_id": cp["id"],
                }
            }
            store.close()
        with psycopg.connect(pg_url) as conn:
            rows = {
                thread: (
                    conn.execute(
                        "SELECT checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint, "
                        "metadata FROM checkpoints WHERE thread_id = %s",
                        (thread,),
                    ).fetchall(),
                    conn.execute(
                        "SELECT channel, version, type, blob FROM checkpoint_blobs "
                        "WHERE thread_id = %s ORDER BY channel",
                        (thread,),
                    ).fetchall(),
                )
                for thread in ("ours", "theirs")
            }
        back = await ours.aget_tuple(config("ours", None))
        assert back is not None
        assert back.checkpoint["channel_values"]["items"] == [{"a": 1}]
        assert back.checkpoint["channel_values"]["text"] == "one"
    assert rows["ours"] == rows["theirs"]
    (row,), blobs = rows["ours"]
    assert row[2] == "parent-1"
    assert row[3]["channel_values"] == {"text": "one", "n": 2, "none": None, "delta": True}
    assert [b[0] for b in blobs] == ["delta", "items"]
