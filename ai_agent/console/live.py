"""Live updates: server-sent events that tell open pages which runs changed.

The run store is the only source of truth and other processes write it (a worker, the CLI), so
the stream looks at it: every ``interval`` seconds it reads the most recently updated runs and
sends one ``runs`` event listing those whose status or last change differs from what it sent
before. A page reloads what it shows of those runs (`static/console.js`); nothing in an event is
rendered as markup. The first look, made before anything is sent, only records what is there.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ai_agent.graph import RunArchive

__all__ = ["run_changes"]

WATCHED = 200
"""How many of the most recently updated runs the stream compares (older ones rarely change)."""


async def run_changes(
    archive: RunArchive,
    *,
    interval: float,
    since: float | None = None,
    stopping: Callable[[], bool] = lambda: False,
) -> AsyncGenerator[str, None]:
    """Server-sent events, one ``runs`` event per look that found changes.

    Args:
        archive: Where the runs are.
        interval: Seconds between looks.
        since: When the page was made (the server's clock): a run changed after that and
            before the stream's first look is sent at once, so no change falls in between.
        stopping: True when the stream should end (the client left, the server stops).
    """
    seen = await _look(archive)
    yield "retry: 2000\n\n"  # how soon a browser reconnects after the server went away
    if since is not None:
        # A run whose last change is unknown (a damaged row) is sent when it changes again.
        missed = [
            (t, status)
            for t, (status, updated) in seen.items()
            if updated is not None and updated > since
        ]
        if missed:
            yield _event(missed)
    while not stopping():
        await asyncio.sleep(interval)
        now = await _look(archive)
        changed = [
            (t, status) for t, (status, updated) in now.items() if seen.get(t) != (status, updated)
        ]
        if changed:
            yield _event(changed)
        seen = now


def _event(changed: list[tuple[str, str]]) -> str:
    data = json.dumps([{"thread_id": thread, "status": status} for thread, status in changed])
    return f"event: runs\ndata: {data}\n\n"


async def _look(archive: RunArchive) -> dict[str, tuple[str, float | None]]:
    runs = await archive.list_runs(limit=WATCHED)
    return {r["thread_id"]: (r["status"], r["updated_at"]) for r in runs}
