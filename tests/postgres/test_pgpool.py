"""Pooled connections are pinged before use only after sitting idle (``_pgpool.IdleCheck``)."""

from __future__ import annotations

import psycopg
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from ai_agent.checkpoints._pgpool import IdleCheck


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _terminate(url: str, pid: int) -> None:
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))


def test_a_busy_connection_is_pinged_once_and_an_idle_one_again(pg_url: str) -> None:
    clock = Clock()
    idle = IdleCheck(2.0, clock=clock)
    with ConnectionPool(pg_url, min_size=1, max_size=1, check=idle.check) as pool:
        for _ in range(10):  # one right after another: no round trip before each
            with pool.connection() as conn:
                conn.execute("SELECT 1")
            clock.now += 0.5
        assert idle.pings == 1  # the first hand-out of the connection
        clock.now += 2.5
        with pool.connection() as conn:
            conn.execute("SELECT 1")
        assert idle.pings == 2


def test_an_idle_connection_the_server_dropped_is_replaced_before_use(pg_url: str) -> None:
    clock = Clock()
    idle = IdleCheck(2.0, clock=clock)
    with ConnectionPool(pg_url, min_size=1, max_size=1, check=idle.check) as pool:
        with pool.connection() as conn:
            pid = conn.info.backend_pid
        _terminate(pg_url, pid)  # a restart, an idle timeout, a dropped link
        clock.now += 3
        with pool.connection() as conn:  # pinged, found dead, replaced by a new one
            assert conn.execute("SELECT 1").fetchone() == (1,)
            assert conn.info.backend_pid != pid


async def test_the_async_pool_pings_only_idle_connections_too(pg_url: str) -> None:
    clock = Clock()
    idle = IdleCheck(2.0, clock=clock)
    pool = AsyncConnectionPool(pg_url, min_size=1, max_size=1, check=idle.acheck, open=False)
    await pool.open()
    try:
        for _ in range(5):
            async with pool.connection() as conn:
                await conn.execute("SELECT 1")
        assert idle.pings == 1
        async with pool.connection() as conn:
            pid = conn.info.backend_pid
        _terminate(pg_url, pid)
        clock.now += 3
        async with pool.connection() as conn:
            cur = await conn.execute("SELECT 1")
            assert await cur.fetchone() == (1,)
            assert conn.info.backend_pid != pid
        assert idle.pings == 3  # the dead one, then its replacement's first hand-out
    finally:
        await pool.close()
