"""A task's pending writes: one row per task and checkpoint, merged as SqliteSaver merges them.

LangGraph stores what a task wrote before the checkpoint that follows it exists, so a step that
stopped half-way resumes with the writes of the tasks that finished. A task's writes are
serialized where the saver is called (`prepare_writes` touches no database) and stored on the
worker thread as one ``delta_writes`` row (`store_writes`); `pending_writes` reads them back in
LangGraph's order.

A write of items that the next checkpoint appends to a list (a node returning
``{"messages": [message]}`` to an ``operator.add`` channel) would be stored twice: in the row of
writes and in the list's segment. Format 5 stores it once: when the put that follows appends the
very same bytes to a lineage, the write's entry is rewritten to name them there
(`share_appended`, type `ITEMS_TYPE`: ``[lineage, start, count]``), and reading it back reads
those items (``_lineages.read_range``). LangGraph may call ``put_writes`` after that put (it runs
on a background thread, in any durability mode): then the row is stored naming the items the put
remembered appending (`store_writes`).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from ai_agent.checkpoints import _texts
from ai_agent.checkpoints._dicts import CHANGES_TYPE, applied, changes_since, read_dict
from ai_agent.checkpoints._lineages import read_range
from ai_agent.checkpoints._store import (
    Appended,
    Batch,
    DeltaStore,
    ReadMemo,
    ThreadCache,
    thread_of,
)
from ai_agent.checkpoints.fencing import lease_in
from ai_agent.errors import StoreError

if TYPE_CHECKING:  # types only: the light reader (`reader`) loads no LangChain
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import PendingWrite

__all__ = [
    "DICT_VIEW_TYPE",
    "ITEMS_TYPE",
    "SHARE_MIN_BYTES",
    "WritesJob",
    "pending_writes",
    "prepare_writes",
    "put_writes",
    "put_writes_in_tx",
    "share_appended",
    "store_writes",
    "writes_sort_key",
]

# LangGraph's ``WRITES_IDX_MAP`` and ``writes_sort_key`` (``langgraph.checkpoint.base``), restated
# because that module imports LangChain, which reading checkpoints must not load; a test pins
# them to LangGraph's (tests/checkpoints/test_reader.py).
WRITES_IDX_MAP = {"__error__": -1, "__scheduled__": -2, "__interrupt__": -3, "__resume__": -4}


ITEMS_TYPE = "ai-agent:list-items"
"""The type of a write entry that names items of a list lineage: ``[lineage, start, count]``."""

DICT_VIEW_TYPE = "ai-agent:dict-view"
"""The type of a write entry that names a dict log's first records: ``[lineage, length]``."""

SHARE_MIN_BYTES = 256
"""A written list this large is worth naming where a put appended it (smaller ones stay)."""

_REMEMBERED_CHECKPOINTS = 16


def writes_sort_key(task_path: str, task_id: str = "", idx: int = 0) -> tuple[str, str, int]:
    """The order LangGraph applies one super-step's writes in."""
    return (task_path, task_id, idx)


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


def prepare_writes(
    store: DeltaStore,
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str = "",
) -> WritesJob:
    """Serialize a task's writes (touches no database, so any thread may call it).

    A dict the checkpoint holds as a change log is written as its changes (``_dicts``).
    """
    entries: list[list[Any]] = []
    texts: dict[str, bytes] = {}
    thread_id, ns = thread_of(config)
    checkpoint_id = str(config["configurable"]["checkpoint_id"])
    for idx, (channel, value) in enumerate(writes):
        changes = changes_since(store, thread_id, ns, channel, value)
        packed = store.pack(changes) if changes is not None else None
        if packed is not None and packed[0] == "msgpack":  # what `pending_writes` reads back
            type_, blob, done = CHANGES_TYPE, packed[1], packed[2]
        else:
            type_, blob, done = store.pack(value)
        entry = [WRITES_IDX_MAP.get(channel, idx), channel, type_, blob]
        if done is not None:  # the hashes it names, after its type and bytes
            entry.append(done.hashes)
            texts.update(done.texts)
        entries.append(entry)
    return WritesJob(
        thread_id=thread_id,
        ns=ns,
        checkpoint_id=checkpoint_id,
        task_id=task_id,
        task_path=task_path,
        entries=entries,
        replace=all(w[0] in WRITES_IDX_MAP for w in writes),
        lease=lease_in(config),
        texts=texts,
    )


def put_writes(store: DeltaStore, job: WritesJob) -> None:
    """``BaseCheckpointSaver.put_writes``, with SqliteSaver's replace/ignore rules."""
    with store.tx():
        put_writes_in_tx(store, job)


def put_writes_in_tx(store: DeltaStore, job: WritesJob) -> None:
    """The work of ``put_writes`` inside a write transaction the caller holds."""
    store.fence(job.thread_id, job.lease)
    tkey = cast(int, store.thread_key(job.thread_id, job.ns, create=True))
    if job.texts:
        store.save_texts(job.texts)
    store_writes(
        store,
        tkey,
        job.checkpoint_id,
        job.task_id,
        job.task_path,
        job.entries,
        replace=job.replace,
    )


def store_writes(
    store: DeltaStore,
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
    cache = store.cache(tkey)
    appended = cache.appended.get(checkpoint_id) if store.trusted else None
    if appended is not None:  # the put after this checkpoint came first (see `share_appended`)
        _name_appended(store, entries, appended)
    blob = store.serde.dumps_typed(entries)[1]
    inserted = store.conn.execute(
        "INSERT OR IGNORE INTO delta_writes (thread, checkpoint_id, task_id, task_path, "
        "writes, texts) VALUES (?, ?, ?, ?, ?, ?)",
        (tkey, checkpoint_id, task_id, task_path, blob, _entry_texts(entries)),
    ).rowcount
    if inserted:
        if appended is None:
            _remember(cache, checkpoint_id, task_id, entries)
        return
    row = store.conn.execute(
        "SELECT task_path, writes FROM delta_writes "
        "WHERE thread = ? AND checkpoint_id = ? AND task_id = ?",
        (tkey, checkpoint_id, task_id),
    ).fetchone()
    merged = {int(e[0]): list(e) for e in store.loads("msgpack", row[1])}
    for entry in entries:
        if replace or entry[0] not in merged:
            merged[entry[0]] = entry
    kept = [merged[k] for k in sorted(merged)]
    if appended is None:
        _remember(cache, checkpoint_id, task_id, kept)
    store.conn.execute(
        "UPDATE delta_writes SET task_path = ?, writes = ?, texts = ? "
        "WHERE thread = ? AND checkpoint_id = ? AND task_id = ?",
        (
            task_path if replace else row[0],
            store.serde.dumps_typed(kept)[1],
            _entry_texts(kept),
            tkey,
            checkpoint_id,
            task_id,
        ),
    )


def _shareable(entry: list[Any]) -> bool:
    """Whether a write entry may come to name what the next put appends (see `share_appended`).

    A list (a msgpack array) or a dict's changes, naming no large text (a segment that names
    texts holds other bytes), large enough to be worth a rewrite of its row.
    """
    if len(entry) != 4 or len(entry[3]) < SHARE_MIN_BYTES:
        return False
    return entry[2] == CHANGES_TYPE or (entry[2] == "msgpack" and _array_head(entry[3]) > 0)


def _remember(cache: ThreadCache, checkpoint_id: str, task_id: str, entries: list[Any]) -> None:
    """Keep a stored row's entries while it holds a list the next put may append."""
    shareable = any(_shareable(entry) for entry in entries)
    rows = cache.writes.get(checkpoint_id)
    if rows is None:
        if not shareable:
            return
        rows = cache.writes[checkpoint_id] = {}
        while len(cache.writes) > _REMEMBERED_CHECKPOINTS:
            cache.writes.popitem(last=False)
    if shareable:
        rows[task_id] = [list(entry) for entry in entries]
    else:
        rows.pop(task_id, None)


def share_appended(
    store: DeltaStore, tkey: int, cache: ThreadCache, checkpoint_id: str | None, batch: Batch
) -> None:
    """Name, in the writes stored against ``checkpoint_id``, what this put appends.

    Exact by construction: an entry is rewritten only when the bytes it holds equal the bytes
    this put stores in a segment. A written list becomes `ITEMS_TYPE`, those items; a dict's
    changes from ``(lineage, n)`` that this put appends at record n become `DICT_VIEW_TYPE`,
    the dict the log's first ``n + k`` records build, which is the dict the changes build. Only
    rows this store wrote and still trusts are rewritten (another connection may have changed
    them); any other row keeps its bytes, which costs space, never meaning.
    """
    if not batch.appended or not store.trusted or checkpoint_id is None:
        return
    cache.appended[checkpoint_id] = batch.appended  # for writes stored after this put
    while len(cache.appended) > _REMEMBERED_CHECKPOINTS:
        cache.appended.popitem(last=False)
    rows = cache.writes.pop(checkpoint_id, None)
    if rows is None:
        return
    dumps = store.serde.dumps_typed
    for task_id, entries in rows.items():
        if _name_appended(store, entries, batch.appended):
            store.conn.execute(
                "UPDATE delta_writes SET writes = ? "
                "WHERE thread = ? AND checkpoint_id = ? AND task_id = ?",
                (dumps(entries)[1], tkey, checkpoint_id, task_id),
            )


def _name_appended(store: DeltaStore, entries: list[list[Any]], appended: list[Appended]) -> bool:
    """Rewrite, in place, the entries whose bytes ``appended`` holds; whether any was."""
    shared = False
    for entry in entries:
        if not _shareable(entry):
            continue
        if entry[2] == CHANGES_TYPE:
            named = _dict_at(entry[3], appended)
        else:
            named = _items_at(store, entry[3], appended)
        if named is not None:
            entry[2], entry[3] = named[0], store.serde.dumps_typed(named[1])[1]
            shared = True
    return shared


def _items_at(
    store: DeltaStore, blob: bytes, appended: list[Appended]
) -> tuple[str, list[int]] | None:
    """``[lineage, start, count]`` of appended items whose bytes are ``blob``'s list."""
    count = _array_head(blob)
    body = blob[_head_size(blob) :]
    for lineage, start, items, stored in appended:
        if len(items) < count:
            continue
        if len(items) == count:
            if stored[_head_size(stored) :] == body:
                return ITEMS_TYPE, [lineage, start, count]
            continue
        if body not in stored:  # several writes appended together: find where this one is
            continue
        dumps = store.serde.dumps_typed
        for at in range(len(items) - count + 1):
            if dumps(items[at : at + count])[1] == blob:
                return ITEMS_TYPE, [lineage, start + at, count]
    return None


def _dict_at(blob: bytes, appended: list[Appended]) -> tuple[str, list[int]] | None:
    """``[lineage, length]`` of the dict log a write's changes were appended to, as they are.

    ``blob`` is msgpack ``[lineage, n, records]``: its records' bytes start after two ints.
    """
    if blob[0] != 0x93:
        return None
    at = 1
    head: list[int] = []
    for _ in range(2):
        size = _INT_SIZES.get(blob[at], 1 if blob[at] < 0x80 else 0)
        if not size:
            return None
        head.append(int.from_bytes(blob[at + 1 : at + size], "big") if size > 1 else blob[at])
        at += size
    lineage, n = head
    records = blob[at:]
    for appended_to, start, items, stored in appended:
        if appended_to == lineage and start == n and stored == records:
            return DICT_VIEW_TYPE, [lineage, n + len(items)]
    return None


_INT_SIZES = {0xCC: 2, 0xCD: 3, 0xCE: 5, 0xCF: 9}
"""Bytes of a msgpack unsigned int by its first byte (a positive fixint is 1)."""


def _array_head(blob: bytes) -> int:
    """How many items a msgpack array holds (0 when ``blob`` is no array)."""
    head = blob[0]
    if 0x90 <= head <= 0x9F:
        return head & 0x0F
    if head == 0xDC:
        return int.from_bytes(blob[1:3], "big")
    if head == 0xDD:
        return int.from_bytes(blob[1:5], "big")
    return 0


def _head_size(blob: bytes) -> int:
    """Bytes of a msgpack array's header (fixarray, array 16, array 32)."""
    return 1 if blob[0] <= 0x9F else 3 if blob[0] == 0xDC else 5


def _entry_texts(entries: list[list[Any]]) -> str | None:
    """The ``texts`` column of a row of writes: every hash its entries name."""
    hashes = {h for entry in entries if len(entry) > 4 for h in entry[4]}
    return _texts.texts_column(sorted(hashes))


def pending_writes(
    store: DeltaStore, tkey: int, checkpoint_id: str, memo: ReadMemo | None = None
) -> list[PendingWrite]:
    """The writes stored against one checkpoint, in ``writes_sort_key`` order."""
    rows = store.conn.execute(
        "SELECT task_id, task_path, writes FROM delta_writes "
        "WHERE thread = ? AND checkpoint_id = ?",
        (tkey, checkpoint_id),
    ).fetchall()
    found: list[tuple[tuple[str, str, int], PendingWrite]] = []
    bodies: dict[str, bytes] = {}
    for task_id, task_path, blob in rows:
        for entry in store.loads("msgpack", blob):
            idx, channel, type_, data = entry[:4]
            texts = _texts.texts_column(entry[4]) if len(entry) > 4 else None
            key = writes_sort_key(task_path, task_id, idx)
            value: Any
            if type_ == CHANGES_TYPE:
                changes = store.unpack("msgpack", data, texts, bodies)
                value = applied(store, changes, memo, owner=tkey)
            elif type_ == ITEMS_TYPE:
                value = _named_items(store, tkey, store.loads("msgpack", data), memo)
            elif type_ == DICT_VIEW_TYPE:
                value = _named_dict(store, tkey, store.loads("msgpack", data), memo)
            else:
                value = store.unpack(type_, data, texts, bodies)
            found.append((key, (task_id, channel, value)))
    found.sort(key=operator.itemgetter(0))
    return [w for _, w in found]


def _named_items(store: DeltaStore, tkey: int, where: Any, memo: ReadMemo | None) -> list[Any]:
    """The list a write entry of `ITEMS_TYPE` names.

    Raises:
        StoreError: the entry is not ``[lineage, start, count]``.
    """
    if type(where) is not list or len(where) != 3 or any(type(n) is not int for n in where):
        raise StoreError("a write naming list items is not [lineage, start, count]")
    lineage, start, count = where
    return read_range(store, lineage, start, count, memo, owner=tkey)


def _named_dict(store: DeltaStore, tkey: int, where: Any, memo: ReadMemo | None) -> dict[str, Any]:
    """The dict a write entry of `DICT_VIEW_TYPE` names.

    Raises:
        StoreError: the entry is not ``[lineage, length]``.
    """
    if type(where) is not list or len(where) != 2 or any(type(n) is not int for n in where):
        raise StoreError("a write naming a dict log is not [lineage, length]")
    return read_dict(store, where[0], where[1], memo, owner=tkey)
