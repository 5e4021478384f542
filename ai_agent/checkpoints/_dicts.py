"""Dict channels as change logs: a step that changes a few keys stores those keys, not the dict.

A plain LangGraph graph often keeps a ``dict`` in its state and edits it in place (adds an entry,
bumps a field of an old one) and returns it. Stored whole at every change, such a dict cost each
step its whole size, so a run's storage and time grew with the square of its length. From format
4, a ``dict`` with ``str`` keys that serializes to `DICT_MIN_BYTES` or more is stored as a *change
log*: a lineage (``_lineages``: the same segments, merges and forks as a list) whose items are
records, ``[key, value]`` for a key set and ``[key]`` for a key removed. A checkpoint names the
dict as ``(lineage, length, "d")``: the dict its first ``length`` records build. A step writes
only the records of the keys whose value changed.

    delta_segments   lineage 9: [["doc0", {...}], ["doc1", {...}]] | [["doc2", {...}]] | ...
    skeleton refs    {"docs": [9, 3, "d"]}       the dict the first 3 records build

Which keys changed: the saver holds a snapshot of each value it stored (``Held.keys``; see
``_identity``: copies of the containers around the same immutable leaves), so a value edited in
place since differs from it; one comparison per key, which runs in C for plain data. With
``check_edits`` off (the engine: its stages return new values) a key changed when its value is
another object. When nothing is held (after a read, or another process wrote the file), the dict
is compared with the stored one by the serialized bytes of each value.

Reads stay proportional to the dict: when a log holds more than twice as many records as the dict
has keys plus `COMPACT_SLACK`, the dict is written again as a new log of its keys (a rewrite of n
keys comes after at least n + slack changes, so it at most doubles what the changes cost).
Records keep the order of the keys; a key that was removed and set again in one step keeps its
old place (the dict is equal, its iteration order may differ).
"""

from __future__ import annotations

from typing import Any, cast

from ai_agent.checkpoints._identity import fields_of, snapshot_item
from ai_agent.checkpoints._lineages import at_tip, extend_lineage, read_items, start_lineage
from ai_agent.checkpoints._skeleton import Ref
from ai_agent.checkpoints._store import Batch, DeltaStore, Held, ReadMemo, ThreadCache
from ai_agent.errors import StoreError

__all__ = [
    "CHANGES_TYPE",
    "COMPACT_SLACK",
    "DICT_MIN_BYTES",
    "DICT_TAG",
    "applied",
    "changes_since",
    "is_dict_view",
    "loggable",
    "read_dict",
    "start_dict",
    "store_dict_change",
]

DICT_TAG = "d"
"""The third element of a dict's reference, ``(lineage, length, "d")``."""

DICT_MIN_BYTES = 1024
"""A dict that serializes to fewer bytes is stored whole (a log would cost more rows)."""

COMPACT_SLACK = 64
"""Records a log may hold beyond twice its dict's keys before the dict is written anew."""

CHANGES_TYPE = "ai-agent:dict-changes"
"""The type of a task write stored as the changes to a dict log (`changes_since`)."""

_MISSING = object()


def is_dict_view(ref: Ref | None) -> bool:
    """Whether a reference names a dict's change log."""
    return type(ref) is tuple and len(ref) == 3


def read_dict(
    store: DeltaStore, lineage: int, length: int, memo: ReadMemo | None = None, *, owner: int
) -> dict[str, Any]:
    """The dict the first ``length`` records of a change log of thread key ``owner`` build.

    Raises:
        StoreError: a record is not ``[key, value]`` or ``[key]`` with a str key.
    """
    out: dict[str, Any] = {}
    for record in read_items(store, lineage, length, memo, owner=owner):
        _apply(out, record, lineage)
    return out


def _apply(out: dict[str, Any], record: Any, lineage: int) -> None:
    if type(record) is not list or type(record[0] if record else None) is not str:
        raise StoreError(f"a change record of dict log {lineage} is not [key, value]")
    if len(record) == 2:
        out[record[0]] = record[1]
    elif len(record) == 1:
        out.pop(record[0], None)
    else:
        raise StoreError(f"a change record of dict log {lineage} has {len(record)} parts")


def loggable(value: dict[Any, Any]) -> bool:
    """Whether a dict can be a change log: every key a str (records name keys as msgpack str)."""
    return all(type(key) is str for key in value)


def start_dict(
    store: DeltaStore, tkey: int, cache: ThreadCache, batch: Batch, value: dict[str, Any]
) -> Ref:
    """Store ``value`` as a new change log holding each of its keys once."""
    records = [[key, item] for key, item in value.items()]
    lineage = start_lineage(store, tkey, batch, records, None, 0)
    return _hold(cache, lineage, len(records), _snapshot(store, value))


def store_dict_change(
    store: DeltaStore,
    tkey: int,
    cache: ThreadCache,
    batch: Batch,
    value: dict[Any, Any],
    prev_ref: tuple[Any, ...],
) -> Ref | None:
    """Store ``value`` as what changed since the dict ``prev_ref`` names; None: store it whole.

    Whole means a key that is not a str appeared: the dict can no longer be a log.
    """
    lineage, n = cast(int, prev_ref[0]), cast(int, prev_ref[1])
    held = cache.held.get(prev_ref)
    keys = held.keys if held is not None else None
    if keys is None:
        keys = _stored_snapshot(store, tkey, lineage, n, value)
    changed, removed = _changes(keys, value, deep=store.check_edits)
    if not all(type(key) is str for key in changed):
        return None
    if not changed and not removed:
        if held is None or held.keys is None:
            cache.held[prev_ref] = Held(lineage, n, keys=keys)
        return cast(Ref, prev_ref)
    length = n + len(changed) + len(removed)
    if length > 2 * len(value) + COMPACT_SLACK:
        return start_dict(store, tkey, cache, batch, value)
    records: list[list[Any]] = [[key, value[key]] for key in changed]
    records += [[key] for key in removed]
    if at_tip(store, lineage, n):
        extend_lineage(store, batch, lineage, n, records)
    else:  # another branch grew this log past n (time travel): fork from its first n records
        lineage = start_lineage(store, tkey, batch, records, lineage, n)
    fresh = dict(keys)
    for key in removed:
        del fresh[key]
    deep = store.check_edits
    for key in changed:
        fresh[key] = snapshot_item(value[key]) if deep else value[key]
    return _hold(cache, lineage, length, fresh)


def _hold(cache: ThreadCache, lineage: int, length: int, keys: dict[str, Any]) -> Ref:
    ref = (lineage, length, DICT_TAG)
    cache.held[ref] = Held(lineage, length, keys=keys)
    return ref


def _snapshot(store: DeltaStore, value: dict[str, Any]) -> dict[str, Any]:
    if store.check_edits:
        return {key: snapshot_item(item) for key, item in value.items()}
    return dict(value)


def _changes(
    keys: dict[str, Any], value: dict[Any, Any], *, deep: bool
) -> tuple[list[Any], list[str]]:
    """(keys set or changed, in the dict's order; keys removed) from ``keys`` to ``value``."""
    get = keys.get
    if deep:
        # Once per key and step: plain data is its own snapshot's shape, so the first
        # comparison, in C, settles nearly every key; an object is compared by its fields.
        changed = [
            key
            for key, item in value.items()
            if (known := get(key, _MISSING)) is _MISSING
            or (known != item and known != fields_of(item))
        ]
    else:
        changed = [key for key, item in value.items() if get(key, _MISSING) is not item]
    added = sum(1 for key in changed if key not in keys)
    if len(keys) == len(value) - added:
        return changed, []
    return changed, [key for key in keys if key not in value]


def _stored_snapshot(
    store: DeltaStore, tkey: int, lineage: int, n: int, value: dict[Any, Any]
) -> dict[str, Any]:
    """What to compare ``value`` with when nothing is held: the stored dict, by its bytes.

    A key whose stored value serializes like the live one keeps the live value's snapshot (it
    compares equal); any other keeps a marker no value equals, so it is written again.
    """
    stored = read_dict(store, lineage, n, owner=tkey)
    dumps = store.serde.dumps_typed
    deep = store.check_edits
    keys: dict[str, Any] = {}
    for key, item in stored.items():
        live = value.get(key, _MISSING)
        if live is not _MISSING and dumps(live) == dumps(item):
            keys[key] = snapshot_item(live) if deep else live
        else:
            keys[key] = _MISSING
    return keys


# Task writes ----------------------------------------------------------------------------------
# A task that edits a dict channel in place writes the whole dict (LangGraph's write is the
# value the node returned). Stored whole, every such write cost the dict's size again; so when
# this process holds the snapshot of a change log it stored for that channel (``ThreadCache.
# dicts``: the newest), the write is stored as its changes from that dict: ``[lineage, length,
# records]`` under the type `CHANGES_TYPE`. Not necessarily the log of the write's own
# checkpoint: with LangGraph's "async" durability a task may write before that checkpoint is
# stored. A prune keeps what such writes are read against (``_maintenance``).


def changes_since(
    store: DeltaStore, thread_id: str, ns: str, channel: str, value: Any
) -> list[Any] | None:
    """A dict written to ``channel`` as ``[lineage, length, records]``; None: store it whole.

    Called where the saver is called (any thread): it reads only what this process holds,
    never the database, and each thing it reads is replaced, never changed, by the worker.
    """
    if type(value) is not dict:
        return None
    cache = store.cached_thread(thread_id, ns)
    ref = cache.dicts.get(channel) if cache is not None else None
    held = cache.held.get(ref) if cache is not None and ref is not None else None
    if held is None or held.keys is None or held.lineage is None:
        return None
    # With LangGraph's "async" durability the next node may already be editing this very dict
    # in place on another thread: iterate a copy (one C call, atomic under the GIL), or the
    # write fails with "dictionary changed size during iteration".
    value = value.copy()
    changed, removed = _changes(held.keys, value, deep=store.check_edits)
    if not all(type(key) is str for key in changed):
        return None
    records: list[list[Any]] = [[key, value[key]] for key in changed]
    records += [[key] for key in removed]
    return [held.lineage, held.length, records]


def applied(
    store: DeltaStore, changes: Any, memo: ReadMemo | None = None, *, owner: int
) -> dict[str, Any]:
    """The dict a write stored by `changes_since` holds (a write of thread key ``owner``).

    Raises:
        StoreError: the write is not ``[lineage, length, records]``.
    """
    if type(changes) is not list or len(changes) != 3:
        raise StoreError("a dict write is not [lineage, length, records]")
    lineage, length, records = changes
    if type(lineage) is not int or type(length) is not int or type(records) is not list:
        raise StoreError("a dict write is not [lineage, length, records]")
    out = read_dict(store, lineage, length, memo, owner=owner)
    for record in records:
        _apply(out, record, lineage)
    return out
