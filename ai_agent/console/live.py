"""Live updates: server-sent events that tell open pages which runs changed.

The run store is the only source of truth and other processes write it (a worker, the CLI), so
the stream looks at it: every ``interval`` seconds it reads the most recently updated runs and
sends one ``runs`` event listing those whose status or last change differs from what it sent
before. A page reloads what it shows of those runs (`static/console.js`); nothing in an event is
rendered as markup. The first look, made before anything is sent, only records what is there.

Every stream of a console shares its `Looks`: however many pages are open, the run store is
read at most once per half interval, and at most `MAX_STREAMS` streams are open at once (more
get ``503``). A stream ends when the server stops; a look the store refuses (a damaged row, a
file gone) is skipped, and the stream goes on with the next.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import time
from collections.abc import AsyncGenerator, Callable
from typing import TYPE_CHECKING

from starlette.responses import PlainTextResponse, StreamingResponse

from ai_agent.checkpoints.store import check_thread_id
from ai_agent.errors import InvalidThreadIdError, StoreError

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send

    from ai_agent.graph import RunArchive

__all__ = ["MAX_STREAMS", "EventStream", "Looks", "run_changes"]

WATCHED = 200
"""How many of the most recently updated runs the stream compares (older ones rarely change)."""

MAX_STREAMS = 32
"""Streams open at once; a page that finds them all taken works without live updates."""

STATUS_CHARS = 40
"""A status in an event is cut to this many characters (a row edited by hand may hold more)."""

STOP_CHECK = 0.25
"""The longest a stream sleeps between looks at whether the server is stopping (seconds)."""

READ_ERRORS = (StoreError, sqlite3.Error)
"""What a run store raises when it cannot be read (a damaged row or file, a file gone)."""


def read_error(exc: BaseException) -> bool:
    """Whether ``exc`` says the run store cannot be read.

    `READ_ERRORS`, or the PostgreSQL driver's errors (a server gone, a statement timed out),
    told by their module: psycopg is an extra, loaded only where a PostgreSQL store is used.
    """
    return isinstance(exc, READ_ERRORS) or type(exc).__module__.split(".")[0] == "psycopg"


logger = logging.getLogger(__name__)

Look = dict[str, tuple[str, float | None]]


class Looks:
    """The looks at the run store that a console's streams share, and how many streams are open.

    Args:
        archive: Where the runs are.
        interval: Seconds between a stream's looks; a look younger than half of it is reused.
        stopping: True once the server stops: every stream then ends.
        max_streams: Streams allowed at once.
    """

    def __init__(
        self,
        archive: RunArchive,
        interval: float,
        stopping: Callable[[], bool] = lambda: False,
        max_streams: int = MAX_STREAMS,
    ) -> None:
        self.archive = archive
        self.interval = interval
        self.stopping = stopping
        self.max_streams = max_streams
        self.streams = 0
        self.reads = 0  # looks that read the store: what a test counts
        self._lock = asyncio.Lock()
        self._latest: Look | None = None
        self._at = -float("inf")

    async def look(self) -> Look | None:
        """The runs' statuses and last changes, or None when the store could not be read."""
        async with self._lock:
            if time.monotonic() - self._at >= self.interval / 2:
                self.reads += 1
                self._latest = await _look(self.archive)
                self._at = time.monotonic()
            return self._latest


class EventStream(StreamingResponse):
    """The ``/events`` response: a stream of `run_changes`, or 503 when too many are open."""

    def __init__(self, looks: Looks, since: float | None) -> None:
        self.looks = looks
        super().__init__(run_changes(looks, since=since), media_type="text/event-stream")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Stream, counted among the open streams while it lasts."""
        looks = self.looks
        if looks.streams >= looks.max_streams:
            refusal = PlainTextResponse(
                f"503: {looks.max_streams} live-update streams are open already; close some "
                "of the console's pages (this page works, without live updates)",
                status_code=503,
                headers={"retry-after": "30"},
            )
            await refusal(scope, receive, send)
            return
        looks.streams += 1  # no await between the check and this: the limit holds
        try:
            await super().__call__(scope, receive, send)
        finally:
            looks.streams -= 1


async def run_changes(
    source: RunArchive | Looks,
    *,
    interval: float | None = None,
    since: float | None = None,
    stopping: Callable[[], bool] | None = None,
) -> AsyncGenerator[str, None]:
    """Server-sent events, one ``runs`` event per look that found changes.

    Args:
        source: Where the runs are, or the console's shared `Looks` at them.
        interval: Seconds between looks (the `Looks`' when not given).
        since: When the page was made (the server's clock): a run changed after that and
            before the stream's first look is sent at once, so no change falls in between.
        stopping: True when the stream should end (the `Looks`' when not given).
    """
    looks = source if isinstance(source, Looks) else Looks(source, interval or 0.0)
    interval = looks.interval if interval is None else interval
    stopping = looks.stopping if stopping is None else stopping
    seen = await looks.look()
    yield "retry: 2000\n\n"  # how soon a browser reconnects after the server went away
    if seen is not None and (missed := _missed(seen, since)):
        yield _event(missed)
    while not stopping():
        await _sleep(interval, stopping)
        now = await looks.look()
        if now is None or stopping():
            continue  # an unreadable store: the next look may read it again
        if seen is None:  # the first look the store answered: as the first look of all
            changed = _missed(now, since)
        else:
            changed = [(t, s) for t, (s, updated) in now.items() if seen.get(t) != (s, updated)]
        if changed:
            yield _event(changed)
        seen = now


def _missed(look: Look, since: float | None) -> list[tuple[str, str]]:
    """The runs of a stream's first look that changed after its page was made."""
    if since is None:
        return []
    # A run whose last change is unknown (a damaged row) is sent when it changes again.
    return [(t, s) for t, (s, updated) in look.items() if updated is not None and updated > since]


async def _sleep(seconds: float, stopping: Callable[[], bool]) -> None:
    """Sleep ``seconds``, or less once ``stopping`` says so."""
    deadline = time.monotonic() + seconds
    while True:
        await asyncio.sleep(max(0.0, min(STOP_CHECK, deadline - time.monotonic())))
        if stopping() or time.monotonic() >= deadline:
            return


def _event(changed: list[tuple[str, str]]) -> str:
    data = json.dumps([{"thread_id": thread, "status": status} for thread, status in changed])
    return f"event: runs\ndata: {data}\n\n"


async def _look(archive: RunArchive) -> Look | None:
    try:
        runs = await archive.list_runs(limit=WATCHED)
    except Exception as exc:
        if not read_error(exc):
            raise
        said = archive.database.hide(str(exc))  # a driver's message may quote the URL
        logger.warning("live updates: the run store could not be read: %s", said)
        return None
    look: Look = {}
    for r in runs:
        try:
            # Only a run a page can show: a thread id outside the grammar (a row edited by
            # hand, megabytes long) is never sent; nor is a status longer than any status.
            thread = check_thread_id(r["thread_id"])
        except InvalidThreadIdError:
            continue
        look[thread] = (str(r["status"])[:STATUS_CHARS], r["updated_at"])
    return look
