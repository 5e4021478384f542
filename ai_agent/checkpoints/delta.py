"""The delta checkpointer: a LangGraph checkpoint saver for SQLite that stores only what is new.

LangGraph's SqliteSaver writes the whole state at every step, so a run that grows its message
history by a little each cycle costs the square of its length in bytes and time. This saver
writes each channel value once per version, and a list that grew by appending (the messages, the
results, the trace) is written as the new items plus a reference to the list it extends. A list
that was rewritten (compaction, ``{"replace": [...]}``, a removal) starts a new lineage holding
its full value. Reading a checkpoint rebuilds exactly the values LangGraph put.

Storage format (``delta_meta.format`` = 5), beside the run store's tables in the same file:

    delta_threads      id  <-  (thread_id, checkpoint_ns)           a small integer per thread
    delta_checkpoints  (thread, checkpoint_id) -> parent_id, full, depth, skeleton, metadata
                         skeleton = channel_versions + versions_seen + refs {channel: ref}
                         + the checkpoint's other keys (v, id, ts, updated_channels); stored
                         in full, or as a diff against the parent's skeleton (full = 0), with at
                         most 31 diffs in a row: reading one walks at most 32 small rows
                         ref = [lineage, length]   a list: the first `length` items of a lineage
                             | [lineage, length, "d"]  a dict's change log (format 4)
                             | [type, bytes]       a value of at most 256 bytes, inline
                             | value id            anything bigger, in delta_values
    delta_values       id -> (type, bytes)            a value, written once per version
                          | (lineage, length)          a list (format 1 only: now inline)
    delta_lineages     id -> base, base_length         a list that forked from another lineage's
                                                       first base_length items (a fork, time travel)
    delta_segments     (lineage, start) -> count, merged, type, items    items[start:start+count]
                         merged = 0 rows indexed apart too (found without walking the chunks)
    delta_writes       (thread, checkpoint_id, task_id) -> task_path, [idx, channel, type, bytes]
                         | [idx, channel, "ai-agent:list-items", [lineage, start, count]] (5)
    agent_texts        hash -> body                    a str or bytes of 4 KB or more, once per file
                                                       (format 3; ``_texts``), named by the rows

How the message history of a run looks after 12 messages, 3 of them added since the last merge:

    delta_checkpoints  step 40 ... refs {"messages": [7, 12], "task": [msgpack, "..."], ...}
                       step 37 ... refs {"messages": [7, 11], ...}
                                             |
    delta_segments     lineage 7: [0..9) merged | [9..10) | [10..11) | [11..12)
                       32 appends are merged into one chunk: reading n appends touches n/32 + 32

A dict of 1 KB or more is a change log (``_dicts``): a step, or a task's write, stores the keys
it set or removed. A task's write of items the next step appends to a list names them there
(format 5, ``_writes.share_appended``). An append is recognised by identity: a new list that
starts with the very objects last stored, still equal to their snapshot (``check_edits``), only
needs its tail written; when the cache cannot vouch for the prefix, the stored bytes are compared.

Every SQLite call runs on one worker thread owned by the saver, so the async methods never block
the event loop and the sync methods work from any thread, the event loop's included (LangGraph's
AsyncSqliteSaver refuses those). The connection uses WAL, a 30 s busy timeout and ``synchronous=
NORMAL`` (see `ai_agent.checkpoints._store`). Serialization is strict: only allowlisted types load.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
from collections.abc import AsyncIterator, Callable, Collection, Iterator, Sequence
from concurrent.futures import Future
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from pathlib import Path
from types import TracebackType
from typing import Any, ParamSpec, TypeVar, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from ai_agent.checkpoints import _maintenance, _puts, _reads, _writes
from ai_agent.checkpoints._legacy import import_legacy
from ai_agent.checkpoints._maintenance import PruneStats
from ai_agent.checkpoints._schema import FORMAT_VERSION
from ai_agent.checkpoints._serde import strict_serializer, widened
from ai_agent.checkpoints._store import DeltaStore, ReadMemo
from ai_agent.checkpoints._worker import WalCheckpointer, Worker
from ai_agent.errors import AgentError, StoreError

__all__ = ["FORMAT_VERSION", "DeltaSaver", "PruneStats"]

P = ParamSpec("P")
R = TypeVar("R")

_LIST_PAGE = 64

FLUSH_AFTER = 0.05
"""Seconds a task's writes may wait in memory for the checkpoint that follows them."""


class DeltaSaver(
    BaseCheckpointSaver[int],
    AbstractContextManager["DeltaSaver"],
    AbstractAsyncContextManager["DeltaSaver"],
):
    """A SQLite checkpoint saver whose cost per step is what the step added, not the state.

    Use it as a context manager (sync or async), or call `close`.

    Args:
        path: The SQLite file (created with its directory if missing), or ``":memory:"``.
        serde: Serializer; default: strict msgpack (only allowlisted types load).
        cache_threads: Threads whose newest checkpoints stay in memory for cheap appends.
        check_edits: Notice a stored list item edited in place (a C-speed comparison of each
            changed list per step); the engine, whose stages return new items, turns it off.

    Raises:
        StoreError: the file is not a SQLite database, or was written by a newer ai-agent.

    Examples:
        >>> import tempfile, os
        >>> from langgraph.graph import StateGraph
        >>> from typing_extensions import TypedDict
        >>> class S(TypedDict):
        ...     n: int
        >>> builder = StateGraph(S)
        >>> builder = builder.add_node("inc", lambda s: {"n": s["n"] + 1})
        >>> builder = builder.set_entry_point("inc").set_finish_point("inc")
        >>> with tempfile.TemporaryDirectory() as d:
        ...     with DeltaSaver(os.path.join(d, "c.sqlite")) as saver:
        ...         graph = builder.compile(checkpointer=saver)
        ...         config = {"configurable": {"thread_id": "1"}}
        ...         graph.invoke({"n": 1}, config)["n"], graph.get_state(config).values["n"]
        (2, 2)
    """

    def __init__(
        self,
        path: str | Path,
        *,
        serde: SerializerProtocol | None = None,
        cache_threads: int = 256,
        check_edits: bool = True,
    ) -> None:
        super().__init__(serde=serde or strict_serializer())
        self._closed = False
        self._deferred_error: BaseException | None = None
        self._buffer: list[Callable[[], Any]] = []
        self._flush_timer: asyncio.TimerHandle | None = None
        self._store: DeltaStore | None = None
        self._worker = Worker("ai-agent-checkpoints", self._group)
        self._wal: WalCheckpointer | None = None
        try:
            self._store = self._worker.submit(
                functools.partial(_open_store, path, self.serde, cache_threads, check_edits)
            ).result()
        except BaseException:
            self._worker.stop()
            raise
        if self._store.path != ":memory:":
            # Checkpointing the WAL happens on its own thread, not inside a step's commit.
            self._wal = WalCheckpointer(self._store.path)
            self._store.on_commit = self._wal.committed
            self._call(self._store.conn.execute, "PRAGMA wal_autocheckpoint = 0")

    @property
    def store(self) -> DeltaStore:
        """The storage engine (use only from the worker thread: see ``_call``)."""
        if self._store is None:  # pragma: no cover - only while opening
            raise StoreError("the checkpoint database is not open")
        return self._store

    def _group(self, jobs: list[Callable[[], Any]]) -> list[tuple[bool, Any]]:
        return [o if o is not None else (False, StoreError("busy")) for o in self.store.group(jobs)]

    def _write_now(self, jobs: list[Callable[[], Any]]) -> list[tuple[bool, Any] | Future[Any]]:
        """Run write jobs here if nothing would wait, else queue them.

        Here means the caller's thread, normally the event loop's: it is allowed only while the
        worker is idle (so nothing queued earlier is overtaken) and the write lock is free at
        once. Anything that could wait (a lock held by another process, a read, a WAL
        checkpoint) stays on the worker thread. Returns, per job, ``(ok, result or
        exception)`` when it ran here, else the future of the queued job (a future per step
        costs more than the rest of this method, so the fast path makes none).
        """
        outcomes: list[tuple[bool, Any] | None] | None = None
        if self._worker.lock.acquire(blocking=False):
            try:
                if self._worker.idle:
                    outcomes = self.store.group(jobs, wait=False)
            finally:
                self._worker.lock.release()
        if outcomes is None:
            return [self._worker.submit(job, write=True) for job in jobs]
        return [
            outcome if outcome is not None else self._worker.submit(job, write=True)
            for job, outcome in zip(jobs, outcomes, strict=True)
        ]

    def _watch(self, outcome: tuple[bool, Any] | Future[Any]) -> None:
        """Keep a write nobody waits for: its failure is raised by the saver's next call."""
        if isinstance(outcome, Future):
            outcome.add_done_callback(self._note_failure)
        elif not outcome[0]:
            self._deferred_error = outcome[1]

    def _flush(self) -> None:
        """Store the task writes ``aput_writes`` buffered (see there)."""
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        jobs, self._buffer = self._buffer, []
        for outcome in self._write_now(jobs):
            self._watch(outcome)

    # The worker thread -----------------------------------------------------------------------
    def _call(self, fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
        """Run ``fn`` on the worker thread and wait (inline when already on it)."""
        if self._buffer:
            self._flush()
        self._raise_deferred()
        if threading.get_ident() == self._worker.ident:
            return fn(*args, **kwargs)
        try:
            result: R = self._worker.submit(functools.partial(fn, *args, **kwargs)).result()
        except Exception:
            self._raise_deferred()  # the cause, when a queued write broke the connection
            raise
        self._raise_deferred()
        return result

    async def _acall(self, fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
        """Run ``fn`` on the worker thread without blocking the event loop."""
        if self._buffer:
            self._flush()
        return await self._await(self._worker.submit(functools.partial(fn, *args, **kwargs)))

    async def _await(self, future: Future[R]) -> R:
        self._raise_deferred()
        try:
            result = future.result() if future.done() else await asyncio.wrap_future(future)
        except Exception:
            self._raise_deferred()  # the cause, when a queued write broke the connection
            raise
        self._raise_deferred()  # a queued write that ran just before this call and failed
        return result

    def _write(self, fn: Callable[[], R]) -> Future[R]:
        """Queue a write job: it shares a transaction with the writes queued right after it."""
        if self._buffer:
            self._flush()
        self._raise_deferred()
        return self._worker.submit(fn, write=True)

    def _note_failure(self, future: Future[None]) -> None:
        if not future.cancelled() and future.exception() is not None:
            self._deferred_error = future.exception()

    def _raise_deferred(self) -> None:
        if self._deferred_error is not None:
            error, self._deferred_error = self._deferred_error, None
            if isinstance(error, AgentError):  # already says what happened and what to do
                raise error
            raise StoreError(f"an earlier checkpoint write failed: {error}") from error

    def close(self) -> None:
        """Close the database and stop the worker thread (idempotent)."""
        if self._closed:
            return
        if self._buffer:
            self._flush()
        self._closed = True
        if self._wal is not None:
            self._wal.stop()
        self._worker.submit(self.store.close).result()
        self._worker.stop()
        self._raise_deferred()

    async def aclose(self) -> None:
        """``close`` without blocking the event loop."""
        if self._closed:
            return
        if self._buffer:
            self._flush()
        self._closed = True
        if self._wal is not None:
            await asyncio.to_thread(self._wal.stop)
        await asyncio.wrap_future(self._worker.submit(self.store.close))
        await asyncio.to_thread(self._worker.stop)
        self._raise_deferred()

    def __enter__(self) -> DeltaSaver:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> DeltaSaver:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    @property
    def path(self) -> str:
        """The database file."""
        return self.store.path

    @property
    def legacy_skipped(self) -> list[str]:
        """Threads of an old SqliteSaver database that could not be imported (see ``_legacy``)."""
        return list(self.store.legacy_skipped)

    def with_allowlist(self, extra_allowlist: Collection[tuple[str, ...]]) -> DeltaSaver:
        """This saver, its serializer now also loading ``extra_allowlist``'s types.

        LangGraph calls this under ``LANGGRAPH_STRICT_MSGPACK`` with the types its state names
        (else a pydantic value loads back as a dict); all others stay refused. In place, not a
        clone: that would share the connection, worker and write buffer, and their closing.
        """
        serde = widened(self.serde, extra_allowlist)
        if serde is not self.serde:
            self._call(self._use_serde, serde)  # on the worker, between two jobs
        return self

    def _use_serde(self, serde: SerializerProtocol) -> None:
        self.serde = self.store.serde = serde

    # Versions --------------------------------------------------------------------------------
    def get_next_version(self, current: Any, channel: None) -> Any:
        """One more than ``current``: a small integer (a string for another saver's thread).

        Values are addressed by id, not by version: two branches at one version never collide.
        """
        if current is None:
            return 1
        if isinstance(current, str):
            # A thread copied from another saver (InMemorySaver, SqliteSaver): its versions stay
            # strings of the same sortable shape, since LangGraph compares them with ">".
            return f"{int(current.split('.')[0]) + 1:032}.{0:016}"
        return int(current) + 1

    # Sync API --------------------------------------------------------------------------------
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names (its ``checkpoint_id``, else the thread's latest)."""
        return _reads.langgraph_tuple(self._call(_reads.get_tuple, self.store, config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints matching ``config`` / ``filter`` / ``before``, newest first."""
        memo = ReadMemo()
        after: tuple[str, int] | None = None
        left = limit
        while left is None or left > 0:
            size = _LIST_PAGE if left is None else min(left, _LIST_PAGE)
            page = self._call(
                _reads.list_page, self.store, config, filter, before, size, after, memo
            )
            for item, key in page:
                yield _reads.langgraph_item(item)
                after = key
            if len(page) < size:
                return
            if left is not None:
                left -= len(page)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint: its new values, and its skeleton as a diff of its parent's."""
        store = self.store
        job = functools.partial(_puts.put_in_tx, store, config, checkpoint, metadata, new_versions)
        if threading.get_ident() == self._worker.ident:
            return _puts.put(store, config, checkpoint, metadata, new_versions)
        return self._write(job).result()

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes against a checkpoint."""
        job = _writes.prepare_writes(self.store, config, writes, task_id, task_path)
        if threading.get_ident() == self._worker.ident:
            _writes.put_writes(self.store, job)
            return
        self._write(functools.partial(_writes.put_writes_in_tx, self.store, job)).result()

    def delete_thread(self, thread_id: str) -> None:
        """Delete a thread: every namespace, checkpoint, value and write of it."""
        self._call(_maintenance.delete_thread, self.store, thread_id)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints whose metadata ``run_id`` is one of ``run_ids``."""
        self._call(_maintenance.delete_for_runs, self.store, run_ids)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread's whole history (every namespace) to a new thread id.

        Raises:
            StoreError: the target thread already exists.
        """
        self._call(_maintenance.copy_thread, self.store, source_thread_id, target_thread_id)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """LangGraph's prune: ``"keep_latest"`` (per namespace) or ``"delete"`` everything.

        Raises:
            ValueError: an unknown strategy.
        """
        keep = _maintenance.keep_for(strategy)
        for thread_id in thread_ids:
            self.prune_thread(thread_id, keep=keep, reclaim=False)

    def prune_thread(
        self,
        thread_id: str,
        *,
        keep: int | Sequence[str] = 1,
        checkpoint_ns: str | None = None,
        reclaim: bool = True,
    ) -> PruneStats:
        """Delete a thread's older checkpoints and every value only they used.

        The checkpoints that stay read back exactly as before (a kept checkpoint stored as a diff
        against a deleted one is rewritten in full first).

        Args:
            thread_id: The thread.
            keep: How many of the newest checkpoints to keep per namespace, or exactly which
                checkpoint ids to keep.
            checkpoint_ns: Only this namespace (default: all of them).
            reclaim: Give the freed space back to the file system (shrinks the file).
        """
        return self._call(self._prune, thread_id, keep, checkpoint_ns, reclaim)

    def reclaim(self) -> None:
        """Shrink the file to what it holds (after deletes), and empty the WAL."""
        self._call(self._reclaim)

    def _reclaim(self) -> None:
        # The WAL thread must not checkpoint meanwhile: SQLite refuses a second checkpointer.
        with self._wal.lock if self._wal is not None else contextlib.nullcontext():
            _maintenance.reclaim(self.store)

    def _prune(
        self, thread_id: str, keep: int | Sequence[str], ns: str | None, reclaim: bool
    ) -> PruneStats:
        before = self.store.size()
        checkpoints, values, segments = _maintenance.prune(self.store, thread_id, keep, ns)
        if reclaim:
            self._reclaim()
        return PruneStats(checkpoints, values, segments, before, self.store.size())

    # Async API -------------------------------------------------------------------------------
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """``get_tuple`` off the event loop."""
        return _reads.langgraph_tuple(await self._acall(_reads.get_tuple, self.store, config))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """``list`` off the event loop, a page at a time."""
        memo = ReadMemo()
        after: tuple[str, int] | None = None
        left = limit
        while left is None or left > 0:
            size = _LIST_PAGE if left is None else min(left, _LIST_PAGE)
            page = await self._acall(
                _reads.list_page, self.store, config, filter, before, size, after, memo
            )
            for item, key in page:
                yield _reads.langgraph_item(item)
                after = key
            if len(page) < size:
                return
            if left is not None:
                left -= len(page)

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """``put``, without a thread round trip when nothing has to wait (see ``_write_now``).

        The task writes buffered just before it are committed in the same transaction.
        """
        self._raise_deferred()
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        jobs, self._buffer = self._buffer, []
        store = self.store
        jobs.append(
            functools.partial(_puts.put_in_tx, store, config, checkpoint, metadata, new_versions)
        )
        *writes, put = self._write_now(jobs)
        for outcome in writes:
            self._watch(outcome)
        if isinstance(put, Future):
            return await self._await(put)
        ok, value = put
        if not ok:
            # The writes of this group were tried with it: any failure of theirs is this one,
            # reported now, not again by the next call.
            self._deferred_error = None
            raise value
        self._raise_deferred()  # a write of this group that failed
        return cast(RunnableConfig, value)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """``put_writes`` without waiting: stored with the checkpoint that follows them.

        The writes are serialized here (so a bad value raises here) and buffered. The next put
        commits them in its own transaction (a step's writes and its checkpoint: one commit);
        errors, interrupts and other special writes are stored at once; and nothing waits longer
        than ``FLUSH_AFTER`` seconds. Every other call of this saver (a read, a close) stores
        them first, so nothing can read around them. A failure to store them is raised by the
        next call.
        """
        self._raise_deferred()
        job = _writes.prepare_writes(self.store, config, writes, task_id, task_path)
        self._buffer.append(functools.partial(_writes.put_writes_in_tx, self.store, job))
        if job.replace:
            self._flush()
        elif self._flush_timer is None:
            self._flush_timer = asyncio.get_running_loop().call_later(FLUSH_AFTER, self._flush)

    async def adelete_thread(self, thread_id: str) -> None:
        """``delete_thread`` off the event loop."""
        await self._acall(_maintenance.delete_thread, self.store, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """``delete_for_runs`` off the event loop."""
        await self._acall(_maintenance.delete_for_runs, self.store, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """``copy_thread`` off the event loop."""
        await self._acall(_maintenance.copy_thread, self.store, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``prune`` off the event loop."""
        keep = _maintenance.keep_for(strategy)
        for thread_id in thread_ids:
            await self.aprune_thread(thread_id, keep=keep, reclaim=False)

    async def aprune_thread(
        self,
        thread_id: str,
        *,
        keep: int | Sequence[str] = 1,
        checkpoint_ns: str | None = None,
        reclaim: bool = True,
    ) -> PruneStats:
        """``prune_thread`` off the event loop."""
        return await self._acall(self._prune, thread_id, keep, checkpoint_ns, reclaim)

    async def areclaim(self) -> None:
        """``reclaim`` off the event loop."""
        await self._acall(self._reclaim)


def _open_store(
    path: str | Path, serde: SerializerProtocol, cache_threads: int, check_edits: bool
) -> DeltaStore:
    """The storage engine; an old SqliteSaver database's runs are imported the first time."""
    store = DeltaStore(path, serde, cache_threads=cache_threads, check_edits=check_edits)
    store.legacy_skipped = import_legacy(store)
    return store
