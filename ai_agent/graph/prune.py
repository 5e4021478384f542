"""``Agent.prune``: delete old checkpoints and recorded calls, then reclaim the space.

A pruned run keeps its latest checkpoint, with its pending writes, so it can still be inspected
(its trace and messages are in that state), and a paused run can still be resumed: the gate's
pending interrupt, the grants and the journal it needs all stay. What goes: the earlier
checkpoints (each holds a whole copy of the state with the SQLite saver), the recorded calls (so
it can no longer be replayed offline), and the journal of a finished run.

Never pruned: a run another process is working on (its lease is taken for the pruning), and the
recorded calls of a run that has a fork or replay that is kept (replaying the fork needs its
parent's recording up to the fork point).

Only the ``BaseCheckpointSaver`` API is used. The SQLite saver has no ``prune``, so the latest
checkpoint is kept by copying it aside (``THREAD.prune``), deleting the thread, and putting it
back; a prune that stops half-way leaves the copy, and the next prune of that run restores it.
"""

from __future__ import annotations

import math
import sqlite3
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple

from ai_agent.checkpoints import Location, RunRecord, RunStoreProtocol
from ai_agent.errors import ConfigError, ThreadBusyError, UnknownThreadError
from ai_agent.graph.database import RunDatabase, check_thread_id
from ai_agent.graph.database import checkpoint_config as _config

__all__ = ["PruneReport", "database_bytes", "keep_latest", "prune_runs", "select_runs"]

_FINISHED = ("completed", "cancelled")


@dataclass(frozen=True, slots=True)
class PruneReport:
    """What a prune did.

    Attributes:
        pruned: The runs that were pruned.
        skipped: Runs left alone, with the reason.
        checkpoints_deleted: Checkpoints deleted (each run keeps its latest).
        calls_deleted: Recorded model and tool calls deleted.
        bytes_before: Size of the database (with its WAL) before.
        bytes_after: Size after reclaiming the space.
        vacuumed: The space was reclaimed (False when the database was busy or it was not asked).
    """

    pruned: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    checkpoints_deleted: int = 0
    calls_deleted: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    vacuumed: bool = False

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


async def _put_alone(
    saver: BaseCheckpointSaver[Any], thread_id: str, item: CheckpointTuple
) -> None:
    """Write one checkpoint, with all its pending writes, as the only one of a thread."""
    checkpoint = item.checkpoint
    await saver.aput(
        _config(thread_id), checkpoint, item.metadata, dict(checkpoint["channel_versions"])
    )
    grouped: dict[str, list[tuple[str, Any]]] = defaultdict(list)
    for task_id, channel, value in item.pending_writes or []:
        grouped[task_id].append((channel, value))
    for task_id, writes in grouped.items():
        await saver.aput_writes(_config(thread_id, checkpoint["id"]), writes, task_id)


async def _restore(saver: BaseCheckpointSaver[Any], thread_id: str) -> None:
    """Finish a prune that stopped between deleting a thread and putting its head back."""
    staging = await saver.aget_tuple(_config(f"{thread_id}.prune"))
    if staging is None:
        return
    if await saver.aget_tuple(_config(thread_id)) is None:
        await _put_alone(saver, thread_id, staging)
    await saver.adelete_thread(f"{thread_id}.prune")


async def keep_latest(saver: BaseCheckpointSaver[Any], thread_id: str) -> int:
    """Delete all but the latest checkpoint of a thread; return how many were deleted."""
    await _restore(saver, thread_id)
    count = 0
    async for _ in saver.alist(_config(thread_id)):
        count += 1
    head = await saver.aget_tuple(_config(thread_id))
    if head is None or count <= 1:
        return 0
    await _put_alone(saver, f"{thread_id}.prune", head)
    await saver.adelete_thread(thread_id)
    await _put_alone(saver, thread_id, head)
    await saver.adelete_thread(f"{thread_id}.prune")
    return count - 1


async def prune_runs(
    database: RunDatabase,
    thread_id: str | None = None,
    *,
    older_than_days: float | None = None,
    keep_last: int | None = None,
    vacuum: bool = True,
) -> PruneReport:
    """Prune one run, the runs not updated for some days, or all but the latest N runs.

    The arguments and the errors are those of ``Agent.prune``.
    """
    store = database.store
    selected = await select_runs(store, thread_id, older_than_days, keep_last)
    keep = {r["thread_id"] for r in await store.list_runs(limit=None)} - {
        r["thread_id"] for r in selected
    }
    before = database_bytes(database.location)
    pruned: list[str] = []
    skipped: dict[str, str] = {}
    checkpoints = calls = 0
    for record in selected:
        outcome = await _prune_one(database, record, keep)
        if isinstance(outcome, str):
            skipped[record["thread_id"]] = outcome
            continue
        pruned.append(record["thread_id"])
        checkpoints, calls = checkpoints + outcome[0], calls + outcome[1]
    vacuumed = await _vacuum(store) if vacuum else False
    return PruneReport(
        pruned=pruned,
        skipped=skipped,
        checkpoints_deleted=checkpoints,
        calls_deleted=calls,
        bytes_before=before,
        bytes_after=database_bytes(database.location),
        vacuumed=vacuumed,
    )


async def select_runs(
    store: RunStoreProtocol,
    thread_id: str | None,
    older_than_days: float | None,
    keep_last: int | None,
) -> list[RunRecord]:
    """The runs a prune selects: one run, those idle for some days, or all but the latest N.

    Raises:
        ConfigError / UnknownThreadError: as ``Agent.prune``.
    """
    given = [x for x in (thread_id, older_than_days, keep_last) if x is not None]
    if len(given) != 1:
        raise ConfigError("prune needs exactly one of: a thread id, older_than_days, keep_last")
    if thread_id is not None:
        record = await store.get_run(check_thread_id(thread_id))
        if record is None:
            raise UnknownThreadError(f"no run with thread id {thread_id}")
        return [record]
    # A run whose last change is unknown (a damaged row) is neither known to be old nor one of
    # the latest (SQLite sorts its text before every number): it is kept, and takes no place.
    runs = [r for r in await store.list_runs(limit=None) if r["updated_at"] is not None]
    if keep_last is not None:
        if keep_last < 0:
            raise ConfigError(f"keep_last must be 0 or more (got {keep_last})")
        return runs[keep_last:]  # most recently updated first
    days = float(older_than_days or 0)
    if not 0 <= days < math.inf:  # NaN too: it pruned nothing and said nothing
        raise ConfigError(f"older_than_days must be a finite number, 0 or more (got {days:g})")
    cutoff = time.time() - days * 86400
    return [r for r in runs if cast(float, r["updated_at"]) < cutoff]


async def _prune_one(
    database: RunDatabase, record: RunRecord, keep: set[str]
) -> tuple[int, int] | str:
    thread, store = record["thread_id"], database.store
    try:
        lease = await store.acquire(thread)
    except ThreadBusyError:
        return "another process is working on it"
    try:
        async with database.graph() as graph:
            deleted = await keep_latest(graph.checkpointer, thread)
        children = await store.list_runs(parent_thread_id=thread, limit=None)
        calls = 0
        if not any(c["thread_id"] in keep for c in children):
            calls = await store.delete_calls(thread)
        if record["status"] in _FINISHED:
            await store.delete_journal(thread)
    finally:
        await store.release(lease)
    return deleted, calls


async def _vacuum(store: RunStoreProtocol) -> bool:
    try:
        await store.vacuum()
    except sqlite3.OperationalError:  # another connection is mid-transaction: try later
        return False
    return True


def database_bytes(location: Location) -> int:
    """The SQLite file and its WAL, in bytes (0 for PostgreSQL: the server manages its files)."""
    if not isinstance(location, Path):
        return 0
    paths = [location, location.with_name(location.name + "-wal")]
    return sum(p.stat().st_size for p in paths if p.exists())
