"""Streaming runs: ``Agent.astream`` / ``Agent.stream`` yield typed events as a run goes.

The run itself is the same as ``Agent.run``: the stream is a view of its progress events, fed
through a sink the run's context takes by its thread id, so several streams on one Agent do not
mix. Leaving the loop early cancels the run; it stays resumable from its last checkpoint.

What waits for a consumer that reads slowly, or not at all, is bounded (`_Backlog`), and the
consumer never sets the run's pace: status events are always kept; text deltas merge while the
consumer lags; tool output past `MAX_WAITING_CHARS` is counted and noted instead of kept (the
tool's result is not affected). The sync ``stream`` takes one event at a time from the async
one, so it holds no more.

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
import collections
import contextlib
import dataclasses
import io
import queue
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from typing import TYPE_CHECKING, Any, cast

from ai_agent.checkpoints.store import new_thread_id
from ai_agent.events import (
    FinalDelta,
    ModelDelta,
    ProgressEvent,
    RunFinished,
    StreamEvent,
    ToolOutput,
)
from ai_agent.graph.events import StreamView
from ai_agent.graph.result import RunResult

if TYPE_CHECKING:
    from ai_agent.graph.interrupts import Answer

__all__ = ["MAX_WAITING_CHARS", "MAX_WAITING_EVENTS", "StreamSinks", "Streams"]

#: The sink of each run being streamed, by thread id (a thread runs once at a time). The Agent
#: holds one; `Streams` writes it, and the run context (`ai_agent.graph.contexts.RunContexts`)
#: of that thread sends its (masked) events there too, and the model its token deltas.
StreamSinks = dict[str, Callable[[ProgressEvent], None]]
_DONE = object()

#: How many entries a stream holds for a consumer that has not read them yet. Past it, text
#: deltas of one source merge into that source's last entry (every character kept, in order).
MAX_WAITING_EVENTS = 1000
#: How many characters of text a stream holds for its consumer. Past it, tool output is
#: counted, not kept, and the stream says so: a tool is never held back by a consumer (a run
#: would then hold its lease, and a tool's time run out, for a reader that went away).
MAX_WAITING_CHARS = 1 << 20

_Text = ModelDelta | ToolOutput | FinalDelta


def _source(event: _Text) -> tuple[Any, ...]:
    """Which text an event continues: deltas of one source merge, of two never do."""
    if isinstance(event, ToolOutput):
        return ("tool", event.call_id, event.stream, event.iteration)
    if isinstance(event, ModelDelta):
        return ("model", event.iteration)
    return ("final",)


class _Entry:
    """One event waiting for the consumer; a text event gathers the deltas merged into it."""

    __slots__ = ("event", "key", "size", "skipped", "text")

    def __init__(self, event: StreamEvent) -> None:
        self.event = event
        self.key = _source(event) if isinstance(event, _Text) else None
        self.size = len(event.text) if isinstance(event, _Text) else 0  # characters kept
        self.text: io.StringIO | None = None
        self.skipped = 0  # characters of tool output not kept (the stream was full)

    def merge(self, text: str) -> None:
        # A StringIO, not str +=: an entry of a lagging consumer may gather megabytes.
        if self.text is None:
            self.text = io.StringIO()
            self.text.write(cast(_Text, self.event).text)
        self.text.write(text)
        self.size += len(text)

    def out(self) -> StreamEvent:
        if self.text is None and not self.skipped:
            return self.event
        text = self.text.getvalue() if self.text is not None else cast(_Text, self.event).text
        if self.skipped:
            text += (
                f"\n[... {self.skipped} more characters of output not streamed: the stream's "
                "consumer fell behind; the tool's result is not affected]\n"
            )
        return dataclasses.replace(cast(_Text, self.event), text=text)


class _Backlog:
    """The events of one streamed run that its consumer has not read yet, bounded.

    ``put`` is the run's sink, called on the event loop or from a sync tool's thread; it never
    waits. Status events (stages, tools, gate, retries, custom) are always kept. Text waits in
    at most ``max_events`` entries (past it, deltas merge per source) and ``max_chars``
    characters (past it, tool output is counted, not kept; the model's text, which the run's
    state holds anyway, is kept). The stream's view runs here, before anything waits, so what
    a quiet stream leaves out takes no room.
    """

    def __init__(self, view: StreamView, max_events: int, max_chars: int) -> None:
        self._view, self.max_events, self.max_chars = view, max_events, max_chars
        self._loop = asyncio.get_running_loop()
        self._owner = threading.get_ident()
        self._lock = threading.Lock()
        self._ready = asyncio.Event()  # the consumer waits on it
        self._items: collections.deque[_Entry] = collections.deque()
        self._tail: dict[tuple[Any, ...], _Entry] = {}  # text entries since the last status
        self.chars = 0  # characters of text waiting
        self._ended = False

    def put(self, event: ProgressEvent) -> None:
        """Take one event of the run (the run's stream sink)."""
        on_loop = threading.get_ident() == self._owner
        with self._lock:
            outs = [] if self._ended else self._view(event)
            if not outs:
                return
            for out in outs:
                self._add(out)
        if on_loop:
            self._ready.set()
        else:
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody reads any more
                self._loop.call_soon_threadsafe(self._ready.set)

    def _add(self, event: StreamEvent) -> None:
        if not isinstance(event, _Text):
            self._tail.clear()  # text never merges across a status event
            self._items.append(_Entry(event))
            return
        key, size = _source(event), len(event.text)
        last = self._tail.get(key)
        if isinstance(event, ToolOutput) and self.chars >= self.max_chars:
            # Past the bound it is counted and the stream says so: memory stays bounded
            # whatever a tool prints, and the tool goes on at its own pace.
            if last is None:
                last = self._tail[key] = _Entry(dataclasses.replace(event, text=""))
                self._items.append(last)
            last.skipped += size
            return
        self.chars += size
        if last is not None and not last.skipped and len(self._items) >= self.max_events:
            last.merge(event.text)  # the consumer lags: one entry per source, in order
            return
        self._tail[key] = _Entry(event)
        self._items.append(self._tail[key])

    def end(self) -> None:
        """No more events: the run is over, or the consumer left."""
        with self._lock:
            self._ended = True
        self._ready.set()

    def close(self) -> None:
        """The consumer left: what still waits for it is dropped."""
        self.end()
        with self._lock:
            self._items.clear()
            self._tail.clear()
            self.chars = 0

    async def get(self) -> StreamEvent | None:
        """The next event, once there is one; None once the run is over and all were read."""
        while True:
            with self._lock:
                if self._items:
                    entry = self._items.popleft()
                    if entry.key is not None and self._tail.get(entry.key) is entry:
                        del self._tail[entry.key]
                    self.chars -= entry.size
                    return entry.out()
                if self._ended:
                    return None
                self._ready.clear()
            await self._ready.wait()


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
        backlog = _Backlog(
            StreamView(quiet_tools=quiet_tools), MAX_WAITING_EVENTS, MAX_WAITING_CHARS
        )
        self.sinks[thread_id] = sink = backlog.put
        run: asyncio.Task[RunResult] = asyncio.create_task(start())
        run.add_done_callback(lambda _: backlog.end())
        try:
            while (event := await backlog.get()) is not None:
                yield event
            yield RunFinished(await run)
        finally:
            backlog.close()  # what waits for the consumer is dropped: it left
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
            # One event at a time: the next is taken from the async stream only once this
            # consumer took the last, so what waits is bounded by the async stream's backlog
            # (a thread's queue would take every event as it comes, and hold them all).
            taken = asyncio.Semaphore(1)
            handle["loop"], handle["task"] = asyncio.get_running_loop(), asyncio.current_task()
            handle["taken"] = taken
            async with contextlib.aclosing(cast(AsyncGenerator[StreamEvent], make())) as events:
                async for event in events:
                    await taken.acquire()
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
                with contextlib.suppress(RuntimeError):  # the loop is over: nothing to take
                    handle["loop"].call_soon_threadsafe(handle["taken"].release)
                yield item
        finally:
            if thread.is_alive() and "task" in handle:
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    handle["loop"].call_soon_threadsafe(handle["task"].cancel)
            thread.join()
