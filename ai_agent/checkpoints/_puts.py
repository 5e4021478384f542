"""Storing a checkpoint: only what changed since its parent, in one write transaction.

A put builds the new checkpoint's skeleton from its parent's: a channel whose version did not
move keeps its reference; a changed one is stored (`_store_value`), which for a list that
extends the parent's means only its new items (``_lineages``), for a small value the skeleton
itself, and otherwise one ``delta_values`` row. The rows are inserted together at the end of the
put (a `Batch`), then the skeleton, as a diff of its parent's or in full every
`MAX_DIFF_DEPTH` + 1 steps. A value is recognised as unchanged or extended by what this
process holds of it (`Held`), and only when nothing is held by the stored bytes.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    get_checkpoint_metadata,
)

from ai_agent.checkpoints import _texts
from ai_agent.checkpoints._dicts import (
    DICT_MIN_BYTES,
    is_dict_view,
    loggable,
    start_dict,
    store_dict_change,
)
from ai_agent.checkpoints._identity import same_prefix, snapshot, unchanged
from ai_agent.checkpoints._lineages import (
    LINEAGE_MIN_ITEMS,
    append,
    matches_stored,
    merge,
    new_lineage,
)
from ai_agent.checkpoints._reads import skeleton
from ai_agent.checkpoints._skeleton import (
    EMPTY,
    MAX_DIFF_DEPTH,
    Ref,
    Skeleton,
    diff_form,
    full_form,
)
from ai_agent.checkpoints._store import (
    REUSE_MAX_BYTES,
    Batch,
    DeltaStore,
    Held,
    ThreadCache,
    remember,
    thread_of,
    tuple_config,
)
from ai_agent.checkpoints._writes import share_appended
from ai_agent.checkpoints.fencing import lease_in

__all__ = ["INLINE_MAX_BYTES", "put", "put_in_tx", "rewrite_full"]

INLINE_MAX_BYTES = 256
"""Values that serialize to at most this many bytes are kept in the skeleton (a full skeleton,
written every 32 steps, repeats them, so this stays small). A value that names a large text is
never inline: its row must say so (``texts``)."""


def put(
    store: DeltaStore,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
) -> RunnableConfig:
    """``BaseCheckpointSaver.put``: store what changed since the parent checkpoint."""
    with store.tx():
        return put_in_tx(store, config, checkpoint, metadata, new_versions)


def put_in_tx(
    store: DeltaStore,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
) -> RunnableConfig:
    """The work of ``put`` inside a write transaction the caller holds."""
    thread_id, ns = thread_of(config)
    store.fence(thread_id, lease_in(config))
    parent_id: str | None = config["configurable"].get("checkpoint_id") or None
    meta = json.dumps(
        get_checkpoint_metadata(config, metadata), ensure_ascii=False, separators=(",", ":")
    )
    meta = meta.encode("utf-8", "ignore").decode("utf-8")
    tkey = cast(int, store.thread_key(thread_id, ns, create=True))
    cache = store.cache(tkey)
    parent = _parent(store, tkey, cache, parent_id)
    batch = Batch()
    skel = _skeleton_of(store, tkey, cache, batch, checkpoint, new_versions, parent)
    share_appended(store, tkey, cache, parent_id, batch)
    if batch.values:
        store.conn.executemany(
            "INSERT INTO delta_values (thread, id, type, value, lineage, length, texts) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            batch.values,
        )
    if batch.segments:
        store.conn.executemany(
            "INSERT INTO delta_segments (lineage, start, count, merged, type, items, texts) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            batch.segments,
        )
    for lineage in batch.merges:
        merge(store, lineage)
    cid = checkpoint["id"]
    if parent is not None and parent.depth < MAX_DIFF_DEPTH:
        skel.depth, full, form = parent.depth + 1, 0, diff_form(parent, skel)
    else:
        skel.depth, full, form = 0, 1, full_form(skel)
    _, blob, done = store.pack(form)
    texts = batch.named(done)
    if batch.texts:
        store.save_texts(batch.texts)
    row = (tkey, cid, parent_id, full, skel.depth, blob, meta, texts)
    sql = (
        "INTO delta_checkpoints (thread, checkpoint_id, parent_id, full, depth, skeleton, "
        "metadata, texts) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    )
    try:
        store.conn.execute("INSERT " + sql, row)
    except sqlite3.IntegrityError:  # the same id put again: it replaces the first
        _detach_children(store, tkey, cid)
        store.conn.execute("INSERT OR REPLACE " + sql, row)
    remember(cache, cid, skel)
    return tuple_config(thread_id, ns, cid)


def _parent(
    store: DeltaStore, tkey: int, cache: ThreadCache, parent_id: str | None
) -> Skeleton | None:
    """The parent's skeleton, or None when there is no parent row to diff against."""
    if not parent_id:
        return None
    if store.trusted and parent_id in cache.skeletons:
        return cache.skeletons[parent_id]
    exists = store.conn.execute(
        "SELECT 1 FROM delta_checkpoints WHERE thread = ? AND checkpoint_id = ?",
        (tkey, parent_id),
    ).fetchone()
    return skeleton(store, tkey, parent_id) if exists else None


def _skeleton_of(
    store: DeltaStore,
    tkey: int,
    cache: ThreadCache,
    batch: Batch,
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
            refs[ch] = _store_value(store, tkey, cache, batch, values[ch], old_refs.get(ch))
            if is_dict_view(refs[ch]):
                cache.dicts[ch] = refs[ch]
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


def _detach_children(store: DeltaStore, tkey: int, checkpoint_id: str) -> None:
    """Store the children of a checkpoint about to be replaced in full (they diff on it)."""
    children = store.conn.execute(
        "SELECT checkpoint_id FROM delta_checkpoints "
        "WHERE thread = ? AND parent_id = ? AND full = 0",
        (tkey, checkpoint_id),
    ).fetchall()
    for (child,) in children:
        rewrite_full(store, tkey, child, skeleton(store, tkey, child))
    store.cache(tkey).skeletons.pop(checkpoint_id, None)


def rewrite_full(store: DeltaStore, tkey: int, checkpoint_id: str, skel: Skeleton) -> None:
    """Store a checkpoint's skeleton in full, so it no longer depends on its parent."""
    _, blob, done = store.pack(full_form(skel))
    if done is not None:
        store.save_texts(done.texts)
    store.conn.execute(
        "UPDATE delta_checkpoints SET full = 1, depth = 0, skeleton = ?, texts = ? "
        "WHERE thread = ? AND checkpoint_id = ?",
        (blob, _texts.texts_column(done.hashes) if done else None, tkey, checkpoint_id),
    )
    cache = store.cached(tkey)
    if cache is not None and checkpoint_id in cache.skeletons:
        cache.skeletons[checkpoint_id].depth = 0


# Storing values --------------------------------------------------------------------------------
def _value_id(store: DeltaStore, tkey: int) -> int:
    """The next free value id of a thread (ids are per thread: rows cluster by thread)."""
    ref = store.next_value.get(tkey)
    if ref is None:
        row = store.conn.execute(
            "SELECT max(id) FROM delta_values WHERE thread = ?", (tkey,)
        ).fetchone()
        ref = int(row[0] or 0) + 1
    store.next_value[tkey] = ref + 1
    return ref


def _held(store: DeltaStore, tkey: int, cache: ThreadCache, ref: Ref) -> Held | None:
    found = cache.held.get(ref)
    if found is not None:
        return found
    if type(ref) is tuple:  # the reference says it all (only a list's items are unknown)
        if type(ref[0]) is int:
            return Held(ref[0], ref[1])
        return Held(None, 0, None, (ref[0], ref[1], None))
    row = store.conn.execute(
        "SELECT type, value, lineage, length, texts FROM delta_values WHERE thread = ? AND id = ?",
        (tkey, ref),
    ).fetchone()
    if row is None:
        return None
    if row[2] is not None:
        return Held(int(row[2]), int(row[3]))
    small = len(row[1] or b"") <= REUSE_MAX_BYTES
    return Held(None, 0, None, (row[0], row[1], row[4]) if small else None)


def _store_value(
    store: DeltaStore,
    tkey: int,
    cache: ThreadCache,
    batch: Batch,
    value: Any,
    prev_ref: Ref | None,
) -> Ref:
    """Store one channel value, or reuse or extend the previous one; returns its reference."""
    if type(value) is dict:
        # With LangGraph's "async" durability this put runs while the next node may edit this
        # very dict in place: work on a copy (one C call, atomic under the GIL), or iterating
        # it fails with "dictionary changed size during iteration".
        value = value.copy()
    if is_dict_view(prev_ref):
        if type(value) is dict:
            ref = store_dict_change(store, tkey, cache, batch, value, cast(tuple[Any], prev_ref))
            if ref is not None:
                return ref
        prev_ref = None  # a change log is no base for a list or a whole value
    prev = _held(store, tkey, cache, prev_ref) if prev_ref else None
    if type(value) is list:
        as_list = _store_list(store, tkey, cache, batch, value, prev_ref, prev)
        if as_list is not None:
            return as_list
    type_, blob, done = store.pack(value)
    texts = None if done is None else _texts.texts_column(done.hashes)
    packed = (type_, blob, texts)
    if prev is not None and prev.blob is not None and prev.blob == packed:
        return cast(Ref, prev_ref)
    if type(value) is dict and len(blob) >= DICT_MIN_BYTES and loggable(value):
        return start_dict(store, tkey, cache, batch, value)
    if texts is None and len(blob) <= INLINE_MAX_BYTES:
        return (type_, blob)
    ref = _value_id(store, tkey)
    batch.values.append((tkey, ref, type_, blob, None, None, batch.named(done)))
    cache.held[ref] = Held(None, 0, None, packed if len(blob) <= REUSE_MAX_BYTES else None)
    return ref


def _store_list(
    store: DeltaStore,
    tkey: int,
    cache: ThreadCache,
    batch: Batch,
    value: list[Any],
    prev_ref: Ref | None,
    prev: Held | None,
) -> Ref | None:
    """A list as the lineage it extends or a new one; None: a short list, stored whole."""
    if (
        prev is not None
        and prev.lineage is not None
        and len(value) >= prev.length
        and _extends(store, prev, value)
    ):
        if len(value) > prev.length:
            return append(store, tkey, cache, batch, prev, value)
        if prev.items is None or (store.check_edits and prev.shadow is None):
            # Vouched for by the stored bytes: hold it (and its snapshot) from now on.
            shadow = snapshot(value) if store.check_edits else None
            cache.held[cast(Ref, prev_ref)] = Held(prev.lineage, prev.length, value, None, shadow)
        return cast(Ref, prev_ref)
    if len(value) >= LINEAGE_MIN_ITEMS or (value and prev is not None and prev.lineage is not None):
        return new_lineage(store, tkey, cache, batch, value, None, 0)
    return None


def _comparable(store: DeltaStore, prev: Held) -> list[Any] | None:
    """What the cache compares ``prev``'s items with, or None when only the stored bytes can.

    That is their snapshot, or the items themselves when edits are not checked. Items read back
    have no snapshot yet (taking one per read would cost every reader), so when edits are
    checked the first put after a read compares with the stored bytes. A length that changed
    means someone appended to that list in place: then only the bytes can tell, too.
    """
    if prev.items is None or len(prev.items) != prev.length:
        return None
    if prev.shadow is not None:
        return prev.shadow
    return None if store.check_edits else prev.items


def _extends(store: DeltaStore, prev: Held, value: list[Any]) -> bool:
    """Whether ``value`` starts with exactly the items stored for ``prev``."""
    n = prev.length
    known = _comparable(store, prev)
    if known is None:
        return matches_stored(store, cast(int, prev.lineage), n, value)
    # The very objects stored (or handed out) for this value, not edited since: a pointer
    # comparison, then (edits checked) a comparison with their snapshot that runs in C.
    items = cast(list[Any], prev.items)
    if same_prefix(items, value, n):
        # The same objects: if they no longer equal their snapshot, one was edited in place.
        return known is items or unchanged(known, value, n)
    if known is not items:
        # Other objects, and the snapshot holds some items as their fields (``_identity``),
        # which their serialized form cannot be compared with: the stored bytes can.
        return matches_stored(store, cast(int, prev.lineage), n, value)
    dumps = store.serde.dumps_typed
    return all(dumps(a) == dumps(b) for a, b in zip(known, value, strict=False))
