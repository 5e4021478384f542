"""Streaming runs: ``Agent.astream`` / ``Agent.stream`` yield typed events as a run goes.

The run itself is the same as ``Agent.run``: the stream is a view of its progress events, fed
through a sink the run's context takes by its thread id, so several streams on one Agent do not
mix. Leaving the loop early cancels the run; it stays resumable from its last checkpoint.

Examples:
    >>> import asyncio, tempfile, os
    >>> from ai_agent import Agent
    >>> from ai_agent.events import FinalDelta, RunFinished
    >>> from ai_agent.testing import ScriptedModel
    >>> async def demo():
    ...     with tempfile.TemporaryDirectory() as d:
    ...         agent = Agent(model=ScriptedModel(["Paris is the capital."]),
    ...                       checkpoint_path=os.path.join(d, "c.sqlite"), memory_path=None)
    ...         async with agent:
    ...             events = [e async for e in agent.astream("capital of France?")]
    ...     text = "".join(e.text for e in events if isinstance(e, FinalDelta))
    ...     return text, events[-1].result.status
    >>> asyncio.run(demo())
    ('Paris is the capital.', 'completed')
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from typing import TYPE_CHECKING, Any

from ai_agent.checkpoints.store import new_thread_id
from ai_agent.events import ProgressEvent, RunFinished, StreamEvent
from ai_agent.graph.events import StreamView
from ai_agent.graph.result import RunResult

if TYPE_CHECKING:
    from ai_agent.graph.interrupts import Answer

__all__ = ["StreamSinks", "Streams"]

#: The sink of each run being streamed, by thread id (a thread runs once at a time). The Agent
#: holds one; `Streams` writes it, and the run context (`ai_agent.graph.contexts.RunContexts`)
#: of that thread sends its (masked) events there too, and the model its token deltas.
StreamSinks = dict[str, Callable[[ProgressEvent], None]]
_DONE = object()


class _Failed:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


class Streams:
    """``astream`` / ``astream_resume`` (async) and ``stream`` / ``stream_resume`` (sync).

    Args:
        run: The Agent's ``run``.
        resume: The Agent's ``resume``.
        closing: Awaits a coroutine, then closes the Agent (what the sync methods run).
        sinks: Where a stream's sink is found by the run it consumes (the Agent's).
    """

    def __init__(
        self,
        run: Callable[..., Awaitable[RunResult]],
        resume: Callable[..., Awaitable[RunResult]],
        closing: Callable[[Awaitable[Any]], Coroutine[Any, Any, Any]],
        sinks: StreamSinks,
    ) -> None:
        self.run = run
        self.resume = resume
        self._closing = closing
        self.sinks = sinks

    def astream(
        self, task: str, *, thread_id: str | None = None, quiet_tools: bool = False
    ) -> AsyncIterator[StreamEvent]:
        """Run a task and yield its events as they happen; the last is ``RunFinished``.

        Args:
            task: What to do.
            thread_id: Id for the new run (default: a fresh one).
            quiet_tools: Stream only the final answer and status events (no model deltas
                during tool phases, no tool output).
        """
        # The id is drawn here, not by run: the stream is found by it when the run starts.
        new = new_thread_id() if thread_id is None else thread_id
        return self._astream(new, lambda: self.run(task, thread_id=new), quiet_tools)

    def astream_resume(
        self,
        thread_id: str,
        plan: Answer = None,
        *,
        quiet_tools: bool = False,
    ) -> AsyncIterator[StreamEvent]:
        """Resume a run (see ``Agent.resume``) and yield its events as they happen."""
        return self._astream(thread_id, lambda: self.resume(thread_id, plan), quiet_tools)

    async def _astream(
        self, thread_id: str, start: Callable[[], Any], quiet_tools: bool
    ) -> AsyncIterator[StreamEvent]:
        events: asyncio.Queue[ProgressEvent | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        owner = threading.get_ident()

        def sink(event: ProgressEvent) -> None:
            # Tools may run in worker threads (sync tools) and report output from there.
            if threading.get_ident() == owner:
                events.put_nowait(event)
            else:
                loop.call_soon_threadsafe(events.put_nowait, event)

        self.sinks[thread_id] = sink
        run: asyncio.Task[RunResult] = asyncio.create_task(start())
        run.add_done_callback(lambda _: events.put_nowait(None))
        view = StreamView(quiet_tools=quiet_tools)
        try:
            while (event := await events.get()) is not None:
                for out in view(event):
                    yield out
            yield RunFinished(await run)
        finally:
            if not run.done():
                run.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await run
            if self.sinks.get(thread_id) is sink:
                del self.sinks[thread_id]

    def stream(
        self, task: str, *, thread_id: str | None = None, quiet_tools: bool = False
    ) -> Iterator[StreamEvent]:
        """``astream`` for code without an event loop (opens and closes everything itself)."""
        return self._sync(lambda: self.astream(task, thread_id=thread_id, quiet_tools=quiet_tools))

    def stream_resume(
        self,
        thread_id: str,
        plan: Answer = None,
        *,
        quiet_tools: bool = False,
    ) -> Iterator[StreamEvent]:
        """``astream_resume`` for code without an event loop."""
        return self._sync(lambda: self.astream_resume(thread_id, plan, quiet_tools=quiet_tools))

    def _sync(self, make: Callable[[], AsyncIterator[StreamEvent]]) -> Iterator[StreamEvent]:
        items: queue.Queue[Any] = queue.Queue()
        handle: dict[str, Any] = {}

        async def pump() -> None:
            handle["loop"], handle["task"] = asyncio.get_running_loop(), asyncio.current_task()
            async for event in make():
                items.put(event)

        def worker() -> None:
            try:
                asyncio.run(self._closing(pump()))
            except asyncio.CancelledError:
                pass
            except BaseException as exc:
                items.put(_Failed(exc))
            finally:
                items.put(_DONE)

        thread = threading.Thread(target=worker, name="ai-agent-stream", daemon=True)
        thread.start()
        try:
            while (item := items.get()) is not _DONE:
                if isinstance(item, _Failed):
                    raise item.exc
                yield item
        finally:
            if thread.is_alive() and "task" in handle:
                handle["loop"].call_soon_threadsafe(handle["task"].cancel)
            thread.join()
