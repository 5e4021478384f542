"""Listeners: the users' functions called with the typed lifecycle events of every run.

``agent.add_listener(fn)`` registers ``fn``; it is then called with each lifecycle event (see
`ai_agent.events`): run start and end, stage start and end, model retries, tool calls, gate
pause and resume, compaction. ``agent.add_listener(fn, ToolFinished, GatePaused)`` calls it with
those types only.

Listeners are called synchronously, in order, on the run's own task, so
`current_ids` inside a listener names the run (thread, run id,
stage) the event belongs to. Keep them quick: hand slow work to a queue or a thread. A listener
that raises is logged at WARNING (with its traceback, redacted) and the run goes on; one that
returns a coroutine is told off the same way, as nothing would ever await it.

Examples:
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Ping:
    ...     n: int
    >>> seen = []
    >>> bus = Listeners()
    >>> remove = bus.add(seen.append, Ping)
    >>> bus.publish(Ping(1)); bus.publish("not a ping")
    >>> remove(); bus.publish(Ping(2))
    >>> seen
    [Ping(n=1)]
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

from ai_agent.observability.logs import engine_logger

__all__ = ["Listener", "Listeners"]

Listener = Callable[[Any], object]

log = engine_logger("ai_agent.hooks")


class Listeners:
    """An ordered set of listeners, each with the event types it wants (all when none)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Replaced, never mutated: publish reads it without the lock.
        self._entries: tuple[tuple[Listener, tuple[type, ...]], ...] = ()

    def add(self, fn: Listener, *types: type) -> Callable[[], None]:
        """Call ``fn`` with every event (or those of ``types``); returns a function removing it."""
        if not callable(fn):
            raise TypeError(f"a listener must be callable, not {type(fn).__name__}")
        with self._lock:
            self._entries = (*self._entries, (fn, types))
        return lambda: self.remove(fn)

    def remove(self, fn: Listener) -> None:
        """Stop calling ``fn`` (nothing happens if it is not listening)."""
        with self._lock:
            self._entries = tuple(e for e in self._entries if e[0] is not fn)

    def __bool__(self) -> bool:
        return bool(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def wants(self, kind: type) -> bool:
        """Whether any listener takes events of ``kind`` (to skip building unwanted events)."""
        return any(not types or issubclass(kind, types) for _, types in self._entries)

    def publish(self, event: object) -> None:
        """Call each listener that wants ``event``; a failing listener is logged and skipped."""
        for fn, types in self._entries:
            if types and not isinstance(event, types):
                continue
            try:
                outcome = fn(event)
            except Exception as exc:
                log.warning(
                    "listener %s failed on %s; the run goes on",
                    _name(fn),
                    type(event).__name__,
                    exc=exc,
                )
                continue
            if inspect.isawaitable(outcome):
                if inspect.iscoroutine(outcome):
                    outcome.close()  # never awaited: close it so Python does not warn later
                log.warning(
                    "listener %s returned an awaitable, which is ignored: listeners are called "
                    "synchronously; hand async work to a task or queue yourself",
                    _name(fn),
                )


def _name(fn: Listener) -> str:
    return str(getattr(fn, "__qualname__", None) or repr(fn))
