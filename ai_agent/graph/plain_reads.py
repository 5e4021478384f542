"""A stored run's snapshots read without LangGraph's runtime, where the database allows it.

The run archive opened on its own (the command line's) reads a run's latest state and its
history here first: through the delta saver's read API (`ai_agent.checkpoints.reader`), the
snapshots worked out by `ai_agent.graph.stored_state`. None means LangGraph must read them
(`RunDatabase.plain_reader` says which databases; `stored_state` which checkpoints), and the
archive compiles the pipeline as before. The reads are synchronous: one read transaction on a
local SQLite file, as the saver's own worker thread makes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from ai_agent.errors import UnknownThreadError
from ai_agent.graph.database import RunDatabase, config_for

if TYPE_CHECKING:
    from langgraph.types import StateSnapshot

    from ai_agent.checkpoints.reader import DeltaReader
    from ai_agent.graph.history import HistoryEntry
    from ai_agent.graph.stored_state import StoredSnapshot

    Snapshot = StateSnapshot | StoredSnapshot

__all__ = ["checked", "latest_snapshot", "plain_history", "plain_snapshot", "read_history"]

T = TypeVar("T")
S = TypeVar("S", "StateSnapshot", "StoredSnapshot")


async def latest_snapshot(database: RunDatabase, thread_id: str) -> Snapshot:
    """The thread's latest snapshot: read plainly where it can be, else by LangGraph.

    Raises:
        UnknownThreadError: the thread has no checkpoints.
    """
    snapshot: Snapshot | None = plain_snapshot(database, thread_id)
    if snapshot is None:
        async with database.graph(reading=True) as graph:
            snapshot = checked(await graph.aget_state(config_for(thread_id)))
    if not snapshot.values:
        raise UnknownThreadError(f"no run with thread id {thread_id}")
    return snapshot


async def read_history(
    database: RunDatabase, thread_id: str, *, private: bool = False
) -> list[HistoryEntry]:
    """The thread's history, oldest first: read plainly where it can be, else by LangGraph.

    ``private``: LangGraph reads through a checkpointer of its own (another thread's loop).

    Raises:
        UnknownThreadError: the thread has no checkpoints.
    """
    from ai_agent.graph.history import history_of

    if (plain := plain_history(database, thread_id)) is not None:
        return plain
    opened = database.private_graph if private else database.graph
    async with opened(reading=True) as graph:
        return await history_of(graph, thread_id)


def checked(snapshot: S) -> S:
    """A run's latest snapshot, once its values have `RunState`'s shape (`state_shape`).

    Decoding allows only known types, but a database edited by hand can put any of them in
    any channel. The latest state is what a result, a page and a resume read, so it is checked
    whole (about 4.5 ms on an 800-cycle state); a history checks the others but for their
    lists' items, which it checks only when reading them fails
    (`ai_agent.graph.history.entries_of`), which keeps it linear.

    Raises:
        CorruptRunError: they do not.
    """
    from ai_agent.graph.state_shape import check_values

    check_values(snapshot.values, snapshot.config, snapshot.parent_config, snapshot.metadata)
    return snapshot


def plain_snapshot(database: RunDatabase, thread_id: str) -> StoredSnapshot | None:
    """The thread's latest snapshot, as ``aget_state`` gives it (None: ask LangGraph).

    Raises:
        UnknownThreadError: the thread has no checkpoints.
    """
    return _read(database, thread_id, _latest)


def plain_history(database: RunDatabase, thread_id: str) -> list[HistoryEntry] | None:
    """The thread's history entries, oldest first (None: ask LangGraph).

    Raises:
        UnknownThreadError: the thread has no checkpoints.
    """
    from ai_agent.graph.history import entries_of

    snapshots = _read(database, thread_id, _all)
    return None if snapshots is None else entries_of(snapshots, thread_id)


def _read(database: RunDatabase, thread_id: str, read: Callable[[DeltaReader, str], T]) -> T | None:
    from ai_agent.checkpoints.reader import NotPlain

    config_for(thread_id)  # a malformed id is the same clear error as through LangGraph
    try:
        reader = database.plain_reader()
        if reader is None:
            return None
        with reader:
            return read(reader, thread_id)
    except NotPlain:
        return None


def _latest(reader: DeltaReader, thread_id: str) -> StoredSnapshot:
    from ai_agent.graph.stored_state import snapshot_of

    stored = reader.get_tuple(config_for(thread_id))
    if stored is None:
        raise UnknownThreadError(f"no run with thread id {thread_id}")
    return checked(snapshot_of(stored, live=True))


def _all(reader: DeltaReader, thread_id: str) -> list[StoredSnapshot]:
    """The thread's snapshots as LangGraph's history lists them, newest first."""
    from ai_agent.graph.stored_state import snapshot_of

    return [snapshot_of(stored, live=False) for stored in reader.list(config_for(thread_id))]
