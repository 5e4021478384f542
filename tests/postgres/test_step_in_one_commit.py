"""The PostgreSQL saver keeps a task's writes for the checkpoint that follows: one commit a step.

What is stored is LangGraph's (``test_fenced_checkpoints.py`` compares the rows); here, when:
with the checkpoint, at once for LangGraph's special channels, after ``FLUSH_AFTER`` at the
latest, before any read, and on the way out. A kept write whose lease was lost fails its own
thread's next call, never another thread's.
"""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest
from langgraph.checkpoint.base import empty_checkpoint

from ai_agent.checkpoints import open_checkpointer, open_run_store
from ai_agent.checkpoints.postgres_saver import FLUSH_AFTER
from ai_agent.errors import LeaseLostError
from tests.postgres.test_fenced_checkpoints import config


def checkpoint(value: str) -> Any:
    cp = empty_checkpoint()
    cp["channel_values"] = {"a": value, "items": [value]}
    cp["channel_versions"] = {"a": 1, "items": 1}
    return cp


def writes_of(url: str, thread: str) -> list[tuple[str, str, int]]:
    """(task, channel, transaction id) of each stored write of ``thread``."""
    return rows(
        url,
        "SELECT task_id, channel, xmin::text::bigint FROM checkpoint_writes "
        "WHERE thread_id = %s ORDER BY task_id, idx",
        thread,
    )


def checkpoint_transactions(url: str, thread: str) -> list[int]:
    found = rows(
        url,
        "SELECT xmin::text::bigint FROM checkpoints WHERE thread_id = %s ORDER BY checkpoint_id",
        thread,
    )
    return [xid for (xid,) in found]


def rows(url: str, sql: str, thread: str) -> list[Any]:
    with psycopg.connect(url) as conn:
        return [tuple(row) for row in conn.execute(sql, (thread,)).fetchall()]


@pytest.mark.parametrize("leased", [True, False])
async def test_a_steps_writes_are_committed_with_its_checkpoint(pg_url: str, leased: bool) -> None:
    store = open_run_store(pg_url)
    owner = (await store.acquire("t")).owner if leased else None
    async with open_checkpointer(pg_url) as saver:
        first = await saver.aput(config("t", owner), checkpoint("one"), {"step": 0}, {"a": 1})
        head = config("t", owner, first["configurable"]["checkpoint_id"])
        await saver.aput_writes(head, [("a", "two"), ("items", ["two"])], "task-1")
        await saver.aput_writes(head, [("a", "three")], "task-2")
        assert writes_of(pg_url, "t") == []  # kept, not yet stored
        await saver.aput(head, checkpoint("two"), {"step": 1}, {"a": 2, "items": 2})
        stored = writes_of(pg_url, "t")
        latest = checkpoint_transactions(pg_url, "t")[-1]
    assert [(task, channel) for task, channel, _ in stored] == [
        ("task-1", "a"),
        ("task-1", "items"),
        ("task-2", "a"),
    ]
    # One transaction: (the lease read,) the writes, the blobs and the checkpoint.
    assert {xid for _, _, xid in stored} == {latest}
    store.close()


async def test_kept_writes_are_stored_within_the_flush_delay(pg_url: str) -> None:
    async with open_checkpointer(pg_url) as saver:
        first = await saver.aput(config("t", None), checkpoint("one"), {"step": 0}, {"a": 1})
        head = config("t", None, first["configurable"]["checkpoint_id"])
        await saver.aput_writes(head, [("a", "two")], "task-1")
        assert writes_of(pg_url, "t") == []
        # No call of the saver after this: the delay alone stores them (polled, not timed).
        for _ in range(200):
            await asyncio.sleep(FLUSH_AFTER)
            if stored := writes_of(pg_url, "t"):
                break
        assert [w[:2] for w in stored] == [("task-1", "a")]


async def test_an_error_or_interrupt_is_stored_at_once_with_what_was_kept(pg_url: str) -> None:
    async with open_checkpointer(pg_url) as saver:
        first = await saver.aput(config("t", None), checkpoint("one"), {"step": 0}, {"a": 1})
        head = config("t", None, first["configurable"]["checkpoint_id"])
        await saver.aput_writes(head, [("a", "two")], "task-1")
        await saver.aput_writes(head, [("__interrupt__", ["ask a person"])], "task-2")
        assert [w[:2] for w in writes_of(pg_url, "t")] == [
            ("task-1", "a"),
            ("task-2", "__interrupt__"),
        ]
        await saver.aput_writes(head, [("__error__", ValueError("boom"))], "task-3")
        assert ("task-3", "__error__") in [w[:2] for w in writes_of(pg_url, "t")]


async def test_a_read_sees_the_writes_kept_before_it(pg_url: str) -> None:
    async with open_checkpointer(pg_url) as saver:
        first = await saver.aput(config("t", None), checkpoint("one"), {"step": 0}, {"a": 1})
        head = config("t", None, first["configurable"]["checkpoint_id"])
        await saver.aput_writes(head, [("a", "two")], "task-1")
        got = await saver.aget_tuple(config("t", None))
        assert got is not None and got.pending_writes == [("task-1", "a", "two")]
        await saver.aput_writes(head, [("a", "three")], "task-2")
        listed = [t async for t in saver.alist(config("t", None))]
        assert [w[0] for w in listed[0].pending_writes or []] == ["task-1", "task-2"]
        everything = [t async for t in saver.alist(None)]  # no thread named: all of them
        assert [t.config["configurable"]["thread_id"] for t in everything] == ["t"]
        await saver.aput_writes(head, [("a", "four")], "task-3")
        await saver.adelete_thread("t")  # stored first, then deleted with the thread
        assert writes_of(pg_url, "t") == []
        assert await saver.aget_tuple(config("t", None)) is None


async def test_kept_writes_are_stored_on_the_way_out(pg_url: str) -> None:
    async with open_checkpointer(pg_url) as saver:
        first = await saver.aput(config("t", None), checkpoint("one"), {"step": 0}, {"a": 1})
        head = config("t", None, first["configurable"]["checkpoint_id"])
        await saver.aput_writes(head, [("a", "two")], "task-1")
    assert [w[:2] for w in writes_of(pg_url, "t")] == [("task-1", "a")]

    async def stopped_run() -> None:
        async with open_checkpointer(pg_url) as saver:
            await saver.aput_writes(head, [("a", "three")], "task-2")
            raise RuntimeError("the run stopped")

    with pytest.raises(RuntimeError, match="the run stopped"):
        await stopped_run()
    assert [w[:2] for w in writes_of(pg_url, "t")] == [("task-1", "a"), ("task-2", "a")]


async def test_a_kept_write_whose_lease_was_lost_fails_only_its_own_thread(pg_url: str) -> None:
    store, other = open_run_store(pg_url), open_run_store(pg_url)
    stale = await store.acquire("t", seconds=-1)
    mine = await store.acquire("u")
    async with open_checkpointer(pg_url) as saver:
        first = await saver.aput(config("t", stale.owner), checkpoint("one"), {"step": 0}, {})
        await other.acquire("t")  # taken over: the stale holder's kept writes must not land
        head = config("t", stale.owner, first["configurable"]["checkpoint_id"])
        await saver.aput_writes(head, [("a", "late")], "task-1")
        await asyncio.sleep(FLUSH_AFTER * 6)  # the delayed store fails: kept for thread t
        # Another thread's run goes on as usual...
        u_first = await saver.aput(config("u", mine.owner), checkpoint("u"), {"step": 0}, {})
        assert u_first["configurable"]["thread_id"] == "u"
        assert await saver.aget_tuple(config("u", None)) is not None
        # ...and the stale holder's next call says what happened.
        with pytest.raises(LeaseLostError, match="the lease on thread t was taken over"):
            await saver.aput(head, checkpoint("two"), {"step": 1}, {"a": 2})
    assert writes_of(pg_url, "t") == []
    store.close()
    other.close()


async def test_a_failure_to_store_on_the_way_out_is_raised(pg_url: str) -> None:
    store, other = open_run_store(pg_url), open_run_store(pg_url)
    stale = await store.acquire("t", seconds=-1)

    async def late_writes_then_close() -> None:
        async with open_checkpointer(pg_url) as saver:
            first = await saver.aput(config("t", stale.owner), checkpoint("one"), {"step": 0}, {})
            await other.acquire("t")
            head = config("t", stale.owner, first["configurable"]["checkpoint_id"])
            await saver.aput_writes(head, [("a", "late")], "task-1")

    with pytest.raises(LeaseLostError):
        await late_writes_then_close()
    assert writes_of(pg_url, "t") == []
    store.close()
    other.close()


async def test_a_checkpoint_that_cannot_be_serialized_leaves_the_kept_writes_kept(
    pg_url: str,
) -> None:
    async with open_checkpointer(pg_url) as saver:
        first = await saver.aput(config("t", None), checkpoint("one"), {"step": 0}, {"a": 1})
        head = config("t", None, first["configurable"]["checkpoint_id"])
        await saver.aput_writes(head, [("a", "two")], "task-1")
        bad = checkpoint("two")
        bad["channel_values"]["items"] = [object()]  # the strict serializer refuses it
        with pytest.raises(TypeError, match="not msgpack serializable"):
            await saver.aput(head, bad, {"step": 1}, {"items": 2})
    assert [w[:2] for w in writes_of(pg_url, "t")] == [("task-1", "a")]


async def test_closing_leaves_nothing_to_run_after_the_saver(pg_url: str) -> None:
    """A checkpoint takes the kept writes: the delayed store armed for them is not left behind.

    Before, the delay armed by ``aput_writes`` outlived the ``aput`` that stored its writes and
    the saver itself; when it fired while ``asyncio.run`` was shutting down, its task was
    created after the loop's last cancellation ("Task was destroyed but it is pending!").
    """
    loop = asyncio.get_running_loop()
    created: list[str] = []

    def recording(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> Any:
        created.append(coro.__qualname__)
        return asyncio.Task(coro, loop=loop, **kwargs)

    async with open_checkpointer(pg_url) as saver:
        first = await saver.aput(config("t", None), checkpoint("one"), {"step": 0}, {"a": 1})
        head = config("t", None, first["configurable"]["checkpoint_id"])
        await saver.aput_writes(head, [("a", "two")], "task-1")
        await saver.aput(head, checkpoint("two"), {"step": 1}, {"a": 2, "items": 2})
    previous = loop.get_task_factory()
    loop.set_task_factory(recording)
    try:
        await asyncio.sleep(FLUSH_AFTER * 4)
    finally:
        loop.set_task_factory(previous)
    assert "FencedPostgresSaver._store_kept" not in created
    assert [w[:2] for w in writes_of(pg_url, "t")] == [("task-1", "a")]
