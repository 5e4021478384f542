"""Maintenance of the delta tables: pruning, deleting runs, copying threads, reclaiming space.

These run on the saver's worker thread like every other store call. The one rule they keep:
deleting checkpoints never breaks reading the ones that stay. A kept checkpoint stored as a diff
against a deleted one is rewritten in full first, and a value, lineage or segment is deleted only
when no kept checkpoint can reach it (a list lineage stays as long as the longest kept view of
it, or of a lineage forked from it, needs it). A large text is deleted when no row of the file
names it any more (``DeltaStore.sweep_texts``), once per transaction that deleted rows; a copy
names the same texts as its source.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from ai_agent.checkpoints._dicts import CHANGES_TYPE
from ai_agent.checkpoints._puts import rewrite_full
from ai_agent.checkpoints._reads import skeleton
from ai_agent.checkpoints._skeleton import EMPTY, is_view
from ai_agent.checkpoints._store import BUSY_TIMEOUT_SECONDS, DeltaStore, ReadMemo
from ai_agent.checkpoints._writes import DICT_VIEW_TYPE, ITEMS_TYPE
from ai_agent.errors import StoreError

__all__ = [
    "PruneStats",
    "copy_thread",
    "delete_checkpoints",
    "delete_for_runs",
    "delete_thread",
    "keep_for",
    "prune",
    "reclaim",
]


@dataclass(frozen=True, slots=True)
class PruneStats:
    """What a prune removed.

    Attributes:
        checkpoints: Checkpoints deleted.
        values: Stored channel values deleted.
        segments: List segments deleted (whole lineages, and tails no kept checkpoint reads).
        bytes_before: Size of the database file and its WAL before.
        bytes_after: Size after (smaller once the space was reclaimed).
    """

    checkpoints: int
    values: int
    segments: int
    bytes_before: int
    bytes_after: int


def delete_checkpoints(store: DeltaStore, tkey: int, doomed: set[str]) -> tuple[int, int, int]:
    """Delete checkpoints of one thread key and what only they used; inside a transaction.

    Returns:
        (checkpoints, values, segments) deleted.
    """
    conn = store.conn
    rows = conn.execute(
        "SELECT checkpoint_id, parent_id, full FROM delta_checkpoints WHERE thread = ?", (tkey,)
    ).fetchall()
    parent = {r[0]: r[1] for r in rows}
    full = {r[0]: bool(r[2]) for r in rows}
    doomed &= set(parent)
    memo = ReadMemo()
    kept = {cid: skeleton(store, tkey, cid, memo) for cid in sorted(parent) if cid not in doomed}
    for cid, skel in kept.items():
        node: str | None = cid
        while node is not None and not full.get(node, True):
            node = parent.get(node)
            if node in doomed:
                rewrite_full(store, tkey, cid, skel)
                break
    conn.executemany(
        "DELETE FROM delta_checkpoints WHERE thread = ? AND checkpoint_id = ?",
        [(tkey, cid) for cid in doomed],
    )
    conn.executemany(
        "DELETE FROM delta_writes WHERE thread = ? AND checkpoint_id = ?",
        [(tkey, cid) for cid in doomed],
    )
    store.reset()  # the thread's cached skeletons and held values may name deleted rows
    refs = [r for skel in kept.values() for r in skel.refs.values()]
    live = {r for r in refs if type(r) is int and r != EMPTY}
    views = [(r[0], r[1]) for r in refs if type(r) is tuple and is_view(r)]
    views += _write_bases(store, tkey)
    values, segments = _collect(store, tkey, live, views)
    return len(doomed), values, segments


def _write_bases(store: DeltaStore, tkey: int) -> list[tuple[int, int]]:
    """The (lineage, length) views kept writes read.

    Those are the dict logs their changes are read against, and (format 5) the list items and
    dict logs they name (``_writes.share_appended``).
    """
    bases: list[tuple[int, int]] = []
    for (stored,) in store.conn.execute(
        "SELECT writes FROM delta_writes WHERE thread = ?", (tkey,)
    ).fetchall():
        for entry in store.loads("msgpack", stored):
            if entry[2] in (CHANGES_TYPE, DICT_VIEW_TYPE):
                lineage, length = store.loads("msgpack", entry[3])[:2]
                bases.append((int(lineage), int(length)))
            elif entry[2] == ITEMS_TYPE:
                lineage, start, count = store.loads("msgpack", entry[3])
                bases.append((int(lineage), int(start) + int(count)))
    return bases


def _collect(
    store: DeltaStore, tkey: int, live: set[int], views: list[tuple[int, int]]
) -> tuple[int, int]:
    """Delete the values, lineages and segments of a thread key that no kept checkpoint reads.

    ``live`` are the value rows kept checkpoints name, ``views`` the (lineage, length) lists
    their skeletons hold themselves.
    """
    conn = store.conn
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS delta_live (id INTEGER PRIMARY KEY)")
    conn.execute("DELETE FROM delta_live")
    conn.executemany("INSERT INTO delta_live (id) VALUES (?)", [(r,) for r in live])
    values = conn.execute(
        "DELETE FROM delta_values WHERE thread = ? AND id NOT IN (SELECT id FROM delta_live)",
        (tkey,),
    ).rowcount
    conn.execute("DELETE FROM delta_live")
    needed: dict[int, int] = {
        int(lineage): int(length)
        for lineage, length in conn.execute(
            "SELECT lineage, max(length) FROM delta_values "
            "WHERE thread = ? AND lineage IS NOT NULL GROUP BY lineage",
            (tkey,),
        )
    }
    for lineage, length in views:
        needed[lineage] = max(needed.get(lineage, 0), length)
    lineages = conn.execute(
        "SELECT id, base, base_length FROM delta_lineages WHERE thread = ? ORDER BY id DESC",
        (tkey,),
    ).fetchall()
    for lineage, base, base_length in lineages:  # forks first: a base is older than its forks
        if lineage in needed and base is not None:
            needed[base] = max(needed.get(base, 0), min(base_length, needed[lineage]))
    segments = 0
    for lineage, _, _ in lineages:
        if lineage not in needed:
            segments += conn.execute(
                "DELETE FROM delta_segments WHERE lineage = ?", (lineage,)
            ).rowcount
            conn.execute("DELETE FROM delta_lineages WHERE id = ?", (lineage,))
        else:  # items past the longest view still needed are unreachable
            segments += conn.execute(
                "DELETE FROM delta_segments WHERE lineage = ? AND start >= ?",
                (lineage, needed[lineage]),
            ).rowcount
    return values, segments


def keep_for(strategy: str) -> int:
    """How many checkpoints LangGraph's prune strategy keeps per namespace."""
    if strategy == "keep_latest":
        return 1
    if strategy == "delete":
        return 0
    raise ValueError(f"unknown prune strategy {strategy!r}; use 'keep_latest' or 'delete'")


def prune(
    store: DeltaStore, thread_id: str, keep: int | Sequence[str], checkpoint_ns: str | None
) -> tuple[int, int, int]:
    """Keep the ``keep`` newest checkpoints (or exactly the ids given) of each namespace."""
    totals = [0, 0, 0]
    with store.tx() as conn:
        keys = conn.execute(
            "SELECT id, checkpoint_ns FROM delta_threads WHERE thread_id = ?", (thread_id,)
        ).fetchall()
        for tkey, ns in keys:
            if checkpoint_ns is not None and ns != checkpoint_ns:
                continue
            ids = [
                r[0]
                for r in conn.execute(
                    "SELECT checkpoint_id FROM delta_checkpoints WHERE thread = ? "
                    "ORDER BY checkpoint_id DESC",
                    (tkey,),
                )
            ]
            kept = set(ids[: max(keep, 0)]) if isinstance(keep, int) else set(keep)
            doomed = {cid for cid in ids if cid not in kept}
            if doomed:
                for i, n in enumerate(delete_checkpoints(store, tkey, doomed)):
                    totals[i] += n
        if totals[0]:
            store.sweep_texts()
    return totals[0], totals[1], totals[2]


def delete_for_runs(store: DeltaStore, run_ids: Sequence[str]) -> None:
    """Delete the checkpoints whose metadata ``run_id`` is one of ``run_ids``."""
    if not run_ids:
        return
    marks = ",".join("?" * len(run_ids))
    with store.tx() as conn:
        rows = conn.execute(
            "SELECT thread, checkpoint_id FROM delta_checkpoints "  # noqa: S608 - placeholders only
            f"WHERE json_extract(metadata, '$.run_id') IN ({marks})",
            list(run_ids),
        ).fetchall()
        doomed: dict[int, set[str]] = {}
        for tkey, cid in rows:
            doomed.setdefault(int(tkey), set()).add(cid)
        for tkey, ids in doomed.items():
            delete_checkpoints(store, tkey, ids)
        if doomed:
            store.sweep_texts()


def delete_thread(store: DeltaStore, thread_id: str) -> None:
    """``BaseCheckpointSaver.delete_thread``: every namespace of the thread."""
    with store.tx():
        keys = [
            r[0]
            for r in store.conn.execute(
                "SELECT id FROM delta_threads WHERE thread_id = ?", (thread_id,)
            )
        ]
        for tkey in keys:
            _delete_rows(store, tkey)
        if keys:
            store.sweep_texts()
    store.forget_thread(thread_id)


def _delete_rows(store: DeltaStore, tkey: int) -> None:
    """Delete every row of one thread key."""
    conn = store.conn
    for (lineage,) in conn.execute(
        "SELECT id FROM delta_lineages WHERE thread = ?", (tkey,)
    ).fetchall():
        conn.execute("DELETE FROM delta_segments WHERE lineage = ?", (lineage,))
        store.forget_lineage(lineage)
    for table in ("delta_lineages", "delta_values", "delta_checkpoints", "delta_writes"):
        conn.execute(f"DELETE FROM {table} WHERE thread = ?", (tkey,))  # noqa: S608 - fixed names
    conn.execute("DELETE FROM delta_threads WHERE id = ?", (tkey,))


def reclaim(store: DeltaStore) -> None:
    """Give freed pages back to the file system and empty the WAL."""
    conn = store.conn
    store.busy_timeout(BUSY_TIMEOUT_SECONDS)  # the WAL thread may be checkpointing: wait for it
    if conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2:  # incremental
        conn.execute("PRAGMA incremental_vacuum").fetchall()
    else:  # a file someone else created first: switch it over once (VACUUM applies it)
        conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
        conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()


def copy_thread(store: DeltaStore, source: str, target: str) -> None:
    """Copy every namespace of a thread, with its whole history, to a new thread id.

    Raises:
        StoreError: the target thread already exists.
    """
    with store.tx() as conn:
        if conn.execute("SELECT 1 FROM delta_threads WHERE thread_id = ?", (target,)).fetchone():
            raise StoreError(f"thread {target} already exists; pick a new thread id")
        keys = conn.execute(
            "SELECT id, checkpoint_ns FROM delta_threads WHERE thread_id = ?", (source,)
        ).fetchall()
        for tkey, ns in keys:
            _copy_key(store, int(tkey), cast(int, store.thread_key(target, ns, create=True)))
    store.reset()  # ids were assigned outside the cached counters


def _copy_key(store: DeltaStore, src: int, dst: int) -> None:
    conn = store.conn
    lineage_map: dict[int, int] = {}
    for lineage, base, base_length in conn.execute(
        "SELECT id, base, base_length FROM delta_lineages WHERE thread = ? ORDER BY id", (src,)
    ).fetchall():
        new_base = lineage_map[base] if base is not None else None
        lineage_map[lineage] = cast(
            int,
            conn.execute(
                "INSERT INTO delta_lineages (thread, base, base_length) VALUES (?, ?, ?)",
                (dst, new_base, base_length),
            ).lastrowid,
        )
        conn.execute(
            "INSERT INTO delta_segments (lineage, start, count, merged, type, items, texts) "
            "SELECT ?, start, count, merged, type, items, texts FROM delta_segments "
            "WHERE lineage = ?",
            (lineage_map[lineage], lineage),
        )
    # Value ids are per thread, so the copy keeps them (and the skeletons that name them).
    for ref, type_, blob, lineage, length, texts in conn.execute(
        "SELECT id, type, value, lineage, length, texts FROM delta_values WHERE thread = ?", (src,)
    ).fetchall():
        conn.execute(
            "INSERT INTO delta_values (thread, id, type, value, lineage, length, texts) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (dst, ref, type_, blob, lineage_map[lineage] if lineage else None, length, texts),
        )
    # Skeletons name their list views by lineage id, and lineage ids are global: remap them.
    # (A skeleton that names texts is remapped with its marks as they are: the same texts.)
    for cid, parent_id, full, depth, stored, metadata, texts in conn.execute(
        "SELECT checkpoint_id, parent_id, full, depth, skeleton, metadata, texts "
        "FROM delta_checkpoints WHERE thread = ?",
        (src,),
    ).fetchall():
        blob = stored
        data = store.loads("msgpack", stored)
        refs = data.get("r", {})
        if any(type(r) is list and type(r[0]) is int for r in refs.values()):
            data["r"] = {
                ch: [lineage_map[r[0]], *r[1:]] if type(r) is list and type(r[0]) is int else r
                for ch, r in refs.items()
            }
            blob = store.serde.dumps_typed(data)[1]
        conn.execute(
            "INSERT INTO delta_checkpoints (thread, checkpoint_id, parent_id, full, depth, "
            "skeleton, metadata, texts) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (dst, cid, parent_id, full, depth, blob, metadata, texts),
        )
    # Writes stored as a dict's changes, or as list items (format 5), name lineages too.
    for cid, task_id, task_path, stored, texts in conn.execute(
        "SELECT checkpoint_id, task_id, task_path, writes, texts FROM delta_writes "
        "WHERE thread = ?",
        (src,),
    ).fetchall():
        conn.execute(
            "INSERT INTO delta_writes (thread, checkpoint_id, task_id, task_path, writes, texts) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (dst, cid, task_id, task_path, _remapped_writes(store, stored, lineage_map), texts),
        )


_NAMING_LINEAGES = (CHANGES_TYPE, ITEMS_TYPE, DICT_VIEW_TYPE)
"""Write entries whose data starts with a lineage id (the copy of a thread remaps it)."""


def _remapped_writes(store: DeltaStore, stored: bytes, lineage_map: dict[int, int]) -> bytes:
    """A row of writes with the lineages its entries name remapped (marks left as they are)."""
    entries = store.loads("msgpack", stored)
    if not any(entry[2] in _NAMING_LINEAGES for entry in entries):
        return stored
    for entry in entries:
        if entry[2] in _NAMING_LINEAGES:
            changes = store.loads("msgpack", entry[3])
            changes[0] = lineage_map[changes[0]]
            entry[3] = store.serde.dumps_typed(changes)[1]
    return store.serde.dumps_typed(entries)[1]
