"""Running a read to its end without an event loop, where it needs none (issue 20).

``asyncio`` costs a command-line read more than the read: it imports ``ssl``, ``socket``,
``subprocess``, ``concurrent.futures``, ``logging`` and ``inspect`` with its event loop. A read
of a local SQLite database needs none of them: the run store's methods are coroutines only so
an event loop stays free while SQLite works (`ai_agent.checkpoints._sql.threaded`), and the
checkpoints are read synchronously (`ai_agent.graph.plain_reads`). So `run_loopless` runs
the coroutine by hand; a step that does need a loop (LangGraph's runtime, for a run the plain
reader cannot read) says so with `NeedsEventLoop`, and the read runs again, whole, in
``asyncio.run``. Only reads go through here: running one twice changes nothing.

Examples:
    >>> async def read() -> int:
    ...     return 42
    >>> run_loopless(read), loop_running()
    (42, False)
    >>> async def needs_one() -> str:
    ...     require_loop("a demo")
    ...     return "read in an event loop"
    >>> run_loopless(needs_one)
    'read in an event loop'
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["NeedsEventLoop", "loop_running", "off_loop", "require_loop", "run_loopless"]

T = TypeVar("T")

# What asyncio raises when a step asks for the running loop and there is none: a step that
# needs one and does not say so (`require_loop`) still gets one, by running the read again.
_NO_LOOP = "no running event loop"


class NeedsEventLoop(Exception):  # noqa: N818 - a signal to run again, not an error anyone sees
    """A step of a coroutine run by `run_loopless` needs an event loop; it runs again in one."""


def loop_running() -> bool:
    """Whether this thread runs an event loop (asyncio not imported yet: it does not)."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return False
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


async def off_loop(fn: Callable[..., T], /, *args: Any) -> T:
    """``fn(*args)`` on a worker thread when an event loop runs (keeping it free), else here.

    Without a loop (a coroutine run by `run_loopless`) nothing waits for this thread.
    """
    if not loop_running():
        return fn(*args)
    import asyncio

    return await asyncio.to_thread(fn, *args)


def require_loop(what: str) -> None:
    """Raise `NeedsEventLoop` unless an event loop runs: ``what`` needs one."""
    if not loop_running():
        raise NeedsEventLoop(what)


def run_loopless(read: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """The result of ``read()``, run without an event loop where it needs none.

    ``read`` makes the coroutine; it is called a second time, and that coroutine run by
    ``asyncio.run``, when the first one needs a loop: it raised `NeedsEventLoop`, or it awaited
    something only a loop can finish. It must be safe to run twice (a read).
    """
    coro = read()
    try:
        while coro.send(None) is None:  # a bare yield (``asyncio.sleep(0)``): nothing to wait for
            pass
    except StopIteration as done:
        result: T = done.value
        return result
    except NeedsEventLoop:
        pass
    except RuntimeError as exc:
        if str(exc) != _NO_LOOP:
            raise
    else:  # it waits for a future: only an event loop can finish it
        coro.close()
    import asyncio

    return asyncio.run(read())
