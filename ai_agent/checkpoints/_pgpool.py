"""When a pooled PostgreSQL connection is checked before use: only after it sat idle a while.

``psycopg_pool`` can check a connection each time it hands one out (``check=``): an empty
query, one network round trip, so that a connection the server or the network dropped while it
sat in the pool is replaced instead of failing the caller's statement. Checking on *every*
hand-out doubled the round trips of a worker: a resumed run takes a pooled connection about 60
times (each checkpoint, each write, each run-store call), and the pings were more than half of
its transactions and about a third of the CPU the worker and the server spent per run.

A connection handed out a moment ago was working a moment ago; the ones at risk are those that
sat idle (a server restart, an idle timeout, a dropped link). So `IdleCheck` pings a connection
only when it was last handed out more than ``idle_seconds`` ago: a busy worker never pings, and
a worker that waited for the next plan pings once before it starts again.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from typing import Any

from psycopg_pool import AsyncConnectionPool, ConnectionPool

__all__ = ["IDLE_SECONDS", "IdleCheck"]

IDLE_SECONDS = 2.0
"""A connection idle longer than this is pinged before it is handed out again."""


class IdleCheck:
    """A pool's ``check``: ping a connection only if it was not handed out recently.

    One instance per pool; use `check` (sync pool) or `acheck` (async pool).

    Args:
        idle_seconds: Ping a connection last handed out longer ago than this.
        clock: Monotonic seconds (a test passes its own).
    """

    def __init__(
        self, idle_seconds: float = IDLE_SECONDS, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.idle_seconds = idle_seconds
        self._clock = clock
        # Keyed by the connection itself: a closed and collected one leaves no entry behind.
        self._handed_out: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()
        self.pings = 0

    def _stale(self, conn: Any) -> bool:
        """Whether ``conn`` must be pinged now; it counts as handed out from here on."""
        now = self._clock()
        last = self._handed_out.get(conn)
        self._handed_out[conn] = now
        stale = last is None or now - last > self.idle_seconds
        self.pings += stale
        return stale

    def check(self, conn: Any) -> None:
        """For a ``ConnectionPool``: raise if an idle connection no longer works."""
        if self._stale(conn):
            ConnectionPool.check_connection(conn)

    async def acheck(self, conn: Any) -> None:
        """For an ``AsyncConnectionPool``: raise if an idle connection no longer works."""
        if self._stale(conn):
            await AsyncConnectionPool.check_connection(conn)
