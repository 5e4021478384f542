"""The checkpointer the engine runs on: the delta saver, opened the way this engine needs it.

For a ``postgresql://`` URL it is LangGraph's PostgreSQL saver instead
(``ai_agent.checkpoints.postgres``).

`DeltaSaver` stores what each step added instead of the whole
state (see its module for the format). Strict serialization: checkpoints are read back with only
LangGraph's allowlisted safe types (our state is plain JSON anyway), so a tampered database
cannot make the engine import and call arbitrary code. The connection waits up to 30 s for a lock
and the database runs in WAL mode, so many runs and processes can share one file.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from ai_agent.checkpoints._serde import strict_serializer
from ai_agent.checkpoints.delta import DeltaSaver
from ai_agent.checkpoints.store import Location, postgres_module, resolve_location
from ai_agent.errors import StoreError

__all__ = ["open_checkpointer", "strict_serializer"]


@asynccontextmanager
async def open_checkpointer(path: Location) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """Open (creating if needed) the SQLite checkpoint database at ``path``.

    This is the backend seam: a ``postgresql://`` URL opens LangGraph's PostgreSQL saver instead
    (``ai_agent.checkpoints.postgres``, the ``postgres`` extra). A SQLite database written by the
    engine's earlier checkpointer (LangGraph's SqliteSaver tables) is imported the first time, so
    its runs can still be resumed.

    Raises:
        StoreError: ``path`` is not a SQLite database, or was written by a newer ai-agent.

    Examples:
        >>> import asyncio, tempfile, os
        >>> async def demo():
        ...     with tempfile.TemporaryDirectory() as d:
        ...         async with open_checkpointer(os.path.join(d, "c.sqlite")) as saver:
        ...             return type(saver).__name__
        >>> asyncio.run(demo())
        'DeltaSaver'
    """
    where = resolve_location(path)
    if isinstance(where, str):
        async with postgres_module().open_postgres_checkpointer(where) as pg_saver:
            yield pg_saver
        return
    # Opening may migrate or import an old database: keep that off the event loop too.
    saver = await asyncio.to_thread(DeltaSaver, where)
    try:
        yield saver
    except BaseException:
        # The error that ended the block says what went wrong; a write that failed for the
        # same cause (a full disk) and is reported by closing must not take its place.
        with contextlib.suppress(StoreError):
            await saver.aclose()
        raise
    await saver.aclose()
