"""A LangGraph saver the caller brings (``Agent(checkpointer=...)``), made usable by the engine.

The engine is async: it reads and writes checkpoints through a saver's ``a*`` methods. Some of
LangGraph's savers have only the sync half (``SqliteSaver``, ``PostgresSaver``: their async
methods raise ``NotImplementedError``). `async_ready` probes a saver once and, for those, wraps it
in `ThreadedSaver`, which runs the sync methods on worker threads. Such a saver must accept
calls from other threads (``sqlite3.connect(..., check_same_thread=False)`` for SqliteSaver; its
own lock orders them).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)

__all__ = ["ThreadedSaver", "async_ready"]

_PROBE: RunnableConfig = {"configurable": {"thread_id": "__ai_agent_probe__", "checkpoint_ns": ""}}


async def async_ready(saver: BaseCheckpointSaver[Any]) -> BaseCheckpointSaver[Any]:
    """``saver`` itself when its async methods work, else a `ThreadedSaver` around it.

    The probe reads a thread no run uses, so it changes nothing.
    """
    try:
        await saver.aget_tuple(_PROBE)
    except NotImplementedError:
        return ThreadedSaver(saver)
    return saver


class ThreadedSaver(BaseCheckpointSaver[Any]):
    """A sync-only saver with async methods that run its sync ones on worker threads.

    Args:
        inner: The saver; it keeps its serializer and its version scheme.
    """

    def __init__(self, inner: BaseCheckpointSaver[Any]) -> None:
        super().__init__(serde=inner.serde)
        self.inner = inner

    def get_next_version(self, current: Any, channel: None) -> Any:
        """The inner saver's next version."""
        return self.inner.get_next_version(current, channel)

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The inner saver's ``get_tuple``."""
        return self.inner.get_tuple(config)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """The inner saver's ``list``."""
        return self.inner.list(config, filter=filter, before=before, limit=limit)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """The inner saver's ``put``."""
        return self.inner.put(config, checkpoint, metadata, new_versions)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """The inner saver's ``put_writes``."""
        self.inner.put_writes(config, writes, task_id, task_path)

    def delete_thread(self, thread_id: str) -> None:
        """The inner saver's ``delete_thread``."""
        self.inner.delete_thread(thread_id)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """``get_tuple`` on a worker thread."""
        return await asyncio.to_thread(self.inner.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """``list`` on a worker thread (read whole, then handed out)."""

        def read() -> list[CheckpointTuple]:
            return [*self.inner.list(config, filter=filter, before=before, limit=limit)]

        for item in await asyncio.to_thread(read):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """``put`` on a worker thread."""
        return await asyncio.to_thread(self.inner.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """``put_writes`` on a worker thread."""
        await asyncio.to_thread(self.inner.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """``delete_thread`` on a worker thread."""
        await asyncio.to_thread(self.inner.delete_thread, thread_id)
