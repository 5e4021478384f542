"""The delta checkpointer's storage engine: its connection, and what it may take for true.

`DeltaStore` is not thread-safe on purpose: `ai_agent.checkpoints.delta.DeltaSaver`
owns one and calls it only from its single worker thread, so the connection, the caches and the
transactions never need a lock. The storage format is drawn in the ``delta`` module's docstring.
This module holds the connection, its transactions, the caches, and how a value becomes a row's
bytes; the rest of the engine is functions over a store, one module per concern:

    _skeleton     a checkpoint without its values, in full or as a diff (below this module)
    _lineages     list channels: segments appended, forked and merged
    _dicts        dict channels: change logs of their keys, in lineages
    _writes       a task's pending writes
    _reads        reading checkpoints back (get, list) and naming one that cannot be
    _puts         storing a checkpoint: what changed since its parent
    _maintenance  pruning, copying and deleting runs; reclaiming space
    _legacy       importing an old SqliteSaver database

Each of them imports only the ones listed before it (and this module): no circles.

Why the caches can be trusted: every write transaction first reads ``PRAGMA data_version``,
which changes only when *another* connection committed since this one last looked. While it
is unchanged, nothing but this store wrote the file, so what it remembers (thread keys, the next
free ids, the length of each list lineage, which checkpoints exist) is still exactly true and a
step costs a handful of statements. When it changed, those facts are read again. A rollback
drops every cache, since SQLite hands the ids of rolled-back rows out again.
"""

from __future__ import annotations

import sqlite3
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ai_agent.checkpoints import _texts
from ai_agent.checkpoints._schema import create_or_migrate
from ai_agent.checkpoints._skeleton import Ref, Skeleton
from ai_agent.checkpoints._sqlite import (
    BUSY_TIMEOUT_SECONDS,
    enter_wal,
    full_disk_raises,
    is_busy,
    locked_too_long,
)
from ai_agent.checkpoints.fencing import LEASE_ROW_SQL, check_lease
from ai_agent.errors import StoreError

if TYPE_CHECKING:  # types only: the light reader (`reader`) loads no LangChain
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.serde.base import SerializerProtocol

__all__ = [
    "BUSY_TIMEOUT_SECONDS",
    "REUSE_MAX_BYTES",
    "Appended",
    "Batch",
    "DeltaStore",
    "Held",
    "Packed",
    "ReadMemo",
    "ThreadCache",
    "remember",
    "thread_of",
    "tuple_config",
]

REUSE_MAX_BYTES = 4096
"""Full values up to this size stay serialized in the cache, so an unchanged one is reused."""

_SKELETON_CACHE = 4
_MAX_LINEAGE_FACTS = 1 << 16

Appended = tuple[int, int, list[Any], bytes]
"""Items a put appended to a list lineage: ``(lineage, start, items, their bytes)``."""

Packed = tuple[str, bytes, str | None]
"""A value as a row stores it: its type, its bytes, and the texts they name (``_texts``).

Two packed values are the same value only if all three are equal: the bytes of a value whose
texts were taken out can equal the bytes of a small value that merely holds a string that looks
like a mark (and is not one, since its row names no texts).
"""


@dataclass(slots=True)
class Held:
    """What this process knows of one stored value: enough to reuse or extend it unread.

    ``items`` holds the very objects that were stored or handed out (list values), so "the new
    list starts with the old one" is a pointer comparison instead of a comparison of contents.
    ``blob`` is a small value as it was stored, so an unchanged one is recognised by its bytes.
    ``shadow`` is a snapshot of ``items`` (``_identity.snapshot``): the very same objects may have
    been edited in place since, and then the list must not be taken for an append. Items read
    back have none until a put has compared them with the stored bytes. A store that does not
    check edits (``DeltaStore.check_edits``) takes none. ``keys`` is the same for a dict stored
    as a change log (``_dicts``): key -> a snapshot of its value (the value itself when edits
    are not checked), what the next step's dict is compared with key by key.
    """

    lineage: int | None
    length: int
    items: list[Any] | None = None
    blob: Packed | None = None
    shadow: list[Any] | None = None
    keys: dict[str, Any] | None = None


@dataclass(slots=True)
class ThreadCache:
    """A thread key's newest skeletons, and what is held of the values they name.

    ``dicts`` names, per channel, the dict change log last stored for it (``_dicts``): what a
    task's write of that dict is stored as changes from. ``writes`` are the rows of writes this
    store stored against its newest checkpoints (checkpoint id -> task id -> the row's entries)
    that hold a large list: the put of the checkpoint after it may append those very items to a
    lineage, and then the row names them there instead of holding them a second time
    (``_writes.share_appended``). Several: with LangGraph's "async" durability the tasks of
    later steps write before the puts of earlier ones. ``appended`` is the other way round: what
    the put after each of the newest checkpoints appended (checkpoint id -> ``Batch.appended``),
    for a row of writes stored after that put. LangGraph calls ``put_writes`` on a background
    thread and waits for it before the next put only for its own delta channels, so in any
    durability mode a task's writes may reach the saver after the checkpoint they built.
    """

    skeletons: OrderedDict[str, Skeleton] = field(default_factory=OrderedDict)
    held: dict[Ref, Held] = field(default_factory=dict)
    dicts: dict[str, Ref] = field(default_factory=dict)
    writes: OrderedDict[str, dict[str, list[list[Any]]]] = field(default_factory=OrderedDict)
    appended: OrderedDict[str, list[Appended]] = field(default_factory=OrderedDict)


@dataclass(slots=True)
class ReadMemo:
    """Decoded data shared by the checkpoints of one ``list`` call (they overlap heavily)."""

    skeletons: OrderedDict[tuple[int, str], Skeleton] = field(default_factory=OrderedDict)
    values: dict[tuple[int, Ref], Any] = field(default_factory=dict)
    lineages: dict[int, list[Any]] = field(default_factory=dict)
    texts: dict[str, bytes] = field(default_factory=dict)


@dataclass(slots=True)
class Batch:
    """Rows of one ``put``, inserted together at its end (one statement per table).

    ``appended`` lists, per segment that names no large text, ``(lineage, start, items,
    bytes)``: what a task's write of the same items can name instead of holding them.
    """

    values: list[tuple[Any, ...]] = field(default_factory=list)
    segments: list[tuple[Any, ...]] = field(default_factory=list)
    appended: list[Appended] = field(default_factory=list)
    merges: list[int] = field(default_factory=list)
    texts: dict[str, bytes] = field(default_factory=dict)

    def named(self, done: _texts.Cut | None) -> str | None:
        """Keep the texts a packed value names for this put; returns its ``texts`` column."""
        if done is None:
            return None
        self.texts.update(done.texts)
        return _texts.texts_column(done.hashes)


def thread_of(config: RunnableConfig) -> tuple[str, str]:
    """(thread id, namespace) of a config."""
    conf = config["configurable"]
    return str(conf["thread_id"]), str(conf.get("checkpoint_ns", ""))


def tuple_config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    """The config LangGraph expects for one stored checkpoint."""
    conf = {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}
    return {"configurable": conf}


class DeltaStore:
    """The delta checkpointer's connection and caches; one thread at a time.

    Args:
        path: The SQLite file (created if missing), or ``":memory:"``.
        serde: The serializer for every value (strict: only allowlisted types load).
        cache_threads: Threads whose newest checkpoints stay cached for cheap appends.
        check_edits: Snapshot stored list items, so an item edited in place is noticed (see
            ``Held.shadow``); off only where every writer returns new items.

    Attributes:
        trusted: Inside a write transaction: nothing but this store wrote the file since its
            last commit, so the facts below are still exactly true.
        bases: List lineage -> (the lineage it forked from, how many of its items it took, its
            thread's key).
        tips: List lineage -> how many items it holds (trusted facts only).
        unmerged: List lineage -> how many small segments it has since its last merge.
        next_value: Thread key -> its next free value id.
        legacy_skipped: Threads of an old SqliteSaver database that could not be imported
            (``_legacy``).
    """

    def __init__(
        self,
        path: str | Path,
        serde: SerializerProtocol,
        *,
        cache_threads: int = 256,
        check_edits: bool = True,
    ) -> None:
        self.path = str(path)
        self.serde = serde
        self.check_edits = check_edits
        self.cache_threads = max(1, cache_threads)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.conn = _connect(self.path)
        self._threads: dict[tuple[str, str], int] = {}
        self._caches: OrderedDict[int, ThreadCache] = OrderedDict()
        self.bases: dict[int, tuple[int | None, int, int]] = {}
        self.tips: dict[int, int] = {}
        self.unmerged: dict[int, int] = {}
        self.next_value: dict[int, int] = {}
        self._texts_known: set[str] = set()
        self._data_version: int | None = None
        self.trusted = False
        self._busy = BUSY_TIMEOUT_SECONDS
        self.on_commit: Callable[[], None] | None = None
        self.legacy_skipped: list[str] = []

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    # Transactions --------------------------------------------------------------------------
    @contextmanager
    def tx(self, *, wait: bool = True) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``: the write lock is taken up front).

        Args:
            wait: Wait up to the busy timeout for another connection's write lock. With False,
                a held lock raises ``sqlite3.OperationalError`` at once (the fast path).
        """
        conn = self.conn
        self.busy_timeout(0)
        if wait:
            self._begin_waiting()
        else:
            conn.execute("BEGIN IMMEDIATE")
        try:
            with full_disk_raises(self.path):
                version = conn.execute("PRAGMA data_version").fetchone()[0]
                self.trusted = version == self._data_version
                if not self.trusted or len(self.tips) + len(self._texts_known) > _MAX_LINEAGE_FACTS:
                    self._distrust()
                yield conn
                conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            self.reset()
            raise
        self._data_version = version
        if self.on_commit is not None:
            self.on_commit()

    def _begin_waiting(self) -> None:
        """``BEGIN IMMEDIATE``, waiting up to the busy timeout for another writer.

        SQLite's own busy handler sleeps 1, 2, 5, 10 ... 100 ms between tries, far longer than
        the sub-millisecond transactions it waits for, which turns a busy file into a convoy.
        These tries start at 50 microseconds and never sleep more than 5 ms.
        """
        deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
        delay = 0.00005
        while True:
            try:
                self.conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.005)
            else:
                return

    def busy_timeout(self, seconds: int) -> None:
        """How long a statement waits for another connection's lock (0: fail at once)."""
        if seconds != self._busy:
            self.conn.execute(f"PRAGMA busy_timeout = {seconds * 1000}")
            self._busy = seconds

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: the statements of one read see one state of the file."""
        self.busy_timeout(BUSY_TIMEOUT_SECONDS)
        self.conn.execute("BEGIN")
        try:
            with full_disk_raises(self.path):
                yield self.conn
        finally:
            self.conn.execute("COMMIT")

    def group(
        self, jobs: list[Callable[[], Any]], *, wait: bool = True
    ) -> list[tuple[bool, Any] | None]:
        """Run write jobs in one transaction; if one fails, run them again one at a time.

        Returns ``(True, result)`` or ``(False, exception)`` per job, in order, or None for a
        job that did not run because another connection held the write lock and ``wait`` was
        False. With ``wait=False`` nothing here waits: not for a lock (busy timeout 0), nor for
        the disk (no fsync with ``synchronous=NORMAL``; WAL checkpoints run on their own
        thread), so an event loop may call it.
        """
        began = False
        try:
            with self.tx(wait=wait):
                began = True
                return [(True, job()) for job in jobs]
        except sqlite3.OperationalError as exc:
            if not began:
                if wait:
                    return [(False, exc)] * len(jobs)
                return [None] * len(jobs)
            error: Exception = exc
        except Exception as exc:
            error = exc
        if len(jobs) == 1:
            return [(False, error)]
        return [outcome for job in jobs for outcome in self.group([job], wait=wait)]

    def fence(self, thread_id: str, owner: str | None) -> None:
        """Refuse a lease holder's write once its lease is gone (``ai_agent.checkpoints.fencing``).

        Runs inside the write's own transaction, which holds the file's write lock: no takeover
        can commit between this check and the write. An in-memory database is private to its
        connection (the run store has its own, with the leases), and to its process: no other
        process can take a thread over, so there is nothing to fence.
        """
        if owner is not None and self.path != ":memory:":
            check_lease(self.conn.execute(LEASE_ROW_SQL, (thread_id,)).fetchone(), thread_id, owner)

    # What the store remembers ----------------------------------------------------------------
    def _distrust(self) -> None:
        """Another connection committed: forget facts it may have changed (ids, lengths, texts)."""
        self.unmerged.clear()
        self.bases.clear()
        self.tips.clear()
        self.next_value.clear()
        self._texts_known.clear()

    def reset(self) -> None:
        """Forget everything cached (after a rollback, or a change made behind our back)."""
        self._threads.clear()
        self._caches.clear()
        self.bases.clear()
        self.tips.clear()
        self.unmerged.clear()
        self.next_value.clear()
        self._texts_known.clear()
        self._data_version = None

    def thread_key(self, thread_id: str, ns: str, *, create: bool) -> int | None:
        """The integer key of a (thread, namespace); created when asked and missing."""
        key = (thread_id, ns)
        found = self._threads.get(key)
        if found is not None and (self.trusted or not self.conn.in_transaction):
            return found
        row = self.conn.execute(
            "SELECT id FROM delta_threads WHERE thread_id = ? AND checkpoint_ns = ?", key
        ).fetchone()
        if row is None:
            if not create:
                self._threads.pop(key, None)
                return None
            row = (
                self.conn.execute(
                    "INSERT INTO delta_threads (thread_id, checkpoint_ns) VALUES (?, ?)", key
                ).lastrowid,
            )
        if found is not None and found != row[0]:  # deleted and re-created elsewhere
            self._caches.pop(found, None)
        self._threads[key] = int(row[0])
        return int(row[0])

    def cache(self, tkey: int) -> ThreadCache:
        """The cache of one thread key (least recently used ones are dropped)."""
        cache = self._caches.get(tkey)
        if cache is None:
            cache = self._caches[tkey] = ThreadCache()
            while len(self._caches) > self.cache_threads:
                self._caches.popitem(last=False)
        else:
            self._caches.move_to_end(tkey)
        return cache

    def cached_thread(self, thread_id: str, ns: str) -> ThreadCache | None:
        """The cache of a (thread, namespace) if it has one, without touching the database.

        Safe from any thread: two dictionary lookups, and the worker replaces what they find
        rather than changing it.
        """
        tkey = self._threads.get((thread_id, ns))
        return None if tkey is None else self._caches.get(tkey)

    def cached(self, tkey: int) -> ThreadCache | None:
        """The cache of one thread key if it has one (without making it the most recent)."""
        return self._caches.get(tkey)

    def forget_thread(self, thread_id: str) -> None:
        """Drop what is cached about a thread (it was deleted or rewritten)."""
        for key in [k for k in self._threads if k[0] == thread_id]:
            self._caches.pop(self._threads.pop(key), None)

    def forget_lineage(self, lineage: int) -> None:
        """Drop what is cached about a list lineage (it was deleted or truncated)."""
        self.bases.pop(lineage, None)
        self.tips.pop(lineage, None)
        self.unmerged.pop(lineage, None)

    # Values as rows store them, large texts taken out (``_texts``) ----------------------------
    def loads(self, type_: str, blob: bytes) -> Any:
        """Deserialize one stored value (its texts, if it names any, left as marks)."""
        return self.serde.loads_typed((type_, blob))

    def pack(self, value: Any) -> tuple[str, bytes, _texts.Cut | None]:
        """Serialize a value for a row, its large texts taken out (and returned to be saved).

        The fast path, for nearly every value: serialized, it is shorter than a large text, or
        holds no msgpack header of one, so it is stored as it is.
        """
        type_, blob = self.serde.dumps_typed(value)
        if len(blob) < _texts.TEXT_MIN_BYTES:
            return type_, blob, None
        if type_ != "bytes" and not (type_ == "msgpack" and _texts.may_hold_large_text(blob)):
            return type_, blob, None
        done = _texts.cut(value)
        if not done.texts:
            return type_, blob, None
        type_, blob = self.serde.dumps_typed(done.value)
        return type_, blob, done

    def unpack(
        self, type_: str, blob: bytes, texts: str | None, found: dict[str, bytes] | None = None
    ) -> Any:
        """Deserialize one stored value, with the texts its row names put back.

        Args:
            type_: The row's type.
            blob: The row's bytes.
            texts: The row's ``texts`` column.
            found: Texts already read by this call (a checkpoint names one text many times).
        """
        value = self.loads(type_, blob)
        if texts is None:
            return value
        return _texts.paste(value, self.texts(_texts.listed(texts), found))

    def texts(self, hashes: list[str], found: dict[str, bytes] | None = None) -> dict[str, bytes]:
        """The bodies of these texts, read once per ``found``."""
        found = {} if found is None else found
        missing = [h for h in hashes if h not in found]
        if missing:
            found.update(_texts.fetch(self.conn.execute, missing))
        return found

    def save_texts(self, texts: Mapping[str, bytes]) -> None:
        """Store the texts a write names (inside its transaction); known ones are skipped."""
        new = {h: body for h, body in texts.items() if h not in self._texts_known}
        if new:
            _texts.save(self.conn.execute, new)
            self._texts_known.update(new)

    def sweep_texts(self) -> int:
        """Delete the texts no row of the file names any more (after deleting rows)."""
        self._texts_known.clear()
        execute = self.conn.execute
        return _texts.sweep(execute, _texts.sqlite_owners(execute))

    def size(self) -> int:
        """Bytes of the database file plus its WAL."""
        if self.path == ":memory:":
            page_size = self.conn.execute("PRAGMA page_size").fetchone()[0]
            return int(page_size * self.conn.execute("PRAGMA page_count").fetchone()[0])
        files = (Path(self.path), Path(self.path + "-wal"))
        return sum(p.stat().st_size for p in files if p.exists())


def remember(cache: ThreadCache, checkpoint_id: str, skel: Skeleton) -> None:
    """Keep the newest skeletons, and only the held values they can still reach."""
    cache.skeletons[checkpoint_id] = skel
    cache.skeletons.move_to_end(checkpoint_id)
    while len(cache.skeletons) > _SKELETON_CACHE:
        cache.skeletons.popitem(last=False)
    if len(cache.held) > 2 * len(skel.refs):
        live = {r for s in cache.skeletons.values() for r in s.refs.values()}
        cache.held = {r: h for r, h in cache.held.items() if r in live}


def _connect(path: str) -> sqlite3.Connection:
    """Open the database the way the saver needs it, creating or upgrading its tables."""
    try:
        # Used by the worker thread and by an event loop's fast path, never at the same time:
        # DeltaSaver serializes them with one lock.
        conn = sqlite3.connect(
            path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False
        )
    except sqlite3.Error as exc:  # pragma: no cover - an unopenable path
        raise StoreError(f"cannot open the checkpoint database at {path}: {exc}") from None
    try:
        if conn.execute("PRAGMA page_count").fetchone()[0] == 0:
            # Only possible before the first table exists: lets a prune shrink the file.
            conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
        enter_wal(conn, within=BUSY_TIMEOUT_SECONDS)
        # WAL + NORMAL: a commit is in the WAL before it returns, so it survives a crash of this
        # process, and commits stay in order; only an OS crash or power cut can lose the newest
        # ones. FULL would add an fsync to every step (about 3.5 ms on this kind of disk).
        conn.execute("PRAGMA synchronous = NORMAL")
        with full_disk_raises(path):
            create_or_migrate(conn, where=path)
    except sqlite3.DatabaseError as exc:
        conn.close()
        if is_busy(exc):
            raise StoreError(
                f"cannot open the checkpoint database at {path}: {locked_too_long()}"
            ) from None
        raise StoreError(
            f"{path} is not a usable checkpoint database ({exc}); point --db at another file"
        ) from None
    except BaseException:
        conn.close()
        raise
    return conn
