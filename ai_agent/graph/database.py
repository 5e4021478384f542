"""The run database as the graph layer sees it: the run store and the checkpointer opener.

`RunDatabase` is what the Agent's runner and its run archive share: the location (a SQLite file
or a ``postgresql://`` URL), the run store (runs, leases, journal, recorded calls, plan queue)
opened on first use, and the checkpointer, either shared (opened by ``async with``, so runs and
reads use one connection) or opened privately for one call. It imports the run store and the
checkpoint package; the pipeline's graph (LangGraph's runtime and the stages) when a checkpoint
is first read; never the model stack.

Two checkpointers outlive every close instead (`lasting_saver`): a LangGraph saver the caller
brought (``Agent(checkpointer=...)``: its owner closes it; the run store stays at the location),
and the in-memory database of ``":memory:"``, which *is* the runs: closing it would lose them,
so it lives (with its in-memory run store) as long as this object, in this process.

`config_for` is the one place that writes LangGraph's ``configurable``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, cast

from ai_agent._loopless import require_loop
from ai_agent.checkpoints import open_checkpointer, open_run_store
from ai_agent.checkpoints.backends import engine_saver
from ai_agent.checkpoints.fencing import with_lease
from ai_agent.checkpoints.store import (
    Location,
    RunStoreProtocol,
    check_thread_id,
    describe_location,
    is_postgres_url,
    new_thread_id,
    resolve_location,
)
from ai_agent.errors import ConfigError, UnknownThreadError

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from pydantic import SecretStr

    from ai_agent.checkpoints import TypedSerializer
    from ai_agent.checkpoints.reader import DeltaReader
    from ai_agent.config import AgentSettings
    from ai_agent.graph.channels import UnreadChannels
    from ai_agent.graph.pipeline import Pipeline

__all__ = [
    "RunDatabase",
    "check_thread_id",
    "checkpoint_config",
    "config_for",
    "locate_database",
    "new_thread_id",
]


def config_for(
    thread_id: str,
    limit: int | None = None,
    *,
    checkpoint_id: str | None = None,
    lease: str | None = None,
) -> dict[str, Any]:
    """The one place that writes LangGraph's ``configurable``.

    It holds the thread id (and, to address one checkpoint, its id), and for a run that holds
    the thread's lease its fencing token, which the checkpointer checks at every write
    (``ai_agent.checkpoints.fencing``); nothing secret. The id is checked here
    (`check_thread_id`), so whatever reads or writes checkpoints gets a clear error for a
    malformed one.

    Examples:
        >>> config_for("t1", 50)
        {'configurable': {'thread_id': 't1', 'checkpoint_ns': ''}, 'recursion_limit': 50}
    """
    configurable: dict[str, Any] = {"thread_id": check_thread_id(thread_id), "checkpoint_ns": ""}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    with_lease(configurable, lease)
    config: dict[str, Any] = {"configurable": configurable}
    if limit is not None:
        config["recursion_limit"] = limit
    return config


def checkpoint_config(thread_id: str, checkpoint_id: str | None = None) -> RunnableConfig:
    """``config_for`` typed for the checkpointer API."""
    return cast("RunnableConfig", config_for(thread_id, checkpoint_id=checkpoint_id))


def locate_database(
    path: str | Path | None,
    url: str | SecretStr | None,
    settings: AgentSettings | None = None,
) -> Location:
    """Where checkpoints and the run store live: the argument given, else the settings'.

    The settings (loaded from the environment and files when None) are read only when neither
    a path nor a URL is given.

    Raises:
        ConfigError: both a path and a URL were given, or the location is not one the engine
            can open (see `ai_agent.checkpoints.store.resolve_location`).
    """
    if url is not None and not isinstance(url, str):  # a SecretStr (pydantic: not imported here)
        url = url.get_secret_value()
    if url and path:
        raise ConfigError("give checkpoint_path or checkpoint_url, not both")
    if url or path:
        # A URL passed as checkpoint_path works too (the CLI's --db takes either).
        return resolve_location(url or path or "")
    if settings is None:
        from ai_agent.config import load_settings

        settings = load_settings()
    if settings.checkpoint_url is not None:
        return resolve_location(settings.checkpoint_url.get_secret_value())
    return resolve_location(settings.checkpoint_path)


class RunDatabase:
    """The run store and the checkpointer of one database, opened when first needed.

    Args:
        location: A SQLite file (``Path``) or a ``postgresql://`` URL (``str``), as
            `locate_database` gives it.
        lease_seconds: How long a thread's lease lasts without renewal (the settings'
            ``lease_seconds``); the store's default when None.
        checkpointer: A LangGraph saver that holds the checkpoints instead of the location's
            (the run store stays at the location). Its owner opens and closes it.
        pipeline: The runs' own pipeline (`ai_agent.graph.pipeline.Pipeline`); None: the
            engine's nine stages. Runs and every read of their checkpoints compile it.
        plain_reads: Let the run archive read checkpoints without LangGraph's runtime where
            it can (`plain_reader`): the database opened on its own (`at`) does, so showing
            a run answers at once; an Agent's reads all go through its compiled pipeline.

    Examples:
        >>> from pathlib import Path
        >>> db = RunDatabase(Path("missing.sqlite"))
        >>> db.exists(), db.describe()
        (False, 'missing.sqlite')
    """

    def __init__(
        self,
        location: Location,
        lease_seconds: float | None = None,
        checkpointer: BaseCheckpointSaver[Any] | None = None,
        pipeline: Pipeline | None = None,
        plain_reads: bool = False,
    ) -> None:
        self.location = location
        self.plain_reads = plain_reads
        self.pipeline = pipeline
        self.lease_seconds = lease_seconds
        self._store: RunStoreProtocol | None = None
        self._saver: BaseCheckpointSaver[Any] | None = None
        self._saver_cm: contextlib.AbstractAsyncContextManager[Any] | None = None
        self._foreign = checkpointer
        self._lasting: BaseCheckpointSaver[Any] | None = None
        self._lock = threading.Lock()  # one in-memory database, whichever thread asks first
        # The pipeline compiled over the shared or lasting checkpointer, kept while it is open:
        # compiling takes longer than a run's first steps (most of a subagent's spawn time).
        # The pipeline compiled over the shared saver, for running and for reading (by ``reading``).
        self._compiled: dict[bool, tuple[BaseCheckpointSaver[Any], Any]] = {}

    @classmethod
    def at(
        cls,
        location: str | Path | None,
        settings: AgentSettings | None = None,
        pipeline: Pipeline | None = None,
    ) -> Self:
        """The database at ``location`` (a SQLite path or a ``postgresql://`` URL).

        None: the settings' ``checkpoint_url``, then their ``checkpoint_path``. The lease
        length is the settings' too (the store's default without them). ``pipeline``: the
        runs' own pipeline, which reads their checkpoints (None: the engine's stages).
        """
        where = locate_database(location, None, settings)
        lease = None if settings is None else settings.lease_seconds
        return cls(where, lease_seconds=lease, plain_reads=True, pipeline=pipeline)

    @property
    def store(self) -> RunStoreProtocol:
        """The run store (runs, leases, journal, recorded calls, plans), opened on first use."""
        if self._store is None:
            self._store = open_run_store(self.location)
            if self.lease_seconds is not None:
                self._store.lease_seconds = self.lease_seconds
        return self._store

    @property
    def saver(self) -> BaseCheckpointSaver[Any] | None:
        """The shared checkpointer while it is open (`open`), else None."""
        return self._saver

    @property
    def in_memory(self) -> bool:
        """The location is SQLite's ``":memory:"``: the runs live in this process only."""
        return isinstance(self.location, Path) and str(self.location) == ":memory:"

    async def lasting_saver(self) -> BaseCheckpointSaver[Any] | None:
        """The checkpointer no `aclose` closes (see the module doc), or None for the others.

        A caller's saver whose async methods are missing (LangGraph's sync ``SqliteSaver``,
        ``PostgresSaver``) comes back wrapped so the async engine can use it
        (`ai_agent.checkpoints.foreign`).
        """
        if self._foreign is not None:
            if self._lasting is None:
                # LangGraph's saver API: only a caller who brought a saver has it loaded already.
                from ai_agent.checkpoints.foreign import async_ready

                self._lasting = await async_ready(self._foreign)
            return self._lasting
        if not self.in_memory:
            return None
        with self._lock:
            if self._lasting is None:
                self._lasting = engine_saver(":memory:", self._serde())
            return self._lasting

    def exists(self) -> bool:
        """False only for a SQLite file that is not there (a server or in-memory one may be)."""
        where = self.location
        return not isinstance(where, Path) or str(where) == ":memory:" or where.exists()

    def require(self, thread_id: str | None = None) -> None:
        """UnknownThreadError for a SQLite file that is not there: no run can be in it.

        Reading or resuming must not open it: that would leave an empty database behind for a
        mistyped path. Only a new run creates the database.
        """
        if self.exists():
            return
        run = "" if thread_id is None else f" with thread id {thread_id}"
        raise UnknownThreadError(
            f"no run{run} in {self.describe()}: the file does not exist (only a run creates "
            "one); check the path"
        )

    def describe(self) -> str:
        """The location as it may be shown (a URL without its password)."""
        return describe_location(self.location)

    def hide(self, text: str) -> str:
        """``text`` without this database's password (a driver's message may quote its URL)."""
        if not is_postgres_url(self.location):
            return text
        from ai_agent.checkpoints.postgres import scrub  # loads no driver

        return scrub(text, str(self.location))

    async def open(self) -> None:
        """Open the shared checkpointer (once); every `graph` until `aclose` uses it."""
        require_loop("the checkpointer")
        if self._saver is None and await self.lasting_saver() is None:
            self._saver_cm = open_checkpointer(self.location, self._serde())
            self._saver = await self._saver_cm.__aenter__()

    async def aclose(self) -> None:
        """Close the shared checkpointer and the run store (both reopen on the next use)."""
        self._compiled = {}
        if self._saver_cm is not None:
            cm, self._saver_cm, self._saver = self._saver_cm, None, None
            await cm.__aexit__(None, None, None)
        if self._store is not None and not self.in_memory:  # in memory, the store is the runs
            self._store.close()
            self._store = None

    @contextlib.asynccontextmanager
    async def graph(self, *, reading: bool = False) -> AsyncIterator[Any]:
        """The compiled graph over the shared checkpointer, or a private one for this call.

        ``reading``: a graph for reading checkpoints only (`build_graph`'s ``reading``).

        Raises:
            NeedsEventLoop: called without an event loop (`ai_agent._loopless`).
        """
        require_loop("LangGraph's runtime")
        lasting = await self.lasting_saver()
        if lasting is not None:
            yield self._compiled_over(lasting, reading)
            return
        if self._saver is not None:
            yield self._compiled_over(self._saver, reading)
            return
        async with self.private_graph(reading=reading) as graph:
            yield graph

    def _compiled_over(self, saver: BaseCheckpointSaver[Any], reading: bool) -> Any:
        """The pipeline over ``saver``, compiled once while it stays open.

        A compiled graph holds no run's data: every run passes its thread and context to it.
        """
        held = self._compiled.get(reading)
        if held is None or held[0] is not saver:
            held = self._compiled[reading] = (saver, self._compile(saver, reading))
        return held[1]

    @contextlib.asynccontextmanager
    async def private_graph(self, *, reading: bool = False) -> AsyncIterator[Any]:
        """The compiled graph over a checkpointer of its own (another thread's event loop)."""
        require_loop("LangGraph's runtime")
        lasting = await self.lasting_saver()
        if lasting is not None:  # one for all: it works from any thread
            yield self._compile(lasting, reading)
            return
        self.require()
        async with open_checkpointer(self.location, self._serde()) as saver:
            yield self._compile(saver, reading)

    def plain_reader(self) -> DeltaReader | None:
        """A reader of the checkpoints that loads no LangGraph (`ai_agent.graph.stored_state`).

        None when they must be read through LangGraph: not `plain_reads`, a saver the caller
        brought, a pipeline of the user's (its channels and types are its own), PostgreSQL, an
        in-memory database, a file that is not there, or a shared saver open in this process
        (a write it holds may not be committed yet).

        Raises:
            NotPlain: the file still holds an old SqliteSaver database (see `DeltaReader`).
        """
        where = self.location
        if not self.plain_reads or not isinstance(where, Path) or self.in_memory:
            return None
        if self._foreign is not None or self.pipeline is not None or self._saver is not None:
            return None
        if not where.exists():
            return None
        from ai_agent.checkpoints.reader import DeltaReader

        return DeltaReader(where)

    async def unread_channels(self, thread_id: str) -> UnreadChannels | None:
        """The run's nodes and state fields this database's pipeline has no channel for.

        None: it reads the whole run. A run made by a pipeline of its own and read without
        it (`ai_agent.graph.channels`) names them, so a reader can say what ``--pipeline``
        would show.
        """
        from ai_agent.graph.channels import ENGINE_CHANNELS, UnreadChannels

        # The latest checkpoint's channel versions name every channel the run wrote, whichever
        # graph wrote it; read without LangGraph where the engine's own pipeline reads it.
        reader = self.plain_reader() if self.pipeline is None else None
        if reader is not None:
            with reader:
                stored = reader.get_tuple(config_for(thread_id))
            written = None if stored is None else stored.checkpoint["channel_versions"]
            return None if written is None else UnreadChannels.of(written, ENGINE_CHANNELS)
        async with self.graph(reading=True) as graph:
            saved = await graph.checkpointer.aget_tuple(config_for(thread_id))
            known = graph.channels
        if saved is None:
            return None
        return UnreadChannels.of(saved.checkpoint["channel_versions"], known)

    def _serde(self) -> TypedSerializer | None:
        """The pipeline's serializer when it registered types of its own (else the strict one)."""
        return None if self.pipeline is None else self.pipeline.serializer()

    def _compile(self, saver: BaseCheckpointSaver[Any], reading: bool) -> Any:
        """The pipeline over ``saver``: imported when a checkpoint is first read.

        Listing runs or plans needs the run store alone; LangGraph's graph runtime comes in with
        the first checkpoint read, and the stages only with a graph that runs (not ``reading``).
        A pipeline of the user's reads its runs itself (their channels are its own).
        """
        if self.pipeline is not None:
            return self.pipeline.compile(saver)
        from ai_agent.graph.build import build_graph

        return build_graph(saver, reading=reading)
