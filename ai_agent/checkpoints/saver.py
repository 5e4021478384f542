"""The checkpointer: LangGraph's SQLite saver, opened the way this engine needs it (or, for a
``postgresql://`` URL, its PostgreSQL saver: ``ai_agent.checkpoints.postgres``).

Strict serialization: checkpoints are read back with only LangGraph's allowlisted safe types (our
state is plain JSON anyway), so a tampered database cannot make the engine import and call
arbitrary code. The connection waits up to 30 s for a lock and the database runs in WAL mode, so
many runs and processes can share one file.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiosqlite
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from ai_agent.checkpoints.store import Location, postgres_module, resolve_location
from ai_agent.errors import StoreError

__all__ = ["open_checkpointer", "strict_serializer"]

BUSY_TIMEOUT_SECONDS = 30


def strict_serializer() -> JsonPlusSerializer:
    """A serializer that only loads LangGraph's allowlisted safe types (strict msgpack)."""
    return JsonPlusSerializer(allowed_msgpack_modules=None)


@asynccontextmanager
async def open_checkpointer(path: Location) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """Open (creating if needed) the SQLite checkpoint database at ``path``.

    This is the backend seam: a ``postgresql://`` URL opens LangGraph's PostgreSQL saver instead
    (``ai_agent.checkpoints.postgres``, the ``postgres`` extra).

    Example:
        >>> import asyncio, tempfile, os
        >>> async def demo():
        ...     with tempfile.TemporaryDirectory() as d:
        ...         async with open_checkpointer(os.path.join(d, "c.sqlite")) as saver:
        ...             return type(saver).__name__
        >>> asyncio.run(demo())
        'AsyncSqliteSaver'
    """
    where = resolve_location(path)
    if isinstance(where, str):
        async with postgres_module().open_postgres_checkpointer(where) as pg_saver:
            yield pg_saver
        return
    p = where
    p.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = await aiosqlite.connect(p, timeout=BUSY_TIMEOUT_SECONDS)
    except Exception as exc:  # pragma: no cover - an unopenable path
        raise StoreError(f"cannot open the checkpoint database at {p}: {exc}") from None
    try:
        saver = AsyncSqliteSaver(conn, serde=strict_serializer())
        try:
            await saver.setup()
        except aiosqlite.DatabaseError as exc:
            raise StoreError(
                f"{p} is not a usable checkpoint database ({exc}); point --db at another file"
            ) from None
        yield saver
    finally:
        await conn.close()
