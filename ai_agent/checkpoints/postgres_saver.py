"""The PostgreSQL checkpointer: LangGraph's ``AsyncPostgresSaver``, fenced, a step in one commit.

LangGraph's saver stores a task's writes as soon as the task finishes and the step's checkpoint
after it, each in a statement batch of its own (autocommit, pipeline mode). Here a write is a
transaction, and under a lease that transaction first reads the thread's lease row ``FOR
SHARE`` (``ai_agent.checkpoints.fencing``): a takeover waits for it, and a holder whose lease was
taken over gets LeaseLostError with nothing written. What is stored is LangGraph's (its tables,
statements and rows, checked against its own saver in
``tests/postgres/test_fenced_checkpoints.py``); two changes make a step cheaper:

- **A step's writes and its checkpoint in one transaction.** ``aput_writes`` serializes the
  writes at once (a bad value raises there) and keeps them; the checkpoint that follows stores
  them in its own transaction, as the SQLite delta saver does. An error, an interrupt or any
  other write of LangGraph's special channels is stored at once (with what is kept before it);
  nothing waits longer than ``FLUSH_AFTER`` seconds; and every other call of the saver (a read,
  a listing, a delete, the close) stores what is kept first, so nothing reads around it. A kept
  write that fails to store (its lease was lost) is raised by the next call for its thread.
- **Serialized on the loop's thread.** LangGraph hands each serialization to a worker thread
  (``asyncio.to_thread``); for a task's writes or a checkpoint the hop costs more CPU than the
  work, and the thread needs the interpreter's lock the loop is waiting on anyway.
- **One round trip.** A write's transaction runs in pipeline mode: the lease row's read, the
  statements and the commit go out together, and the lease is checked before the commit
  (``bench/pg_steps.py``: a leased step about 0.3 ms sooner and 0.1 ms of CPU cheaper).

What a crash can lose is what LangGraph's asynchronous writes can: the writes of tasks whose
step had not stored its checkpoint yet (at most ``FLUSH_AFTER`` seconds old). Those tasks run
again when the thread continues, as they would had they been running; a tool call among them is
journaled in the run store before it starts, so it is never re-run silently.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_serializable_checkpoint_metadata,
)
from langgraph.checkpoint.postgres import _ainternal
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from psycopg import AsyncCursor
from psycopg.rows import DictRow, dict_row, tuple_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from ai_agent.checkpoints._pgpool import IdleCheck
from ai_agent.checkpoints._pgrows import checked_row, reading
from ai_agent.checkpoints._reads import readable
from ai_agent.checkpoints._serde import strict_serializer
from ai_agent.checkpoints.fencing import LEASE_ROW_SQL, check_lease, lease_in
from ai_agent.checkpoints.postgres import SAVER_SETUP_LOCK, connect_error, connect_kwargs
from ai_agent.checkpoints.store import describe_location
from ai_agent.errors import StorageFullError

__all__ = ["FLUSH_AFTER", "FencedPostgresSaver", "open_postgres_checkpointer"]

FLUSH_AFTER = 0.05
"""Seconds a task's writes may wait in memory for the checkpoint that follows them."""

_PG_LEASE_ROW = LEASE_ROW_SQL.replace("?", "%s") + " FOR SHARE"

_Writer = tuple[str, str | None]
"""Whose writes: (thread id, lease owner or None for a write outside any lease)."""

_Batch = tuple[str, list[tuple[Any, ...]]]
"""One ``executemany``: LangGraph's statement and its rows."""


class FencedPostgresSaver(AsyncPostgresSaver):
    """LangGraph's PostgreSQL saver, fenced by the run's lease, a step's writes in one commit.

    See the module's documentation. A full disk is a StorageFullError naming the database.

    Args:
        *args: As for ``AsyncPostgresSaver``.
        where: The database as it may be named (no password).
        **kwargs: As for ``AsyncPostgresSaver``.
    """

    def __init__(self, *args: Any, where: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.where = where
        self._kept: dict[_Writer, list[_Batch]] = {}
        self._failed: dict[_Writer, Exception] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._storing: set[asyncio.Task[None]] = set()
        # libpq 14 and newer (psycopg's binary wheels) batch statements; an older one waits.
        self._pipelines = psycopg.AsyncPipeline.is_supported()

    # LangGraph's writes ------------------------------------------------------------------------
    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """``AsyncPostgresSaver.aput``, with the step's kept writes in the same transaction.

        As LangGraph's method: its statements, its split of the channel values (primitives
        inline in the checkpoint row, the rest as blobs, a delta snapshot as a blob marked
        ``True``); serialized in place (0.97 against 1.18 ms of CPU a fenced checkpoint on a
        real server, measured before the writes joined it).
        """
        writer = _writer(config)
        self._raise_failed(writer)
        configurable = config["configurable"]
        thread_id, checkpoint_ns = writer[0], configurable["checkpoint_ns"]
        row = checkpoint.copy()
        row["channel_values"] = inline = dict(checkpoint["channel_values"])
        blobs: dict[str, Any] = {}
        for channel, value in checkpoint["channel_values"].items():
            if isinstance(value, _DeltaSnapshot):
                blobs[channel] = value
                inline[channel] = True
            elif value is not None and not isinstance(value, (str, int, float, bool)):
                blobs[channel] = inline.pop(channel)
        versions = {k: v for k, v in new_versions.items() if k in blobs}
        # Serialized before the kept writes are taken: a value that cannot be leaves them kept.
        dumped = self._dump_blobs(thread_id, checkpoint_ns, blobs, versions) if versions else []
        batches = self._kept.pop(writer, [])
        if not self._kept:
            self._disarm()  # nothing left for the delayed store: it must not outlive the saver
        if dumped:
            batches.append((self.UPSERT_CHECKPOINT_BLOBS_SQL, dumped))
        values = (
            thread_id,
            checkpoint_ns,
            checkpoint["id"],
            configurable.get("checkpoint_id"),
            Jsonb(row),
            Jsonb(get_serializable_checkpoint_metadata(config, metadata)),
        )
        async with self._transaction(writer) as cur:
            for query, rows in batches:
                await cur.executemany(query, rows)
            await cur.execute(self.UPSERT_CHECKPOINTS_SQL, values)
        return {
            "configurable": {
                "thread_id": configurable["thread_id"],
                "checkpoint_ns": checkpoint_ns,
                "checkpoint_id": checkpoint["id"],
            }
        }

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """``AsyncPostgresSaver.aput_writes``, kept for the checkpoint that follows.

        Serialized here, with LangGraph's statements (``UPSERT_`` when every write is one of its
        special channels, else ``INSERT_CHECKPOINT_WRITES_SQL``). A write to a special channel
        (an error, an interrupt, a resume value) is stored at once, after what is kept.
        """
        writer = _writer(config)
        self._raise_failed(writer)
        configurable = config["configurable"]
        special = [channel in WRITES_IDX_MAP for channel, _ in writes]
        query = (
            self.UPSERT_CHECKPOINT_WRITES_SQL if all(special) else self.INSERT_CHECKPOINT_WRITES_SQL
        )
        rows = self._dump_writes(
            configurable["thread_id"],
            configurable["checkpoint_ns"],
            configurable["checkpoint_id"],
            task_id,
            task_path,
            writes,
        )
        self._kept.setdefault(writer, []).append((query, rows))
        if any(special):
            await self._store(writer, self._kept.pop(writer))
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(FLUSH_AFTER, self._store_later)

    # Everything else stores what is kept first ---------------------------------------------------
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """``AsyncPostgresSaver.aget_tuple``, after storing the kept writes."""
        await self.aflush(raising=False)
        self._raise_failed(_writer(config))
        configurable = config["configurable"]
        with reading(str(configurable["thread_id"]), configurable.get("checkpoint_id")):
            return await super().aget_tuple(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """``AsyncPostgresSaver.alist``, after storing the kept writes."""
        await self.aflush(raising=False)
        thread_id = None
        if config is not None:
            self._raise_failed(_writer(config))
            thread_id = str(config["configurable"]["thread_id"])
        with reading(thread_id):
            async for item in super().alist(config, filter=filter, before=before, limit=limit):
                yield item

    async def _load_checkpoint_tuple(self, value: DictRow) -> CheckpointTuple:
        """LangGraph's, on a row checked first: a damaged row is a CorruptRunError naming it.

        See ``ai_agent.checkpoints._pgrows``; the error is the SQLite saver's (``readable``).
        """
        parent = value["parent_checkpoint_id"]
        with readable(value["thread_id"], value["checkpoint_id"], parent):
            checked_row(value)
            return await super()._load_checkpoint_tuple(value)

    @asynccontextmanager
    async def _cursor(self, *, pipeline: bool = False) -> AsyncIterator[AsyncCursor[DictRow]]:
        # Every other statement LangGraph's saver runs (deletes, pruning, history) comes here.
        await self.aflush(raising=False)
        async with super()._cursor(pipeline=pipeline) as cur:
            yield cur

    async def aflush(self, *, raising: bool = True) -> None:
        """Store every kept write now; with ``raising``, raise the first that failed to store."""
        while self._storing or self._kept:
            if self._storing:
                await asyncio.wait(set(self._storing))  # each leaves the set as it ends
            if self._kept:
                await self._store_kept()
        if raising and self._failed:
            raise self._failed.pop(next(iter(self._failed)))

    # Storing ---------------------------------------------------------------------------------
    def _store_later(self) -> None:
        self._timer = None
        task = asyncio.ensure_future(self._store_kept())
        self._storing.add(task)
        task.add_done_callback(self._storing.discard)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    async def _store_kept(self) -> None:
        self._disarm()
        kept, self._kept = self._kept, {}
        for writer, batches in kept.items():
            try:
                await self._store(writer, batches)
            except Exception as exc:  # raised by the next call for its thread
                self._failed.setdefault(writer, exc)

    async def _store(self, writer: _Writer, batches: list[_Batch]) -> None:
        async with self._transaction(writer) as cur:
            for query, rows in batches:
                await cur.executemany(query, rows)

    def _raise_failed(self, caller: _Writer) -> None:
        """Raise a kept write's failure to the next call for its thread: its holder, or a read.

        Never to another holder of the thread (a lease taken anew by this process).
        """
        thread_id, owner = caller
        for writer in list(self._failed):
            if writer[0] == thread_id and owner in (None, writer[1]):
                raise self._failed.pop(writer)

    @asynccontextmanager
    async def _transaction(self, writer: _Writer) -> AsyncIterator[AsyncCursor[DictRow]]:
        """A cursor in one transaction, which first locks the lease row when there is one.

        In pipeline mode: the lease row's ``FOR SHARE``, the statements and the commit go out
        together, and the lease is checked when its row comes back, before the commit (a lost
        lease rolls everything back). The server runs them in order, so the row is locked
        before any write, as when the client waited for it first; what is saved is the round
        trips, each of which costs the client more CPU than the statement it carries.
        """
        thread_id, owner = writer
        try:
            async with (
                self.lock,
                _ainternal.get_connection(self.conn) as conn,
                conn.pipeline() if self._pipelines else contextlib.nullcontext(),
                conn.transaction(),
                conn.cursor(binary=True, row_factory=dict_row) as cur,
                conn.cursor(binary=True, row_factory=tuple_row) as lease,
            ):
                if owner is not None:
                    await lease.execute(_PG_LEASE_ROW, (thread_id,))
                yield cur
                if owner is not None:
                    check_lease(await lease.fetchone(), thread_id, owner)
        except psycopg.errors.DiskFull:
            raise StorageFullError(self.where) from None


def _writer(config: RunnableConfig) -> _Writer:
    return str(config["configurable"]["thread_id"]), lease_in(config)


async def _setup_saver(conn: psycopg.AsyncConnection[Any]) -> None:
    """LangGraph's ``setup()``, one process at a time.

    Its migrations are not safe against a concurrent ``setup()``, so a session-level advisory
    lock serializes them. The lock is *tried* in a loop, not waited for in a statement: a
    statement waiting for it is an open transaction, and the ``CREATE INDEX CONCURRENTLY`` of
    the holder's migrations waits for every open transaction, which would deadlock.
    """
    while True:
        cur = await conn.execute("SELECT pg_try_advisory_lock(%s) AS ok", (SAVER_SETUP_LOCK,))
        row = await cur.fetchone()
        if row and row["ok"]:
            break
        await asyncio.sleep(0.05)
    try:
        await AsyncPostgresSaver(conn, serde=strict_serializer()).setup()
    finally:
        await conn.execute("SELECT pg_advisory_unlock(%s)", (SAVER_SETUP_LOCK,))


@asynccontextmanager
async def open_postgres_checkpointer(
    url: str, *, max_connections: int = 4, serde: SerializerProtocol | None = None
) -> AsyncIterator[FencedPostgresSaver]:
    """Open LangGraph's PostgreSQL checkpointer on ``url``, creating its tables if needed.

    Strict serialization, as with SQLite. A pool of up to ``max_connections`` lets one process
    drive several runs at once (a worker's ``--concurrency``). Kept writes are stored on the way
    out, whatever ended the block; a failure to store them is raised when nothing else was.

    Raises:
        StoreError: the database cannot be reached (the message has no password).
    """
    kwargs = connect_kwargs(url)
    try:
        conn = await psycopg.AsyncConnection.connect(
            url, autocommit=True, prepare_threshold=0, row_factory=dict_row, **kwargs
        )
    except psycopg.Error as exc:
        raise connect_error(url, exc) from None
    try:
        await _setup_saver(conn)
    finally:
        await conn.close()
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        url,
        min_size=1,
        max_size=max_connections,
        open=False,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row, **kwargs},
        check=IdleCheck().acheck,  # a ping per hand-out doubled the round trips of a run
        name="ai-agent-checkpoints",
    )
    await pool.open()
    saver = FencedPostgresSaver(
        pool, serde=serde or strict_serializer(), where=describe_location(url)
    )
    try:
        yield saver
    except BaseException:
        await saver.aflush(raising=False)  # the block's own error is the one raised
        raise
    else:
        await saver.aflush()
    finally:
        await pool.close()
