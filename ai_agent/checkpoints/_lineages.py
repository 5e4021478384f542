"""List channels as lineages: items stored once, in segments, and lists that extend each other.

A list that grew by appending (the messages, the results, the trace) is stored as a *lineage*:
segments of items in ``delta_segments``, so a checkpoint names the list as ``(lineage, length)``
and a step that appended writes only the new items. A list that extends a prefix of a lineage
another branch grew past (a fork, time travel) starts a lineage of its own whose *base* is that
prefix. Small segments are merged into one chunk every `MERGE_AT` appends, so reading a list of
n appends touches about n/32 + 32 rows.

Functions over a `DeltaStore`, on its worker thread; the writing ones inside the caller's write
transaction, adding their rows to the put's `Batch`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from ai_agent.checkpoints import _texts
from ai_agent.checkpoints._identity import snapshot
from ai_agent.checkpoints._skeleton import Ref
from ai_agent.checkpoints._store import Batch, DeltaStore, Held, Packed, ReadMemo, ThreadCache
from ai_agent.errors import StoreError

__all__ = [
    "LINEAGE_MIN_ITEMS",
    "MERGE_AT",
    "append",
    "at_tip",
    "extend_lineage",
    "known_bases",
    "matches_stored",
    "merge",
    "new_lineage",
    "read_items",
    "read_range",
    "start_lineage",
]

MERGE_AT = 32
"""Small segments of a lineage are merged into one chunk when this many have accumulated."""

LINEAGE_MIN_ITEMS = 8
"""Lists shorter than this are stored whole (a lineage would cost more rows than it saves)."""


# Reading ---------------------------------------------------------------------------------------
def _base(store: DeltaStore, lineage: int) -> tuple[int | None, int]:
    """(base lineage, base length) of a list lineage."""
    found = store.bases.get(lineage)
    if found is None:
        row = store.conn.execute(
            "SELECT base, base_length, thread FROM delta_lineages WHERE id = ?", (lineage,)
        ).fetchone()
        if row is None:
            raise StoreError(f"list lineage {lineage} is missing from the checkpoint database")
        found = store.bases[lineage] = (row[0], int(row[1]), int(row[2]))
    return found[0], found[1]


_INT64 = -(1 << 63)
"""The least integer SQLite binds (``-_INT64`` is one past the greatest)."""


def known_bases(store: DeltaStore, lineages: Iterable[Any]) -> None:
    """Read the rows of several lineages a checkpoint names in one statement, not one each.

    Only what `_base` would read, for ids SQLite can bind; whatever is wrong with a row (or a
    missing one) is still found, and said, by `_base` and `_owned` when the list is read.
    """
    missing = sorted(
        {n for n in lineages if type(n) is int and _INT64 <= n < -_INT64 and n not in store.bases}
    )
    if len(missing) < 2:  # one is `_base`'s own statement
        return
    for i in range(0, len(missing), 500):
        chunk = missing[i : i + 500]
        marks = ",".join("?" * len(chunk))
        for lineage, base, base_length, thread in store.conn.execute(
            f"SELECT id, base, base_length, thread FROM delta_lineages WHERE id IN ({marks})",  # noqa: S608 - placeholders only
            chunk,
        ):
            if type(base_length) is int and type(thread) is int:  # else `_base` says what is wrong
                store.bases[lineage] = (base, base_length, thread)


def _owned(store: DeltaStore, lineage: int, owner: int) -> None:
    """Check that a list lineage is one of thread key ``owner``'s (each thread has its own).

    A reference edited to name another run's lineage would otherwise read that run's items as
    this run's, with no sign anything is wrong.
    """
    _base(store, lineage)
    if store.bases[lineage][2] != owner:
        raise StoreError(
            f"list lineage {lineage} belongs to another thread; the checkpoint database was "
            "changed by something other than ai-agent"
        )


def _pieces(store: DeltaStore, lineage: int, length: int, owner: int) -> list[tuple[int, int]]:
    """(lineage, end) pieces whose segments make up the first ``length`` items, oldest first.

    A forked lineage holds only what came after the fork; the items before it are read from
    the lineage it forked from (and so on down), all of the thread with key ``owner``.
    """
    pieces: list[tuple[int, int]] = []
    current: int | None = lineage
    end = length
    while current is not None:
        _owned(store, current, owner)
        # A base edited to point back at the lineage (or at one above it) would loop forever.
        if any(current == seen for seen, _ in pieces):
            raise StoreError(
                f"list lineage {lineage} is forked from itself through lineage {current}; "
                "the checkpoint database was changed by something other than ai-agent"
            )
        pieces.append((current, end))
        base, base_length = _base(store, current)
        current, end = (base, min(base_length, end)) if base is not None else (None, 0)
        if end == 0:
            current = None
    pieces.reverse()
    return pieces


def read_items(
    store: DeltaStore, lineage: int, length: int, memo: ReadMemo | None = None, *, owner: int
) -> list[Any]:
    """The first ``length`` items of a list lineage of the thread with key ``owner``."""
    _owned(store, lineage, owner)  # before the memo: a ``list`` shares it between threads
    if memo is not None:
        known = memo.lineages.get(lineage)
        if known is not None and len(known) >= length:
            return known[:length]
    items: list[Any] = []
    found = memo.texts if memo is not None else None
    for piece, end in _pieces(store, lineage, length, owner):
        rows = store.conn.execute(
            "SELECT type, items, texts FROM delta_segments "
            "WHERE lineage = ? AND start < ? ORDER BY start",
            (piece, end),
        ).fetchall()
        for type_, blob, texts in rows:
            items.extend(store.unpack(type_, blob, texts, found))
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


def read_range(
    store: DeltaStore,
    lineage: int,
    start: int,
    count: int,
    memo: ReadMemo | None = None,
    *,
    owner: int,
) -> list[Any]:
    """Items ``start`` to ``start + count`` of a list lineage, from only the segments holding them.

    What a task's write stored as the items a list was extended with names (``_writes``).
    """
    _owned(store, lineage, owner)
    end = start + count
    if memo is not None:
        known = memo.lineages.get(lineage)
        if known is not None and len(known) >= end:
            return known[start:end]
    found = memo.texts if memo is not None else None
    out: list[Any] = []
    low = 0  # a piece holds the items from where the one before it ended
    for piece, high in _pieces(store, lineage, end, owner):
        first, last = max(low, start), high  # ``high`` is at most ``end``
        low = high
        if first >= last:
            continue
        rows = store.conn.execute(
            "SELECT start, count, type, items, texts FROM delta_segments "
            "WHERE lineage = ? AND start < ? AND start + count > ? ORDER BY start",
            (piece, last, first),
        ).fetchall()
        for at, n, type_, blob, texts in rows:
            part = store.unpack(type_, blob, texts, found)
            out.extend(part[max(first - at, 0) : min(last, at + n) - at])
    if len(out) != count:
        raise StoreError(
            f"list lineage {lineage} does not hold items {start} to {end} a task's write "
            "names; the checkpoint database was changed by something other than ai-agent"
        )
    return out


def matches_stored(store: DeltaStore, lineage: int, length: int, value: list[Any]) -> bool:
    """Compare a prefix with the stored bytes, one encode per segment (a cold cache)."""
    _base(store, lineage)  # a lineage this thread holds (a reference read back, or written)
    for piece, end in _pieces(store, lineage, length, store.bases[lineage][2]):
        rows = store.conn.execute(
            "SELECT start, count, type, items, texts FROM delta_segments "
            "WHERE lineage = ? AND start < ? ORDER BY start",
            (piece, end),
        ).fetchall()
        for start, count, type_, blob, texts in rows:
            if start + count <= end:
                if _packed(store, value[start : start + count], texts) != (type_, blob, texts):
                    return False
            else:  # the segment runs past the prefix: compare the part inside it
                stored = store.loads(type_, blob)[: end - start]  # marks: compare them
                part = value[start:end]
                if texts is not None:
                    part = _texts.cut(part).value
                if store.serde.dumps_typed(stored) != store.serde.dumps_typed(part):
                    return False
    return True


def _packed(store: DeltaStore, items: list[Any], texts: str | None) -> Packed:
    """``items`` as a segment stores them: packed if ``texts`` says the segment was."""
    if texts is None:
        return (*store.serde.dumps_typed(items), None)
    type_, blob, done = store.pack(items)
    return type_, blob, None if done is None else _texts.texts_column(done.hashes)


# Writing ---------------------------------------------------------------------------------------
def _tip(store: DeltaStore, lineage: int) -> int:
    """How many items a lineage holds (the end of its last segment)."""
    if store.trusted and lineage in store.tips:
        return store.tips[lineage]
    row = store.conn.execute(
        "SELECT start + count FROM delta_segments WHERE lineage = ? ORDER BY start DESC LIMIT 1",
        (lineage,),
    ).fetchone()
    return int(row[0]) if row else _base(store, lineage)[1]


def append(
    store: DeltaStore, tkey: int, cache: ThreadCache, batch: Batch, prev: Held, value: list[Any]
) -> Ref:
    """Store ``value``, which extends the list ``prev`` holds: only its new items are written."""
    lineage, n = cast(int, prev.lineage), prev.length
    if _tip(store, lineage) != n:  # another branch grew this lineage past n: fork from it
        return new_lineage(store, tkey, cache, batch, value, lineage, n)
    extend_lineage(store, batch, lineage, n, value[n:])
    return _list_view(store, cache, lineage, value, prev)


def at_tip(store: DeltaStore, lineage: int, length: int) -> bool:
    """Whether ``length`` items are all a lineage holds (else another branch grew it since)."""
    return _tip(store, lineage) == length


def extend_lineage(store: DeltaStore, batch: Batch, lineage: int, n: int, items: list[Any]) -> None:
    """Add ``items`` after the ``n`` a lineage holds (a segment; merged every `MERGE_AT`)."""
    type_, blob, done = store.pack(items)
    batch.segments.append((lineage, n, len(items), 0, type_, blob, batch.named(done)))
    if done is None and type_ == "msgpack":
        batch.appended.append((lineage, n, items, blob))
    store.tips[lineage] = n + len(items)
    small = store.unmerged.get(lineage)
    if small is None:
        row = store.conn.execute(
            "SELECT count(*) FROM delta_segments INDEXED BY delta_segments_unmerged "
            "WHERE lineage = ? AND merged = 0",
            (lineage,),
        ).fetchone()
        small = int(row[0])
    small += 1
    if small >= MERGE_AT:
        batch.merges.append(lineage)
        small = 0
    store.unmerged[lineage] = small


def merge(store: DeltaStore, lineage: int) -> None:
    """Fold the small segments at a lineage's tail into one chunk (fewer rows to read)."""
    rows = store.conn.execute(
        "SELECT start, type, items, texts FROM delta_segments INDEXED BY delta_segments_unmerged "
        "WHERE lineage = ? AND merged = 0 ORDER BY start",
        (lineage,),
    ).fetchall()
    if len(rows) < 2:
        return
    store.conn.execute(
        "DELETE FROM delta_segments INDEXED BY delta_segments_unmerged "
        "WHERE lineage = ? AND merged = 0",
        (lineage,),
    )
    items, hashes = _merged(store, rows)
    if hashes is None:
        type_, blob, done = store.pack(items)
        texts = None
        if done is not None:
            store.save_texts(done.texts)
            texts = _texts.texts_column(done.hashes)
    else:
        type_, blob = store.serde.dumps_typed(items)
        texts = _texts.texts_column(sorted(hashes))
    store.conn.execute(
        "INSERT INTO delta_segments (lineage, start, count, merged, type, items, texts) "
        "VALUES (?, ?, ?, 1, ?, ?, ?)",
        (lineage, rows[0][0], len(items), type_, blob, texts),
    )


def _merged(store: DeltaStore, rows: list[tuple[Any, ...]]) -> tuple[list[Any], set[str] | None]:
    """The items of segments to merge, and the texts they name (None: they name none).

    When some of them name texts, the merged segment will, so the items of the others are
    taken through ``_texts.cut`` as well: a string of theirs that merely looks like a mark
    would otherwise be read as one.
    """
    named = any(texts is not None for *_, texts in rows)
    hashes: set[str] = set()
    items: list[Any] = []
    for _, type_, blob, texts in rows:
        part = store.loads(type_, blob)
        if texts is not None:
            hashes.update(_texts.listed(texts))
        elif named:
            done = _texts.cut(part)
            store.save_texts(done.texts)
            hashes.update(done.texts)
            part = done.value
        items.extend(part)
    return items, hashes if named else None


def new_lineage(
    store: DeltaStore,
    tkey: int,
    cache: ThreadCache,
    batch: Batch,
    value: list[Any],
    base: int | None,
    base_length: int,
) -> Ref:
    """Store ``value`` as a new lineage (forked from ``base``'s first ``base_length`` items)."""
    lineage = start_lineage(store, tkey, batch, value[base_length:], base, base_length)
    return _list_view(store, cache, lineage, value)


def start_lineage(
    store: DeltaStore,
    tkey: int,
    batch: Batch,
    items: list[Any],
    base: int | None,
    base_length: int,
) -> int:
    """A new lineage: ``base``'s first ``base_length`` items (if any base), then ``items``."""
    lineage = cast(
        int,
        store.conn.execute(
            "INSERT INTO delta_lineages (thread, base, base_length) VALUES (?, ?, ?)",
            (tkey, base, base_length),
        ).lastrowid,
    )
    store.bases[lineage] = (base, base_length, tkey)
    type_, blob, done = store.pack(items)
    batch.segments.append((lineage, base_length, len(items), 1, type_, blob, batch.named(done)))
    if done is None and type_ == "msgpack":
        batch.appended.append((lineage, base_length, items, blob))
    store.tips[lineage] = base_length + len(items)
    store.unmerged[lineage] = 0
    return lineage


def _list_view(
    store: DeltaStore, cache: ThreadCache, lineage: int, value: list[Any], prev: Held | None = None
) -> Ref:
    ref = (lineage, len(value))
    shadow: list[Any] | None = None
    if not store.check_edits:
        pass
    elif prev is not None and prev.shadow is not None and len(prev.shadow) == prev.length:
        # An append snapshots only its new items: the prefix's snapshot was just compared equal.
        shadow = [*prev.shadow, *snapshot(value[prev.length :])]
    else:
        shadow = snapshot(value)
    cache.held[ref] = Held(lineage, len(value), value, shadow=shadow)
    return ref
