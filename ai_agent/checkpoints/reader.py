"""Reading a delta database's checkpoints without LangGraph's or LangChain's modules.

`DeltaReader` is `DeltaSaver`'s read API, ``get_tuple`` and ``list``, over the very functions
the saver reads with (`ai_agent.checkpoints._reads`), so it reads whatever format the saver
writes. What it leaves out is what a command that only shows a run does not need and cannot
afford (issue 20: a quarter of a second): LangGraph's checkpoint package, which imports
LangChain for its config type and its serializer, the saver's worker thread, and the import
of an old SqliteSaver database. Values load as plain data (`ai_agent.checkpoints._plain`);
one that is not raises `NotPlain`, as does an old SqliteSaver database not yet imported, and
the caller reads that run through `DeltaSaver` and LangGraph instead.

Its tuples are `StoredTuple`: the fields of LangGraph's ``CheckpointTuple``, with a paused
node's interrupts as `StoredInterrupt`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ai_agent.checkpoints._plain import NotPlain, PlainLoader, StoredInterrupt
from ai_agent.checkpoints._reads import StoredTuple, get_tuple, list_page
from ai_agent.checkpoints._schema import legacy_tables_present
from ai_agent.checkpoints._store import DeltaStore, ReadMemo

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

__all__ = ["DeltaReader", "NotPlain", "StoredInterrupt", "StoredTuple"]

_LIST_PAGE = 64


class DeltaReader:
    """``get_tuple`` and ``list`` of the delta database at ``path``, for reading only.

    Raises:
        StoreError: as `DeltaSaver` does (not a SQLite file, a newer format).
        NotPlain: the file still holds an old SqliteSaver database's runs (the saver imports
            them when it opens the file).
    """

    def __init__(self, path: str | Path) -> None:
        self.store = DeltaStore(path, PlainLoader())
        if legacy_tables_present(self.store.conn):
            self.close()
            raise NotPlain("an old SqliteSaver database: the saver imports it first")

    def close(self) -> None:
        """Close the connection."""
        self.store.close()

    def __enter__(self) -> DeltaReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get_tuple(self, config: Mapping[str, Any]) -> StoredTuple | None:
        """The checkpoint ``config`` names (its ``checkpoint_id``, else the thread's latest)."""
        return get_tuple(self.store, cast("RunnableConfig", config))

    def list(
        self,
        config: Mapping[str, Any],
        *,
        before: Mapping[str, Any] | None = None,
        limit: int | None = None,
    ) -> Iterator[StoredTuple]:
        """The thread's checkpoints, newest first (as `DeltaSaver.list`, without a filter)."""
        memo = ReadMemo()
        after: tuple[str, int] | None = None
        left = limit
        while left is None or left > 0:
            size = _LIST_PAGE if left is None else min(left, _LIST_PAGE)
            page = list_page(
                self.store,
                cast("RunnableConfig", config),
                None,
                cast("RunnableConfig | None", before),
                size,
                after,
                memo,
            )
            for item, key in page:
                yield item
                after = key
            if len(page) < size:
                return
            if left is not None:
                left -= len(page)
