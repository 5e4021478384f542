"""The delta checkpointer's storage engine: the SQLite statements it runs, on one thread.

`DeltaStore` is not thread-safe on purpose: `ai_agent.checkpoints.delta.DeltaSaver`
owns one and calls it only from its single worker thread, so the connection, the caches and the
transactions never need a lock. The storage format is drawn in the ``delta`` module's docstring;
this module reads and writes it. Pruning, copying and deleting runs live in ``_maintenance``.

Why the caches can be trusted: every write transaction first reads ``PRAGMA data_version``,
which changes only when *another* connection committed since this one last looked. While it
is unchanged, nothing but this store wrote the file, so what it remembers (thread keys, the next
free ids, the length of each list lineage, which checkpoints exist) is still exactly true and a
step costs a handful of statements. When it changed, those facts are read again. A rollback
drops every cache, since SQLite hands the ids of rolled-back rows out again.
"""

from __future__ import annotations

import json
import operator
import re
import sqlite3
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    PendingWrite,
    get_checkpoint_metadata,
    writes_sort_key,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from ai_agent.checkpoints import _texts
from ai_agent.checkpoints._identity import same_prefix
from ai_agent.checkpoints._schema import create_or_migrate
from ai_agent.checkpoints._sqlite import full_disk_raises
from ai_agent.checkpoints.fencing import LEASE_ROW_SQL, check_lease, lease_in
from ai_agent.errors import CorruptRunError, StoreError

__all__ = ["DeltaStore", "ReadMemo", "Ref", "Skeleton", "WritesJob", "is_view"]

BUSY_TIMEOUT_SECONDS = 30

Ref = int | tuple[Any, Any]
"""Where a channel's value is, as a skeleton names it (format 2 added the two tuples).

- ``int``: the id of a ``delta_values`` row (``EMPTY``: the channel has no value);
- ``(lineage, length)``: a list, the first ``length`` items of a lineage;
- ``(type, bytes)``: a small value, serialized, kept in the skeleton itself.

The tuples save a row per changed channel and step: most steps change a few small scalars and
grow a list or two, and each row is one more statement and one more page in the commit.
"""

EMPTY = 0
"""The value reference of a channel that has a version but no value (LangGraph's "empty")."""

INLINE_MAX_BYTES = 256
"""Values that serialize to at most this many bytes are kept in the skeleton (a full skeleton,
written every 32 steps, repeats them, so this stays small). A value that names a large text is
never inline: its row must say so (``texts``)."""

MAX_DIFF_DEPTH = 31
"""A checkpoint's skeleton is stored in full after this many diffs in a row (bounded reads)."""

MERGE_AT = 32
"""Small segments of a lineage are merged into one chunk when this many have accumulated."""

LINEAGE_MIN_ITEMS = 8
"""Lists shorter than this are stored whole (a lineage would cost more rows than it saves)."""

REUSE_MAX_BYTES = 4096
"""Full values up to this size stay serialized in the cache, so an unchanged one is reused."""

_SKELETON_CACHE = 4
_MAX_LINEAGE_FACTS = 1 << 16
_FILTER_KEY = re.compile(r"^[a-zA-Z0-9_.-]+$")
_CHAIN_SQL = """
WITH RECURSIVE chain(checkpoint_id, parent_id, full, depth, skeleton, texts, n) AS (
    SELECT checkpoint_id, parent_id, full, depth, skeleton, texts, 0
    FROM delta_checkpoints WHERE thread = ?1 AND checkpoint_id = ?2
    UNION ALL
    SELECT c.checkpoint_id, c.parent_id, c.full, c.depth, c.skeleton, c.texts, chain.n + 1
    FROM delta_checkpoints AS c JOIN chain ON c.thread = ?1 AND c.checkpoint_id = chain.parent_id
    WHERE chain.full = 0
)
SELECT checkpoint_id, full, depth, skeleton, texts FROM chain ORDER BY n
"""

Packed = tuple[str, bytes, str | None]
"""A value as a row stores it: its type, its bytes, and the texts they name (``_texts``).

Two packed values are the same value only if all three are equal: the bytes of a value whose
texts were taken out can equal the bytes of a small value that merely holds a string that looks
like a mark (and is not one, since its row names no texts).
"""


@dataclass(slots=True)
class Skeleton:
    """A checkpoint without its values, as its rows describe it once the diffs are applied.

    Attributes:
        versions: ``channel_versions``.
        seen: ``versions_seen``.
        refs: Channel -> where its value is (see `Ref`).
        extra: Every other key of the checkpoint (``v``, ``id``, ``ts``, ``updated_channels``).
        depth: Diffs since the last full skeleton on this checkpoint's parent chain.
    """

    versions: dict[str, Any]
    seen: dict[str, dict[str, Any]]
    refs: dict[str, Ref]
    extra: dict[str, Any]
    depth: int = 0


@dataclass(slots=True)
class _Held:
    """What this process knows of one stored value: enough to reuse or extend it unread.

    ``items`` holds the very objects that were stored or handed out (list values), so "the new
    list starts with the old one" is a pointer comparison instead of a comparison of contents.
    ``blob`` is a small value as it was stored, so an unchanged one is recognised by its bytes.
    """

    lineage: int | None
    length: int
    items: list[Any] | None = None
    blob: Packed | None = None


@dataclass(slots=True)
class _ThreadCache:
    skeletons: OrderedDict[str, Skeleton] = field(default_factory=OrderedDict)
    held: dict[Ref, _Held] = field(default_factory=dict)


@dataclass(slots=True)
class ReadMemo:
    """Decoded data shared by the checkpoints of one ``list`` call (they overlap heavily)."""

    skeletons: OrderedDict[tuple[int, str], Skeleton] = field(default_factory=OrderedDict)
    values: dict[tuple[int, Ref], Any] = field(default_factory=dict)
    lineages: dict[int, list[Any]] = field(default_factory=dict)
    texts: dict[str, bytes] = field(default_factory=dict)


@dataclass(slots=True)
class _Batch:
    """Rows of one ``put``, inserted together at its end (one statement per table)."""

    values: list[tuple[Any, ...]] = field(default_factory=list)
    segments: list[tuple[Any, ...]] = field(default_factory=list)
    merges: list[int] = field(default_factory=list)
    texts: dict[str, bytes] = field(default_factory=dict)

    def named(self, done: _texts.Cut | None) -> str | None:
        """Keep the texts a packed value names for this put; returns its ``texts`` column."""
        if done is None:
            return None
        self.texts.update(done.texts)
        return _texts.texts_column(done.hashes)


@dataclass(frozen=True, slots=True)
class WritesJob:
    """One ``put_writes`` call, serialized and ready to store."""

    thread_id: str
    ns: str
    checkpoint_id: str
    task_id: str
    task_path: str
    entries: list[list[Any]]
    replace: bool
    lease: str | None = None
    texts: dict[str, bytes] = field(default_factory=dict)


def _conf(config: RunnableConfig) -> dict[str, Any]:
    return config["configurable"]


def tuple_config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    """The config LangGraph expects for one stored checkpoint."""
    conf = {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}
    return {"configurable": conf}


class DeltaStore:
    """The delta checkpointer's tables behind a small API; one thread at a time.

    Args:
        path: The SQLite file (created if missing), or ``":memory:"``.
        serde: The serializer for every value (strict: only allowlisted types load).
        cache_threads: Threads whose newest checkpoints stay cached for cheap appends.
    """

    def __init__(
        self, path: str | Path, serde: SerializerProtocol, *, cache_threads: int = 256
    ) -> None:
        self.path = str(path)
        self.serde = serde
        self.cache_threads = max(1, cache_threads)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.conn = _connect(self.path)
        self._threads: dict[tuple[str, str], int] = {}
        self._caches: OrderedDict[int, _ThreadCache] = OrderedDict()
        self._lineages: dict[int, tuple[int | None, int]] = {}
        self._tips: dict[int, int] = {}
        self._small: dict[int, int] = {}
        self._next_value: dict[int, int] = {}
        self._texts_known: set[str] = set()
        self._data_version: int | None = None
        self._trusted = False
        self._busy = BUSY_TIMEOUT_SECONDS
        self.on_commit: Callable[[], None] | None = None
        self.legacy_skipped: list[str] = []
        """Threads of an old SqliteSaver database that could not be imported (``_legacy``)."""

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    # Plumbing ------------------------------------------------------------------------------
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
                self._trusted = version == self._data_version
                if (
                    not self._trusted
                    or len(self._tips) + len(self._texts_known) > _MAX_LINEAGE_FACTS
                ):
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

    def _distrust(self) -> None:
        """Another connection committed: forget facts it may have changed (ids, lengths, texts)."""
        self._small.clear()
        self._lineages.clear()
        self._tips.clear()
        self._next_value.clear()
        self._texts_known.clear()

    def reset(self) -> None:
        """Forget everything cached (after a rollback, or a change made behind our back)."""
        self._threads.clear()
        self._caches.clear()
        self._lineages.clear()
        self._tips.clear()
        self._small.clear()
        self._next_value.clear()
        self._texts_known.clear()
        self._data_version = None

    def thread_key(self, thread_id: str, ns: str, *, create: bool) -> int | None:
        """The integer key of a (thread, namespace); created when asked and missing."""
        key = (thread_id, ns)
        found = self._threads.get(key)
        if found is not None and (self._trusted or not self.conn.in_transaction):
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

    def cache(self, tkey: int) -> _ThreadCache:
        """The cache of one thread key (least recently used ones are dropped)."""
        cache = self._caches.get(tkey)
        if cache is None:
            cache = self._caches[tkey] = _ThreadCache()
            while len(self._caches) > self.cache_threads:
                self._caches.popitem(last=False)
        else:
            self._caches.move_to_end(tkey)
        return cache

    def forget_thread(self, thread_id: str) -> None:
        """Drop what is cached about a thread (it was deleted or rewritten)."""
        for key in [k for k in self._threads if k[0] == thread_id]:
            self._caches.pop(self._threads.pop(key), None)

    def forget_lineage(self, lineage: int) -> None:
        """Drop what is cached about a list lineage (it was deleted or truncated)."""
        self._lineages.pop(lineage, None)
        self._tips.pop(lineage, None)
        self._small.pop(lineage, None)

    def loads(self, type_: str, blob: bytes) -> Any:
        """Deserialize one stored value (its texts, if it names any, left as marks)."""
        return self.serde.loads_typed((type_, blob))

    # Large texts (see ``_texts``) ----------------------------------------------------------
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

    # Skeletons -----------------------------------------------------------------------------
    def skeleton(self, tkey: int, checkpoint_id: str, memo: ReadMemo | None = None) -> Skeleton:
        """The skeleton of one checkpoint: its last full row plus the diffs after it."""
        cache = self._caches.get(tkey)
        if cache is not None and checkpoint_id in cache.skeletons:
            return cache.skeletons[checkpoint_id]
        if memo is not None and (tkey, checkpoint_id) in memo.skeletons:
            return memo.skeletons[(tkey, checkpoint_id)]
        rows = self.conn.execute(_CHAIN_SQL, (tkey, checkpoint_id)).fetchall()
        if not rows or not rows[-1][1]:
            raise StoreError(
                f"checkpoint {checkpoint_id} or a row it is stored against is missing; "
                "the database was changed by something other than ai-agent"
            )
        skel: Skeleton | None = None
        found = memo.texts if memo is not None else None
        for cid, full, depth, blob, texts in reversed(rows):
            data = self.unpack("msgpack", blob, texts, found)
            skel = from_full(data, depth) if full else apply_diff(cast(Skeleton, skel), data, depth)
            skel.extra["id"] = cid
            if memo is not None:
                memo.skeletons[(tkey, cid)] = skel
                if len(memo.skeletons) > 4 * MAX_DIFF_DEPTH:
                    memo.skeletons.popitem(last=False)
        return cast(Skeleton, skel)

    def rewrite_full(self, tkey: int, checkpoint_id: str, skel: Skeleton) -> None:
        """Store a checkpoint's skeleton in full, so it no longer depends on its parent."""
        _, blob, done = self.pack(full_form(skel))
        if done is not None:
            self.save_texts(done.texts)
        self.conn.execute(
            "UPDATE delta_checkpoints SET full = 1, depth = 0, skeleton = ?, texts = ? "
            "WHERE thread = ? AND checkpoint_id = ?",
            (blob, _texts.texts_column(done.hashes) if done else None, tkey, checkpoint_id),
        )
        cache = self._caches.get(tkey)
        if cache is not None and checkpoint_id in cache.skeletons:
            cache.skeletons[checkpoint_id].depth = 0

    # Reading values ------------------------------------------------------------------------
    def lineage(self, lineage: int) -> tuple[int | None, int]:
        """(base lineage, base length) of a list lineage."""
        found = self._lineages.get(lineage)
        if found is None:
            row = self.conn.execute(
                "SELECT base, base_length FROM delta_lineages WHERE id = ?", (lineage,)
            ).fetchone()
            if row is None:
                raise StoreError(f"list lineage {lineage} is missing from the checkpoint database")
            found = self._lineages[lineage] = (row[0], int(row[1]))
        return found

    def _pieces(self, lineage: int, length: int) -> list[tuple[int, int]]:
        """(lineage, end) pieces whose segments make up the first ``length`` items, oldest first.

        A forked lineage holds only what came after the fork; the items before it are read from
        the lineage it forked from (and so on down).
        """
        pieces: list[tuple[int, int]] = []
        current: int | None = lineage
        end = length
        while current is not None:
            pieces.append((current, end))
            base, base_length = self.lineage(current)
            current, end = (base, min(base_length, end)) if base is not None else (None, 0)
            if end == 0:
                current = None
        pieces.reverse()
        return pieces

    def read_items(self, lineage: int, length: int, memo: ReadMemo | None = None) -> list[Any]:
        """The first ``length`` items of a list lineage."""
        if memo is not None:
            known = memo.lineages.get(lineage)
            if known is not None and len(known) >= length:
                return known[:length]
        items: list[Any] = []
        found = memo.texts if memo is not None else None
        for piece, end in self._pieces(lineage, length):
            rows = self.conn.execute(
                "SELECT type, items, texts FROM delta_segments "
                "WHERE lineage = ? AND start < ? ORDER BY start",
                (piece, end),
            ).fetchall()
            for type_, blob, texts in rows:
                items.extend(self.unpack(type_, blob, texts, found))
            del items[end:]  # a merged chunk may run past the point a fork left its base
        if len(items) != length:
            raise StoreError(
                f"list lineage {lineage} holds {len(items)} items where {length} were stored; "
                "the checkpoint database was changed by something other than ai-agent"
            )
        if memo is not None:
            memo.lineages[lineage] = items
            return items[:length]
        return items

    def read_values(
        self, tkey: int, refs: Mapping[str, Ref], memo: ReadMemo | None = None
    ) -> tuple[dict[str, Any], dict[Ref, _Held]]:
        """Channel values for a refs map, and what was learnt about them (for the cache)."""
        wanted = sorted({r for r in refs.values() if type(r) is int and r != EMPTY})
        if memo is not None:
            wanted = [r for r in wanted if (tkey, r) not in memo.values]
        rows = self._value_rows(tkey, wanted)
        found = memo.texts if memo is not None else {}
        values: dict[str, Any] = {}
        held: dict[Ref, _Held] = {}
        for channel, ref in refs.items():
            if isinstance(ref, tuple):
                values[channel] = self._read_inline(ref, held, memo)
                continue
            if ref == EMPTY:
                continue
            if memo is not None and (tkey, ref) in memo.values:
                values[channel] = _fresh(memo.values[(tkey, ref)])
                continue
            row = rows.get(ref)
            if row is None:
                raise StoreError(f"stored value {ref} of channel {channel!r} is missing")
            type_, blob, lineage, length, texts = row
            if lineage is not None:
                items = self.read_items(int(lineage), int(length), memo)
                values[channel] = items
                held[ref] = _Held(int(lineage), int(length), items)
            else:
                value = self.unpack(type_, blob, texts, found)
                values[channel] = value
                small = len(blob or b"") <= REUSE_MAX_BYTES
                held[ref] = _Held(None, 0, None, (type_, blob, texts) if small else None)
                if memo is not None:
                    memo.values[(tkey, ref)] = value
        return values, held

    def _value_rows(self, tkey: int, wanted: list[int]) -> dict[int, tuple[Any, ...]]:
        """Value rows by id: (type, value, lineage, length, texts)."""
        rows: dict[int, tuple[Any, ...]] = {}
        for i in range(0, len(wanted), 500):
            chunk = wanted[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for row in self.conn.execute(
                "SELECT id, type, value, lineage, length, texts FROM delta_values "  # noqa: S608 - placeholders only
                f"WHERE thread = ? AND id IN ({marks})",
                [tkey, *chunk],
            ):
                rows[int(row[0])] = row[1:]
        return rows

    def _read_inline(
        self, ref: tuple[Any, Any], held: dict[Ref, _Held], memo: ReadMemo | None
    ) -> Any:
        """The value of a reference that needs no value row: a list view or a small value."""
        if type(ref[0]) is int:
            items = self.read_items(ref[0], ref[1], memo)
            held[ref] = _Held(ref[0], ref[1], items)
            return items
        return self.loads(ref[0], ref[1])  # never names a text (see INLINE_MAX_BYTES)

    def pending_writes(self, tkey: int, checkpoint_id: str) -> list[PendingWrite]:
        """The writes stored against one checkpoint, in ``writes_sort_key`` order."""
        rows = self.conn.execute(
            "SELECT task_id, task_path, writes FROM delta_writes "
            "WHERE thread = ? AND checkpoint_id = ?",
            (tkey, checkpoint_id),
        ).fetchall()
        found: list[tuple[tuple[str, str, int], PendingWrite]] = []
        bodies: dict[str, bytes] = {}
        for task_id, task_path, blob in rows:
            for entry in self.loads("msgpack", blob):
                idx, channel, type_, data = entry[:4]
                texts = _texts.texts_column(entry[4]) if len(entry) > 4 else None
                key = writes_sort_key(task_path, task_id, idx)
                found.append((key, (task_id, channel, self.unpack(type_, data, texts, bodies))))
        found.sort(key=operator.itemgetter(0))
        return [w for _, w in found]

    # The saver API: reading ----------------------------------------------------------------
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """``BaseCheckpointSaver.get_tuple``."""
        conf = _conf(config)
        thread_id, ns = str(conf["thread_id"]), str(conf.get("checkpoint_ns", ""))
        checkpoint_id = conf.get("checkpoint_id")
        with self.snapshot():
            tkey = self.thread_key(thread_id, ns, create=False)
            if tkey is None:
                return None
            if checkpoint_id:
                row = self.conn.execute(
                    "SELECT checkpoint_id, parent_id, metadata FROM delta_checkpoints "
                    "WHERE thread = ? AND checkpoint_id = ?",
                    (tkey, checkpoint_id),
                ).fetchone()
            else:
                row = self.conn.execute(
                    "SELECT checkpoint_id, parent_id, metadata FROM delta_checkpoints "
                    "WHERE thread = ? ORDER BY checkpoint_id DESC LIMIT 1",
                    (tkey,),
                ).fetchone()
            if row is None:
                return None
            cid, parent_id, metadata = row
            with readable(thread_id, cid, parent_id):
                skel = self.skeleton(tkey, cid)
                values, held = self.read_values(tkey, skel.refs)
                writes = self.pending_writes(tkey, cid)
                meta = cast(CheckpointMetadata, json.loads(metadata))
        # Remember what was handed out: a graph resumes from these very objects, so its next
        # append is recognised by identity instead of by re-reading and comparing the list.
        cache = self.cache(tkey)
        cache.held.update(held)
        _remember(cache, cid, skel)
        return CheckpointTuple(
            config if checkpoint_id else tuple_config(thread_id, ns, cid),
            _checkpoint(skel, values),
            meta,
            tuple_config(thread_id, ns, parent_id) if parent_id else None,
            writes,
        )

    def list_page(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int,
        after: tuple[str, int] | None,
        memo: ReadMemo,
    ) -> list[tuple[CheckpointTuple, tuple[str, int]]]:
        """One page of ``list``: at most ``limit`` tuples after the key ``after``, newest first."""
        where, params = _search_where(config, filter, before)
        if after is not None:
            where.append("(c.checkpoint_id, c.thread) < (?, ?)")
            params.extend(after)
        sql = (
            "SELECT c.thread, t.thread_id, t.checkpoint_ns, c.checkpoint_id, c.parent_id, "  # noqa: S608 - fixed text and placeholders
            "c.metadata FROM delta_checkpoints AS c JOIN delta_threads AS t ON t.id = c.thread"
            + (" WHERE " + " AND ".join(where) if where else "")
            + " ORDER BY c.checkpoint_id DESC, c.thread DESC LIMIT ?"
        )
        page: list[tuple[CheckpointTuple, tuple[str, int]]] = []
        with self.snapshot():
            rows = self.conn.execute(sql, [*params, limit]).fetchall()
            for tkey, thread_id, ns, cid, parent_id, metadata in rows:
                with readable(thread_id, cid, parent_id):
                    skel = self.skeleton(tkey, cid, memo)
                    values, _ = self.read_values(tkey, skel.refs, memo)
                    item = CheckpointTuple(
                        tuple_config(thread_id, ns, cid),
                        _checkpoint(skel, values),
                        cast(CheckpointMetadata, json.loads(metadata)),
                        tuple_config(thread_id, ns, parent_id) if parent_id else None,
                        self.pending_writes(tkey, cid),
                    )
                page.append((item, (cid, tkey)))
        return page

    # The saver API: writing ----------------------------------------------------------------
    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """``BaseCheckpointSaver.put``: store what changed since the parent checkpoint."""
        with self.tx():
            return self.put_in_tx(config, checkpoint, metadata, new_versions)

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

    def put_in_tx(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """The work of ``put`` inside a write transaction the caller holds."""
        conf = _conf(config)
        thread_id, ns = str(conf["thread_id"]), str(conf.get("checkpoint_ns", ""))
        self.fence(thread_id, lease_in(config))
        parent_id: str | None = conf.get("checkpoint_id") or None
        meta = json.dumps(get_checkpoint_metadata(config, metadata), ensure_ascii=False)
        meta = meta.encode("utf-8", "ignore").decode("utf-8")
        tkey = cast(int, self.thread_key(thread_id, ns, create=True))
        cache = self.cache(tkey)
        parent = self._parent(tkey, cache, parent_id)
        batch = _Batch()
        skel = self._skeleton_of(tkey, cache, batch, checkpoint, new_versions, parent)
        if batch.values:
            self.conn.executemany(
                "INSERT INTO delta_values (thread, id, type, value, lineage, length, texts) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                batch.values,
            )
        if batch.segments:
            self.conn.executemany(
                "INSERT INTO delta_segments (lineage, start, count, merged, type, items, texts) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                batch.segments,
            )
        for lineage in batch.merges:
            self._merge(lineage)
        cid = checkpoint["id"]
        if parent is not None and parent.depth < MAX_DIFF_DEPTH:
            skel.depth, full, form = parent.depth + 1, 0, diff_form(parent, skel)
        else:
            skel.depth, full, form = 0, 1, full_form(skel)
        _, blob, done = self.pack(form)
        texts = batch.named(done)
        if batch.texts:
            self.save_texts(batch.texts)
        row = (tkey, cid, parent_id, full, skel.depth, blob, meta, texts)
        sql = (
            "INTO delta_checkpoints (thread, checkpoint_id, parent_id, full, depth, skeleton, "
            "metadata, texts) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        )
        try:
            self.conn.execute("INSERT " + sql, row)
        except sqlite3.IntegrityError:  # the same id put again: it replaces the first
            self._detach_children(tkey, cid)
            self.conn.execute("INSERT OR REPLACE " + sql, row)
        _remember(cache, cid, skel)
        return tuple_config(thread_id, ns, cid)

    def _parent(self, tkey: int, cache: _ThreadCache, parent_id: str | None) -> Skeleton | None:
        """The parent's skeleton, or None when there is no parent row to diff against."""
        if not parent_id:
            return None
        if self._trusted and parent_id in cache.skeletons:
            return cache.skeletons[parent_id]
        exists = self.conn.execute(
            "SELECT 1 FROM delta_checkpoints WHERE thread = ? AND checkpoint_id = ?",
            (tkey, parent_id),
        ).fetchone()
        return self.skeleton(tkey, parent_id) if exists else None

    def _skeleton_of(
        self,
        tkey: int,
        cache: _ThreadCache,
        batch: _Batch,
        checkpoint: Checkpoint,
        new_versions: ChannelVersions,
        parent: Skeleton | None,
    ) -> Skeleton:
        """The new checkpoint's skeleton; values that changed are stored on the way."""
        versions = dict(checkpoint["channel_versions"])
        values = checkpoint["channel_values"]
        old_versions = parent.versions if parent is not None else {}
        old_refs = parent.refs if parent is not None else {}
        refs = {ch: r for ch, r in old_refs.items() if ch in versions}
        changed = [
            ch
            for ch, v in versions.items()
            if ch in new_versions or ch not in old_refs or old_versions.get(ch) != v
        ]
        changed += [ch for ch in values if ch not in versions]
        for ch in changed:
            if ch not in values:
                refs[ch] = EMPTY
            else:
                refs[ch] = self._store_value(tkey, cache, batch, values[ch], old_refs.get(ch))
        extra = {
            k: v
            for k, v in checkpoint.items()
            if k not in ("channel_values", "channel_versions", "versions_seen")
        }
        # A step changes what one or two nodes have seen: the parent's dicts serve the rest
        # (skeletons never change a dict in place), so fewer objects outlive the step.
        old_seen = parent.seen if parent is not None else {}
        seen: dict[str, dict[str, Any]] = {}
        for node, vs in checkpoint["versions_seen"].items():
            known = old_seen.get(node)
            seen[node] = known if known == vs else dict(vs)
        return Skeleton(versions, seen, refs, extra)

    def _detach_children(self, tkey: int, checkpoint_id: str) -> None:
        """Store the children of a checkpoint about to be replaced in full (they diff on it)."""
        children = self.conn.execute(
            "SELECT checkpoint_id FROM delta_checkpoints "
            "WHERE thread = ? AND parent_id = ? AND full = 0",
            (tkey, checkpoint_id),
        ).fetchall()
        for (child,) in children:
            self.rewrite_full(tkey, child, self.skeleton(tkey, child))
        self.cache(tkey).skeletons.pop(checkpoint_id, None)

    # Storing values ------------------------------------------------------------------------
    def _value_id(self, tkey: int) -> int:
        """The next free value id of a thread (ids are per thread: rows cluster by thread)."""
        ref = self._next_value.get(tkey)
        if ref is None:
            row = self.conn.execute(
                "SELECT max(id) FROM delta_values WHERE thread = ?", (tkey,)
            ).fetchone()
            ref = int(row[0] or 0) + 1
        self._next_value[tkey] = ref + 1
        return ref

    def _held(self, tkey: int, cache: _ThreadCache, ref: Ref) -> _Held | None:
        found = cache.held.get(ref)
        if found is not None:
            return found
        if type(ref) is tuple:  # the reference says it all (only a list's items are unknown)
            if type(ref[0]) is int:
                return _Held(ref[0], ref[1])
            return _Held(None, 0, None, (ref[0], ref[1], None))
        row = self.conn.execute(
            "SELECT type, value, lineage, length, texts FROM delta_values "
            "WHERE thread = ? AND id = ?",
            (tkey, ref),
        ).fetchone()
        if row is None:
            return None
        if row[2] is not None:
            return _Held(int(row[2]), int(row[3]))
        small = len(row[1] or b"") <= REUSE_MAX_BYTES
        return _Held(None, 0, None, (row[0], row[1], row[4]) if small else None)

    def _store_value(
        self, tkey: int, cache: _ThreadCache, batch: _Batch, value: Any, prev_ref: Ref | None
    ) -> Ref:
        """Store one channel value, or reuse or extend the previous one; returns its reference."""
        prev = self._held(tkey, cache, prev_ref) if prev_ref else None
        if type(value) is list:
            if (
                prev is not None
                and prev.lineage is not None
                and len(value) >= prev.length
                and self._extends(prev, value)
            ):
                if len(value) > prev.length:
                    return self._append(tkey, cache, batch, prev, value)
                if prev.items is None:  # vouched for by the stored bytes: hold it from now on
                    cache.held[cast(Ref, prev_ref)] = _Held(prev.lineage, prev.length, value)
                return cast(Ref, prev_ref)
            if len(value) >= LINEAGE_MIN_ITEMS or (
                value and prev is not None and prev.lineage is not None
            ):
                return self._new_lineage(tkey, cache, batch, value, None, 0)
        type_, blob, done = self.pack(value)
        texts = None if done is None else _texts.texts_column(done.hashes)
        packed = (type_, blob, texts)
        if prev is not None and prev.blob is not None and prev.blob == packed:
            return cast(Ref, prev_ref)
        if texts is None and len(blob) <= INLINE_MAX_BYTES:
            return (type_, blob)
        ref = self._value_id(tkey)
        batch.values.append((tkey, ref, type_, blob, None, None, batch.named(done)))
        cache.held[ref] = _Held(None, 0, None, packed if len(blob) <= REUSE_MAX_BYTES else None)
        return ref

    def _extends(self, prev: _Held, value: list[Any]) -> bool:
        """Whether ``value`` starts with exactly the items stored for ``prev``."""
        if prev.items is not None and len(prev.items) == prev.length:
            # The very objects stored (or handed out) for this value: a pointer comparison.
            # (A length that changed means someone appended to that list in place; then only
            # the stored bytes can tell.)
            if same_prefix(prev.items, value, prev.length):
                return True
            dumps = self.serde.dumps_typed
            return all(
                a is b or dumps(a) == dumps(b) for a, b in zip(prev.items, value, strict=False)
            )
        return self._matches_stored(cast(int, prev.lineage), prev.length, value)

    def _matches_stored(self, lineage: int, length: int, value: list[Any]) -> bool:
        """Compare a prefix with the stored bytes, one encode per segment (a cold cache)."""
        for piece, end in self._pieces(lineage, length):
            rows = self.conn.execute(
                "SELECT start, count, type, items, texts FROM delta_segments "
                "WHERE lineage = ? AND start < ? ORDER BY start",
                (piece, end),
            ).fetchall()
            for start, count, type_, blob, texts in rows:
                if start + count <= end:
                    if self._packed(value[start : start + count], texts) != (type_, blob, texts):
                        return False
                else:  # the segment runs past the prefix: compare the part inside it
                    stored = self.loads(type_, blob)[: end - start]  # marks: compare them
                    part = value[start:end]
                    if texts is not None:
                        part = _texts.cut(part).value
                    if self.serde.dumps_typed(stored) != self.serde.dumps_typed(part):
                        return False
        return True

    def _packed(self, items: list[Any], texts: str | None) -> Packed:
        """``items`` as a segment stores them: packed if ``texts`` says the segment was."""
        if texts is None:
            return (*self.serde.dumps_typed(items), None)
        type_, blob, done = self.pack(items)
        return type_, blob, None if done is None else _texts.texts_column(done.hashes)

    def _tip(self, lineage: int) -> int:
        """How many items a lineage holds (the end of its last segment)."""
        if self._trusted and lineage in self._tips:
            return self._tips[lineage]
        row = self.conn.execute(
            "SELECT start + count FROM delta_segments WHERE lineage = ? "
            "ORDER BY start DESC LIMIT 1",
            (lineage,),
        ).fetchone()
        return int(row[0]) if row else self.lineage(lineage)[1]

    def _append(
        self, tkey: int, cache: _ThreadCache, batch: _Batch, prev: _Held, value: list[Any]
    ) -> Ref:
        lineage, n = cast(int, prev.lineage), prev.length
        if self._tip(lineage) != n:  # another branch grew this lineage past n: fork from it
            return self._new_lineage(tkey, cache, batch, value, lineage, n)
        type_, blob, done = self.pack(value[n:])
        batch.segments.append((lineage, n, len(value) - n, 0, type_, blob, batch.named(done)))
        self._tips[lineage] = len(value)
        small = self._small.get(lineage)
        if small is None:
            row = self.conn.execute(
                "SELECT count(*) FROM delta_segments WHERE lineage = ? AND merged = 0",
                (lineage,),
            ).fetchone()
            small = int(row[0])
        small += 1
        if small >= MERGE_AT:
            batch.merges.append(lineage)
            small = 0
        self._small[lineage] = small
        return self._list_view(cache, lineage, value)

    def _merge(self, lineage: int) -> None:
        """Fold the small segments at a lineage's tail into one chunk (fewer rows to read)."""
        rows = self.conn.execute(
            "SELECT start, type, items, texts FROM delta_segments "
            "WHERE lineage = ? AND merged = 0 ORDER BY start",
            (lineage,),
        ).fetchall()
        if len(rows) < 2:
            return
        self.conn.execute("DELETE FROM delta_segments WHERE lineage = ? AND merged = 0", (lineage,))
        items, hashes = self._merged(rows)
        if hashes is None:
            type_, blob, done = self.pack(items)
            texts = None
            if done is not None:
                self.save_texts(done.texts)
                texts = _texts.texts_column(done.hashes)
        else:
            type_, blob = self.serde.dumps_typed(items)
            texts = _texts.texts_column(sorted(hashes))
        self.conn.execute(
            "INSERT INTO delta_segments (lineage, start, count, merged, type, items, texts) "
            "VALUES (?, ?, ?, 1, ?, ?, ?)",
            (lineage, rows[0][0], len(items), type_, blob, texts),
        )

    def _merged(self, rows: list[tuple[Any, ...]]) -> tuple[list[Any], set[str] | None]:
        """The items of segments to merge, and the texts they name (None: they name none).

        When some of them name texts, the merged segment will, so the items of the others are
        taken through ``_texts.cut`` as well: a string of theirs that merely looks like a mark
        would otherwise be read as one.
        """
        named = any(texts is not None for *_, texts in rows)
        hashes: set[str] = set()
        items: list[Any] = []
        for _, type_, blob, texts in rows:
            part = self.loads(type_, blob)
            if texts is not None:
                hashes.update(_texts.listed(texts))
            elif named:
                done = _texts.cut(part)
                self.save_texts(done.texts)
                hashes.update(done.texts)
                part = done.value
            items.extend(part)
        return items, hashes if named else None

    def _new_lineage(
        self,
        tkey: int,
        cache: _ThreadCache,
        batch: _Batch,
        value: list[Any],
        base: int | None,
        base_length: int,
    ) -> Ref:
        lineage = cast(
            int,
            self.conn.execute(
                "INSERT INTO delta_lineages (thread, base, base_length) VALUES (?, ?, ?)",
                (tkey, base, base_length),
            ).lastrowid,
        )
        self._lineages[lineage] = (base, base_length)
        type_, blob, done = self.pack(value[base_length:])
        count = len(value) - base_length
        batch.segments.append((lineage, base_length, count, 1, type_, blob, batch.named(done)))
        self._tips[lineage] = len(value)
        self._small[lineage] = 0
        return self._list_view(cache, lineage, value)

    def _list_view(self, cache: _ThreadCache, lineage: int, value: list[Any]) -> Ref:
        ref = (lineage, len(value))
        cache.held[ref] = _Held(lineage, len(value), value)
        return ref

    # Writes --------------------------------------------------------------------------------
    def prepare_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> WritesJob:
        """Serialize a task's writes (touches no database, so any thread may call it)."""
        conf = _conf(config)
        entries: list[list[Any]] = []
        texts: dict[str, bytes] = {}
        for idx, (channel, value) in enumerate(writes):
            type_, blob, done = self.pack(value)
            entry = [WRITES_IDX_MAP.get(channel, idx), channel, type_, blob]
            if done is not None:  # the hashes it names, after its type and bytes
                entry.append(done.hashes)
                texts.update(done.texts)
            entries.append(entry)
        return WritesJob(
            thread_id=str(conf["thread_id"]),
            ns=str(conf.get("checkpoint_ns", "")),
            checkpoint_id=str(conf["checkpoint_id"]),
            task_id=task_id,
            task_path=task_path,
            entries=entries,
            replace=all(w[0] in WRITES_IDX_MAP for w in writes),
            lease=lease_in(config),
            texts=texts,
        )

    def put_writes(self, job: WritesJob) -> None:
        """``BaseCheckpointSaver.put_writes``, with SqliteSaver's replace/ignore rules."""
        with self.tx():
            self.put_writes_in_tx(job)

    def put_writes_in_tx(self, job: WritesJob) -> None:
        """The work of ``put_writes`` inside a write transaction the caller holds."""
        self.fence(job.thread_id, job.lease)
        tkey = cast(int, self.thread_key(job.thread_id, job.ns, create=True))
        if job.texts:
            self.save_texts(job.texts)
        self.store_writes(
            tkey, job.checkpoint_id, job.task_id, job.task_path, job.entries, replace=job.replace
        )

    def store_writes(
        self,
        tkey: int,
        checkpoint_id: str,
        task_id: str,
        task_path: str,
        entries: list[list[Any]],
        *,
        replace: bool,
    ) -> None:
        """Merge ``[idx, channel, type, bytes]`` entries into the task's row of writes.

        As in SqliteSaver, special writes (errors, interrupts, resumes) replace what the task
        stored before at their index; ordinary writes never overwrite an earlier one. An entry
        that names large texts lists their hashes fifth; the row lists them all (``texts``).
        """
        entries = sorted(entries, key=operator.itemgetter(0))
        blob = self.serde.dumps_typed(entries)[1]
        inserted = self.conn.execute(
            "INSERT OR IGNORE INTO delta_writes (thread, checkpoint_id, task_id, task_path, "
            "writes, texts) VALUES (?, ?, ?, ?, ?, ?)",
            (tkey, checkpoint_id, task_id, task_path, blob, _entry_texts(entries)),
        ).rowcount
        if inserted:
            return
        row = self.conn.execute(
            "SELECT task_path, writes FROM delta_writes "
            "WHERE thread = ? AND checkpoint_id = ? AND task_id = ?",
            (tkey, checkpoint_id, task_id),
        ).fetchone()
        merged = {int(e[0]): list(e) for e in self.loads("msgpack", row[1])}
        for entry in entries:
            if replace or entry[0] not in merged:
                merged[entry[0]] = entry
        kept = [merged[k] for k in sorted(merged)]
        self.conn.execute(
            "UPDATE delta_writes SET task_path = ?, writes = ?, texts = ? "
            "WHERE thread = ? AND checkpoint_id = ? AND task_id = ?",
            (
                task_path if replace else row[0],
                self.serde.dumps_typed(kept)[1],
                _entry_texts(kept),
                tkey,
                checkpoint_id,
                task_id,
            ),
        )

    def fence(self, thread_id: str, owner: str | None) -> None:
        """Refuse a lease holder's write once its lease is gone (``ai_agent.checkpoints.fencing``).

        Runs inside the write's own transaction, which holds the file's write lock: no takeover
        can commit between this check and the write. An in-memory database is private to its
        connection (the run store has its own, with the leases), and to its process: no other
        process can take a thread over, so there is nothing to fence.
        """
        if owner is not None and self.path != ":memory:":
            check_lease(self.conn.execute(LEASE_ROW_SQL, (thread_id,)).fetchone(), thread_id, owner)

    def delete_thread(self, thread_id: str) -> None:
        """``BaseCheckpointSaver.delete_thread``: every namespace of the thread."""
        with self.tx():
            keys = [
                r[0]
                for r in self.conn.execute(
                    "SELECT id FROM delta_threads WHERE thread_id = ?", (thread_id,)
                )
            ]
            for tkey in keys:
                self.delete_rows(tkey)
            if keys:
                self.sweep_texts()
        self.forget_thread(thread_id)

    def delete_rows(self, tkey: int) -> None:
        """Delete every row of one thread key."""
        conn = self.conn
        for (lineage,) in conn.execute(
            "SELECT id FROM delta_lineages WHERE thread = ?", (tkey,)
        ).fetchall():
            conn.execute("DELETE FROM delta_segments WHERE lineage = ?", (lineage,))
            self.forget_lineage(lineage)
        for table in ("delta_lineages", "delta_values", "delta_checkpoints", "delta_writes"):
            conn.execute(f"DELETE FROM {table} WHERE thread = ?", (tkey,))  # noqa: S608 - fixed names
        conn.execute("DELETE FROM delta_threads WHERE id = ?", (tkey,))


def _entry_texts(entries: list[list[Any]]) -> str | None:
    """The ``texts`` column of a row of writes: every hash its entries name."""
    hashes = {h for entry in entries if len(entry) > 4 for h in entry[4]}
    return _texts.texts_column(sorted(hashes))


@contextmanager
def readable(thread_id: str, checkpoint_id: str, parent_id: str | None) -> Iterator[None]:
    """Turn a checkpoint that cannot be read back into a CorruptRunError naming it.

    Bytes that do not decode, a skeleton of the wrong shape, a row it needs that is gone: the
    file was damaged or changed by something other than ai-agent. Only this run is affected;
    the message says which checkpoint and what can still be done.
    """
    try:
        yield
    except sqlite3.OperationalError:
        raise  # locked, full, I/O: not the checkpoint's fault
    except (
        StoreError,
        sqlite3.DatabaseError,
        ValueError,
        TypeError,
        KeyError,
        IndexError,
        AttributeError,
        RecursionError,
    ) as exc:
        raise corrupt_checkpoint(thread_id, checkpoint_id, parent_id, exc) from exc


def corrupt_checkpoint(
    thread_id: str, checkpoint_id: str, parent_id: str | None, exc: BaseException
) -> CorruptRunError:
    """The error of one checkpoint that cannot be read back: which, why, what can be done."""
    then = (
        f"to go on from the checkpoint before it, `ai-agent fork {thread_id} {parent_id}` copies "
        "the run up to there into a new thread (if that one is intact)"
        if parent_id
        else "it is the run's first: run its task again as a new run"
    )
    detail = str(exc)[:200] or type(exc).__name__
    return CorruptRunError(
        f"checkpoint {checkpoint_id} of thread {thread_id} cannot be read back "
        f"({type(exc).__name__}: {detail}): the database was damaged or changed outside "
        f"ai-agent. Other runs are not affected; {then}.",
        thread_id=thread_id,
    )


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
        conn.execute("PRAGMA journal_mode = WAL")
        # WAL + NORMAL: a commit is in the WAL before it returns, so it survives a crash of this
        # process, and commits stay in order; only an OS crash or power cut can lose the newest
        # ones. FULL would add an fsync to every step (about 3.5 ms on this kind of disk).
        conn.execute("PRAGMA synchronous = NORMAL")
        with full_disk_raises(path):
            create_or_migrate(conn, where=path)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreError(
            f"{path} is not a usable checkpoint database ({exc}); point --db at another file"
        ) from None
    except BaseException:
        conn.close()
        raise
    return conn


# Skeleton encoding ---------------------------------------------------------------------------


def full_form(skel: Skeleton) -> dict[str, Any]:
    """A skeleton as a full row stores it (the id is the row's key, so it is left out)."""
    extra = {k: v for k, v in skel.extra.items() if k != "id"}
    return {"x": extra, "cv": skel.versions, "vs": skel.seen, "r": skel.refs}


def from_full(data: dict[str, Any], depth: int) -> Skeleton:
    """A skeleton from a full row."""
    return Skeleton(dict(data["cv"]), dict(data["vs"]), _refs(data["r"]), dict(data["x"]), depth)


def _refs(stored: dict[str, Any]) -> dict[str, Ref]:
    """References as a row stores them (msgpack reads a tuple back as a list)."""
    return {ch: tuple(r) if type(r) is list else r for ch, r in stored.items()}


def is_view(ref: Ref) -> bool:
    """Whether a reference is a ``(lineage, length)`` list view."""
    return type(ref) is tuple and type(ref[0]) is int


def diff_form(old: Skeleton, new: Skeleton) -> dict[str, Any]:
    """What changed from ``old`` to ``new``; only the parts that changed are written."""
    out: dict[str, Any] = {"x": {k: v for k, v in new.extra.items() if k != "id"}}
    for key, a, b in (("cv", old.versions, new.versions), ("r", old.refs, new.refs)):
        changed = {k: v for k, v in b.items() if k not in a or a[k] != v}
        removed = [k for k in a if k not in b]
        if changed:
            out[key] = changed
        if removed:
            out[key + "-"] = removed
    seen = {n: vs for n, vs in new.seen.items() if old.seen.get(n) is not vs}
    gone = [n for n in old.seen if n not in new.seen]
    if seen:
        out["vs"] = seen
    if gone:
        out["vs-"] = gone
    return out


def apply_diff(base: Skeleton, data: dict[str, Any], depth: int) -> Skeleton:
    """The skeleton a diff row describes, given its parent's."""
    versions = {**base.versions, **data.get("cv", {})}
    refs = {**base.refs, **_refs(data.get("r", {}))}
    seen = {**base.seen, **data.get("vs", {})}
    for key in data.get("cv-", ()):
        versions.pop(key, None)
    for key in data.get("r-", ()):
        refs.pop(key, None)
    for key in data.get("vs-", ()):
        seen.pop(key, None)
    return Skeleton(versions, seen, refs, dict(data["x"]), depth)


def _remember(cache: _ThreadCache, checkpoint_id: str, skel: Skeleton) -> None:
    """Keep the newest skeletons, and only the held values they can still reach."""
    cache.skeletons[checkpoint_id] = skel
    cache.skeletons.move_to_end(checkpoint_id)
    while len(cache.skeletons) > _SKELETON_CACHE:
        cache.skeletons.popitem(last=False)
    if len(cache.held) > 2 * len(skel.refs):
        live = {r for s in cache.skeletons.values() for r in s.refs.values()}
        cache.held = {r: h for r, h in cache.held.items() if r in live}


def _checkpoint(skel: Skeleton, values: dict[str, Any]) -> Checkpoint:
    out: dict[str, Any] = dict(skel.extra)
    out["channel_versions"] = dict(skel.versions)
    out["versions_seen"] = {node: dict(vs) for node, vs in skel.seen.items()}
    out["channel_values"] = values
    return cast(Checkpoint, out)


def _fresh(value: Any) -> Any:
    """A value shared between the checkpoints of one ``list``: copy a list we hand out."""
    return value[:] if type(value) is list else value


def _search_where(
    config: RunnableConfig | None, filter: dict[str, Any] | None, before: RunnableConfig | None
) -> tuple[list[str], list[Any]]:
    """``list``'s WHERE clause, with SqliteSaver's semantics for each part."""
    where: list[str] = []
    params: list[Any] = []
    if config is not None:
        conf = _conf(config)
        where.append("t.thread_id = ?")
        params.append(str(conf["thread_id"]))
        if conf.get("checkpoint_ns") is not None:
            where.append("t.checkpoint_ns = ?")
            params.append(conf["checkpoint_ns"])
        if conf.get("checkpoint_id"):
            where.append("c.checkpoint_id = ?")
            params.append(conf["checkpoint_id"])
    for key, value in (filter or {}).items():
        if not _FILTER_KEY.match(key):
            raise ValueError(
                f"Invalid filter key: '{key}'. Filter keys must contain only alphanumeric "
                "characters, underscores, dots, and hyphens."
            )
        op, param = _where_value(value)
        where.append(f"json_extract(c.metadata, '$.{key}') {op}")
        params.append(param)
    if before is not None:
        where.append("c.checkpoint_id < ?")
        params.append(_conf(before).get("checkpoint_id"))
    return where, params


def _where_value(value: Any) -> tuple[str, Any]:
    if value is None:
        return "IS ?", None
    if isinstance(value, str | int | float):
        return "= ?", value
    if isinstance(value, dict | list):
        return "= ?", json.dumps(value, separators=(",", ":"))
    return "= ?", str(value)
