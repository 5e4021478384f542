"""Opening a storage engine for a location: the checkpointer and the run store.

This is the one seam that opens a backend: a SQLite file path gets the delta checkpointer
(`DeltaSaver`) and the SQLite `RunStore`; a ``postgresql://`` URL gets LangGraph's PostgreSQL
saver and ``PostgresRunStore`` (``ai_agent.checkpoints.postgres_saver`` and ``.postgres``,
imported only then: they need the ``postgres`` extra). Callers get LangGraph's
``BaseCheckpointSaver`` and `RunStoreProtocol` back and never ask which engine they have.

`DeltaSaver` stores what each step added instead of the whole
state (see its module for the format). Strict serialization: checkpoints are read back with only
LangGraph's allowlisted safe types (our state is plain JSON anyway), so a tampered database
cannot make the engine import and call arbitrary code. The connection waits up to 30 s for a lock
and the database runs in WAL mode, so many runs and processes can share one file.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ai_agent.checkpoints.runstore import RunStore
from ai_agent.checkpoints.store import Location, RunStoreProtocol, resolve_location
from ai_agent.errors import ConfigError, StoreError

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.checkpoint.serde.base import SerializerProtocol

    from ai_agent.checkpoints.delta import DeltaSaver

__all__ = ["engine_saver", "open_checkpointer", "open_run_store"]


@contextmanager
def _postgres_extra() -> Iterator[None]:
    """Around importing the PostgreSQL modules: a missing extra is a ConfigError.

    The PostgreSQL engine is imported only for a URL, never at the top: importing ai_agent
    never needs the extra.
    """
    try:
        yield
    except ImportError as exc:
        raise ConfigError(
            f"PostgreSQL support needs the postgres extra ({exc.name} is missing): "
            "pip install 'ai-agent[postgres]'"
        ) from None


def open_run_store(location: Location, **options: Any) -> RunStoreProtocol:
    """Open the run store at ``location``: SQLite for a path, PostgreSQL for a URL.

    Args:
        location: A SQLite file path or a ``postgresql://`` URL.
        options: Passed to the PostgreSQL store (``host``: the name its leases carry).

    Raises:
        StoreError: the database cannot be opened, or was written by a newer ai-agent.
        ConfigError: a PostgreSQL URL was given and the ``postgres`` extra is not installed.
    """
    resolved = resolve_location(location)
    if isinstance(resolved, str):
        with _postgres_extra():
            from ai_agent.checkpoints.postgres import PostgresRunStore
        return PostgresRunStore(resolved, **options)
    return RunStore(resolved)


def engine_saver(path: str | Path, serde: SerializerProtocol | None = None) -> DeltaSaver:
    """The delta saver as the engine opens it: without the check for items edited in place.

    That check (``DeltaSaver(check_edits=True)``, the default for LangGraph users) compares
    every changed list with a snapshot at every step, a cost that grows with the run. The
    engine's stages never edit state in place: each returns new items through the reducers
    (``ai_agent.state``), so its runs store exactly what they hold live without it.

    The saver (LangGraph's checkpoint package, and the LangChain it imports) is imported here,
    not at the top: opening the run store alone (``ai-agent runs``) never loads it.
    """
    from ai_agent.checkpoints.delta import DeltaSaver

    return DeltaSaver(path, serde=serde, check_edits=False)


@asynccontextmanager
async def open_checkpointer(
    path: Location, serde: SerializerProtocol | None = None
) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """Open (creating if needed) the SQLite checkpoint database at ``path``.

    ``serde`` replaces the strict serializer (a pipeline's `TypedSerializer` over it).

    This is the backend seam: a ``postgresql://`` URL opens LangGraph's PostgreSQL saver instead
    (``ai_agent.checkpoints.postgres_saver``, the ``postgres`` extra). A SQLite database written
    by the engine's earlier checkpointer (LangGraph's SqliteSaver tables) is imported the first
    time, so its runs can still be resumed.

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
        with _postgres_extra():
            from ai_agent.checkpoints.postgres_saver import open_postgres_checkpointer
        async with open_postgres_checkpointer(where, serde=serde) as pg_saver:
            yield pg_saver
        return
    # Opening may migrate or import an old database: keep that off the event loop too.
    import asyncio  # not with the module: a command-line read of the run store runs none

    saver = await asyncio.to_thread(engine_saver, where, serde)
    try:
        yield saver
    except BaseException:
        # The error that ended the block says what went wrong; a write that failed for the
        # same cause (a full disk) and is reported by closing must not take its place.
        with contextlib.suppress(StoreError):
            await saver.aclose()
        raise
    await saver.aclose()
