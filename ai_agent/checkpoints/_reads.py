"""Reading checkpoints back: exactly what LangGraph put, whatever the delta tables hold.

A checkpoint is read as its skeleton (its last full row plus the diffs after it, one recursive
query), then the values its references name: small ones from the skeleton itself, lists from
their lineages, the rest from ``delta_values``; then its task's pending writes. ``get_tuple``
and a page of ``list`` are the saver's reads; one read runs in one read transaction, so it sees
one state of the file. A checkpoint that cannot be read back is a CorruptRunError naming it
(`readable`).
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from ai_agent.checkpoints._dicts import read_dict
from ai_agent.checkpoints._lineages import known_bases, read_items
from ai_agent.checkpoints._skeleton import (
    EMPTY,
    MAX_DIFF_DEPTH,
    Ref,
    Skeleton,
    apply_diff,
    as_checkpoint,
    from_full,
)
from ai_agent.checkpoints._store import (
    REUSE_MAX_BYTES,
    DeltaStore,
    Held,
    ReadMemo,
    remember,
    thread_of,
    tuple_config,
)
from ai_agent.checkpoints._writes import pending_writes
from ai_agent.checkpoints.versions import STATE_VERSION_KEY
from ai_agent.errors import CorruptRunError, StoreError

if TYPE_CHECKING:  # types only: the light reader (`reader`) loads no LangChain
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import (
        Checkpoint,
        CheckpointMetadata,
        CheckpointTuple,
        PendingWrite,
    )

__all__ = [
    "UNREADABLE",
    "StoredTuple",
    "corrupt_checkpoint",
    "get_tuple",
    "langgraph_item",
    "langgraph_tuple",
    "list_page",
    "read_values",
    "readable",
    "skeleton",
]


class StoredTuple(NamedTuple):
    """One checkpoint as read back: the fields of LangGraph's ``CheckpointTuple``, in its order.

    Not LangGraph's own class: its module imports LangChain, which the light reader
    (`ai_agent.checkpoints.reader`) must not load. `DeltaSaver` hands LangGraph its own
    ``CheckpointTuple(*stored)``.
    """

    config: RunnableConfig
    checkpoint: Checkpoint
    metadata: CheckpointMetadata
    parent_config: RunnableConfig | None
    pending_writes: list[PendingWrite]


_FILTER_KEY = re.compile(r"^[a-zA-Z0-9_.-]+\Z")
_CHAIN_SQL = """
WITH RECURSIVE chain(checkpoint_id, parent_id, full, depth, skeleton, texts, n) AS (
    SELECT checkpoint_id, parent_id, full, depth, skeleton, texts, 0
    FROM delta_checkpoints WHERE thread = ?1 AND checkpoint_id = ?2
    UNION ALL
    SELECT c.checkpoint_id, c.parent_id, c.full, c.depth, c.skeleton, c.texts, chain.n + 1
    FROM delta_checkpoints AS c JOIN chain ON c.thread = ?1 AND c.checkpoint_id = chain.parent_id
    WHERE chain.full = 0 AND chain.n < ?3
)
SELECT checkpoint_id, full, depth, skeleton, texts FROM chain ORDER BY n
"""
_CHAIN_MAX = 4 * (MAX_DIFF_DEPTH + 1)
"""Rows a skeleton's chain may walk: ai-agent writes 32 at most; room for a depth edited low."""


def skeleton(
    store: DeltaStore, tkey: int, checkpoint_id: str, memo: ReadMemo | None = None
) -> Skeleton:
    """The skeleton of one checkpoint: its last full row plus the diffs after it."""
    cache = store.cached(tkey)
    if cache is not None and checkpoint_id in cache.skeletons:
        return cache.skeletons[checkpoint_id]
    if memo is not None and (tkey, checkpoint_id) in memo.skeletons:
        return memo.skeletons[(tkey, checkpoint_id)]
    # Bounded: parent_ids edited into a cycle of diff rows would otherwise recurse forever.
    rows = store.conn.execute(_CHAIN_SQL, (tkey, checkpoint_id, _CHAIN_MAX)).fetchall()
    if len(rows) > _CHAIN_MAX:
        raise StoreError(
            f"checkpoint {checkpoint_id} is stored as more than {_CHAIN_MAX} diffs in a row "
            f"(ai-agent writes at most {MAX_DIFF_DEPTH}): its parent_ids were changed into a "
            "cycle or a chain by something other than ai-agent"
        )
    if not rows or not rows[-1][1]:
        raise StoreError(
            f"checkpoint {checkpoint_id} or a row it is stored against is missing; "
            "the database was changed by something other than ai-agent"
        )
    skel: Skeleton | None = None
    found = memo.texts if memo is not None else None
    for cid, full, depth, blob, texts in reversed(rows):
        data = store.unpack("msgpack", blob, texts, found)
        skel = from_full(data, depth) if full else apply_diff(cast(Skeleton, skel), data, depth)
        skel.extra["id"] = cid
        if memo is not None:
            memo.skeletons[(tkey, cid)] = skel
            if len(memo.skeletons) > 4 * MAX_DIFF_DEPTH:
                memo.skeletons.popitem(last=False)
    return cast(Skeleton, skel)


def read_values(
    store: DeltaStore, tkey: int, refs: Mapping[str, Ref], memo: ReadMemo | None = None
) -> tuple[dict[str, Any], dict[Ref, Held]]:
    """Channel values for a refs map, and what was learnt about them (for the cache)."""
    wanted = sorted({r for r in refs.values() if type(r) is int and r != EMPTY})
    if memo is not None:
        wanted = [r for r in wanted if (tkey, r) not in memo.values]
    rows = _value_rows(store, tkey, wanted)
    known_bases(store, [r[0] for r in refs.values() if type(r) is tuple and r])
    found = memo.texts if memo is not None else {}
    values: dict[str, Any] = {}
    held: dict[Ref, Held] = {}
    for channel, ref in refs.items():
        if isinstance(ref, tuple):
            values[channel] = _read_inline(store, tkey, ref, held, memo)
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
            items = read_items(store, int(lineage), int(length), memo, owner=tkey)
            values[channel] = items
            held[ref] = Held(int(lineage), int(length), items)
        else:
            value = store.unpack(type_, blob, texts, found)
            values[channel] = value
            small = len(blob or b"") <= REUSE_MAX_BYTES
            held[ref] = Held(None, 0, None, (type_, blob, texts) if small else None)
            if memo is not None:
                memo.values[(tkey, ref)] = value
    return values, held


def _value_rows(store: DeltaStore, tkey: int, wanted: list[int]) -> dict[int, tuple[Any, ...]]:
    """Value rows by id: (type, value, lineage, length, texts)."""
    rows: dict[int, tuple[Any, ...]] = {}
    for i in range(0, len(wanted), 500):
        chunk = wanted[i : i + 500]
        marks = ",".join("?" * len(chunk))
        for row in store.conn.execute(
            "SELECT id, type, value, lineage, length, texts FROM delta_values "  # noqa: S608 - placeholders only
            f"WHERE thread = ? AND id IN ({marks})",
            [tkey, *chunk],
        ):
            rows[int(row[0])] = row[1:]
    return rows


def _read_inline(
    store: DeltaStore,
    tkey: int,
    ref: tuple[Any, ...],
    held: dict[Ref, Held],
    memo: ReadMemo | None,
) -> Any:
    """The value of a reference that needs no value row: a list or dict view, or a small value."""
    if len(ref) == 3:  # a dict's change log (``_dicts``): compared by its bytes at the next put
        held[ref] = Held(ref[0], ref[1])
        return read_dict(store, ref[0], ref[1], memo, owner=tkey)
    if type(ref[0]) is int:
        items = read_items(store, ref[0], ref[1], memo, owner=tkey)
        held[ref] = Held(ref[0], ref[1], items)
        return items
    return store.loads(ref[0], ref[1])  # never names a text (see _puts.INLINE_MAX_BYTES)


def _fresh(value: Any) -> Any:
    """A value shared between the checkpoints of one ``list``: copy a list we hand out."""
    return value[:] if type(value) is list else value


def langgraph_tuple(stored: StoredTuple | None) -> CheckpointTuple | None:
    """LangGraph's own tuple for what was read, for `DeltaSaver` (which has imported LangGraph)."""
    return None if stored is None else langgraph_item(stored)


def langgraph_item(stored: StoredTuple) -> CheckpointTuple:
    """`langgraph_tuple` of a checkpoint that was found.

    LangGraph reads a checkpoint's id as hexadecimal (its task ids are made from it): one edited
    to other text (it sorts after the real ids, so it is the thread's latest) failed the resume
    inside LangGraph ("internal error: Odd-length string"). It is a CorruptRunError naming the
    checkpoint here; the light reads (``show``, ``history``) still show such a run.
    """
    from langgraph.checkpoint.base import CheckpointTuple

    checkpoint_id = stored.checkpoint["id"]
    if not _HEX_ID.fullmatch(checkpoint_id.replace("-", "")):
        parent = stored.parent_config
        thread_id = str(stored.config["configurable"]["thread_id"])
        parent_id = parent["configurable"].get("checkpoint_id") if parent else None
        why = StoreError(f"its id {checkpoint_id[:40]!r} is not hexadecimal, as LangGraph reads it")
        raise corrupt_checkpoint(thread_id, checkpoint_id, parent_id, why)
    return CheckpointTuple(*stored)


_HEX_ID = re.compile(r"(?:[0-9a-fA-F]{2})+")


# The saver API ---------------------------------------------------------------------------------
def get_tuple(store: DeltaStore, config: RunnableConfig) -> StoredTuple | None:
    """``BaseCheckpointSaver.get_tuple``."""
    thread_id, ns = thread_of(config)
    checkpoint_id = config["configurable"].get("checkpoint_id")
    with store.snapshot():
        tkey = store.thread_key(thread_id, ns, create=False)
        if tkey is None:
            return None
        with fetched_as_text(thread_id):
            if checkpoint_id:
                row = store.conn.execute(
                    "SELECT checkpoint_id, parent_id, metadata FROM delta_checkpoints "
                    "WHERE thread = ? AND checkpoint_id = ?",
                    (tkey, checkpoint_id),
                ).fetchone()
            else:
                row = store.conn.execute(
                    "SELECT checkpoint_id, parent_id, metadata FROM delta_checkpoints "
                    "WHERE thread = ? ORDER BY checkpoint_id DESC LIMIT 1",
                    (tkey,),
                ).fetchone()
        if row is None:
            return None
        cid, parent_id, metadata = row
        with readable(thread_id, cid, parent_id):
            text_id(cid)
            skel = skeleton(store, tkey, cid)
            values, held = read_values(store, tkey, skel.refs)
            writes = pending_writes(store, tkey, cid)
            meta = stored_metadata(metadata)
    # Remember what was handed out: a graph resumes from these very objects, so its next
    # append is recognised by identity instead of by re-reading and comparing the list.
    cache = store.cache(tkey)
    for ref, found in held.items():
        known = cache.held.get(ref)
        if known is None or known.keys is None:  # a dict's snapshot stays: it is still exact
            cache.held[ref] = found
    remember(cache, cid, skel)
    return StoredTuple(
        config if checkpoint_id else tuple_config(thread_id, ns, cid),
        as_checkpoint(skel, values),
        meta,
        tuple_config(thread_id, ns, parent_id) if parent_id else None,
        writes,
    )


def list_page(
    store: DeltaStore,
    config: RunnableConfig | None,
    filter: dict[str, Any] | None,
    before: RunnableConfig | None,
    limit: int,
    after: tuple[str, int] | None,
    memo: ReadMemo,
) -> list[tuple[StoredTuple, tuple[str, int]]]:
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
    page: list[tuple[StoredTuple, tuple[str, int]]] = []
    with store.snapshot():
        with fetched_as_text(str(config["configurable"]["thread_id"]) if config else None):
            rows = store.conn.execute(sql, [*params, limit]).fetchall()
        for tkey, thread_id, ns, cid, parent_id, metadata in rows:
            with readable(thread_id, cid, parent_id):
                text_id(cid)
                skel = skeleton(store, tkey, cid, memo)
                values, _ = read_values(store, tkey, skel.refs, memo)
                item = StoredTuple(
                    tuple_config(thread_id, ns, cid),
                    as_checkpoint(skel, values),
                    stored_metadata(metadata),
                    tuple_config(thread_id, ns, parent_id) if parent_id else None,
                    pending_writes(store, tkey, cid, memo),
                )
            page.append((item, (cid, tkey)))
    return page


def _search_where(
    config: RunnableConfig | None, filter: dict[str, Any] | None, before: RunnableConfig | None
) -> tuple[list[str], list[Any]]:
    """``list``'s WHERE clause, with SqliteSaver's semantics for each part."""
    where: list[str] = []
    params: list[Any] = []
    if config is not None:
        conf = config["configurable"]
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
        params.append(before["configurable"].get("checkpoint_id"))
    return where, params


def _where_value(value: Any) -> tuple[str, Any]:
    if value is None:
        return "IS ?", None
    if isinstance(value, str | int | float):
        return "= ?", value
    if isinstance(value, dict | list):
        return "= ?", json.dumps(value, separators=(",", ":"))
    return "= ?", str(value)


# A checkpoint that cannot be read back -----------------------------------------------------------
def stored_metadata(text: str) -> CheckpointMetadata:
    """A checkpoint row's metadata: a JSON object (LangGraph reads its keys), else StoreError.

    The keys LangGraph and ai-agent compute with must be of their types: a ``step`` of text,
    NaN or 1e999 failed ``int(step)`` and ``step + 1`` ("internal error" in ``show`` and
    ``resume``), ``parents`` of another type failed ``{**parents}``, and a state version that
    is not a whole number from 1 failed its migration (``KeyError: 0``).
    """
    meta = json.loads(text)
    if type(meta) is not dict:
        raise StoreError(f"its metadata is {type(meta).__name__} JSON, not an object")
    for key, wanted, ok in _METADATA_KEYS:
        if key in meta and not ok(meta[key]):
            found = json.dumps(meta[key])[:40]
            raise StoreError(f"its metadata's {key!r} is {found}, not {wanted}")
    return cast("CheckpointMetadata", meta)


_METADATA_KEYS: tuple[tuple[str, str, Callable[[Any], bool]], ...] = (
    ("step", "a whole number", lambda v: type(v) is int),
    ("parents", "an object", lambda v: type(v) is dict),
    (STATE_VERSION_KEY, "a whole number from 1", lambda v: type(v) is int and v >= 1),
)
"""The metadata keys read as numbers or objects: what each must be, and its check."""


def text_id(checkpoint_id: object) -> None:
    """Refuse a checkpoint id that is not text (StoreError).

    A TEXT column keeps bytes bound to it as bytes, which sort after every text id: such a row
    was the thread's latest checkpoint, and LangGraph failed on its id as it resumed the run
    (``TypeError``, "internal error").
    """
    if type(checkpoint_id) is not str:
        raise StoreError(f"its id is stored as {type(checkpoint_id).__name__}, not text")


@contextmanager
def fetched_as_text(thread_id: str | None) -> Iterator[None]:
    """Turn a checkpoint row whose id or metadata is not UTF-8 text into a CorruptRunError.

    SQLite raises it while the row is fetched, before the checkpoint's id is known (it may be
    the id itself that cannot be read), so the error names the thread (``list`` over every
    thread: none).
    """
    try:
        yield
    except sqlite3.OperationalError as exc:
        if not str(exc).startswith("Could not decode to UTF-8"):
            raise
        whose = f"of thread {thread_id} " if thread_id is not None else ""
        raise CorruptRunError(
            f"a checkpoint {whose}cannot be read back: a column of its row is not UTF-8 text "
            f"({str(exc)[:80]}): the database was damaged or changed outside ai-agent. Other "
            "runs are not affected; repair the row, or remove the run's checkpoints with "
            "`ai-agent prune THREAD`.",
            thread_id=thread_id or "",
        ) from exc


@contextmanager
def readable(thread_id: str, checkpoint_id: str, parent_id: str | None) -> Iterator[None]:
    """Turn a checkpoint that cannot be read back into a CorruptRunError naming it.

    Bytes that do not decode, a skeleton of the wrong shape, a row it needs that is gone: the
    file was damaged or changed by something other than ai-agent. Only this run is affected;
    the message says which checkpoint and what can still be done.
    """
    try:
        yield
    except sqlite3.OperationalError as exc:
        # Locked, full, I/O: not the checkpoint's fault. But text in a column that is not
        # UTF-8 (bytes another program wrote as text) is raised as one too, on fetching it.
        if not str(exc).startswith("Could not decode to UTF-8"):
            raise
        raise corrupt_checkpoint(thread_id, checkpoint_id, parent_id, exc) from exc
    except _UNREADABLE_SQLITE as exc:
        raise corrupt_checkpoint(thread_id, checkpoint_id, parent_id, exc) from exc


UNREADABLE: tuple[type[BaseException], ...] = (
    StoreError,  # a value the strict serializer refuses
    ValueError,
    TypeError,
    KeyError,
    IndexError,
    AttributeError,
    RecursionError,  # nested past what the decoders follow
    OverflowError,  # a length or time past any real one: an int SQLite or datetime refuses
    NotImplementedError,  # a value of a type no serializer knows ("Unknown serialization")
)
"""What reading a damaged checkpoint raises in the decoders, ours or LangGraph's (a column of
the wrong shape, bytes that do not decode), on either database."""
_UNREADABLE_SQLITE: tuple[type[BaseException], ...] = (sqlite3.DatabaseError, *UNREADABLE)


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
