"""Clients that misbehave, against a real console server on 127.0.0.1 (uvicorn, real sockets).

Each test serves the console in the test's own event loop (`ConsoleServer.serve`, the server
``ai-agent ui`` runs) over a real SQLite file, and talks to it with raw sockets or httpx: a
client that never sends a whole request, many live-update streams, a client that leaves in the
middle of one, a page of another origin. The stop of a real ``ai-agent ui`` with a stream open
is in a subprocess. Waits are bounded by ``DEADLINE``, a limit, never a measurement.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ai_agent import Agent
from ai_agent.console import ConsoleServer
from ai_agent.console.auth import COOKIE, Access
from ai_agent.console.live import MAX_STREAMS
from tests.console.conftest import TOKEN, MakeAgent, client, write_call

DEADLINE = 60.0  # the longest any wait here may take before the test fails


@contextlib.asynccontextmanager
async def serving(agent: Agent, **options: Any) -> AsyncIterator[tuple[ConsoleServer, str]]:
    """The console of ``agent`` served on a free loopback port; its base URL."""
    urls: list[str] = []
    ready = asyncio.Event()

    def on_ready(url: str) -> None:
        urls.append(url)
        ready.set()

    server = ConsoleServer(agent, TOKEN, port=0, worker=False, **options)
    task = asyncio.create_task(server.serve(on_ready))
    await asyncio.wait_for(ready.wait(), DEADLINE)
    try:
        yield server, urls[0].rstrip("/")
    finally:
        server.stop()
        await asyncio.wait_for(task, DEADLINE)


def signed_in(base: str) -> httpx.AsyncClient:
    http = httpx.AsyncClient(base_url=base, timeout=DEADLINE)
    http.cookies.set(COOKIE, Access(TOKEN).session)
    return http


async def closed_by_server(reader: asyncio.StreamReader) -> bytes:
    """Everything the server sent until it closed the connection (fails past the deadline)."""
    return await asyncio.wait_for(reader.read(), DEADLINE)


async def test_a_connection_that_never_sends_a_request_is_closed(make_agent: MakeAgent) -> None:
    async with make_agent([]) as agent, serving(agent, request_seconds=0.2) as (_, base):
        host, port = base.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        # Before: uvicorn arms no timer until a first response, so this waited forever.
        assert await closed_by_server(reader) == b""
        writer.close()


async def test_a_request_sent_a_byte_at_a_time_is_cut_off(make_agent: MakeAgent) -> None:
    async with make_agent([]) as agent, serving(agent, request_seconds=0.2) as (_, base):
        host, port = base.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        head = f"GET /runs HTTP/1.1\r\nHost: {host}:{port}\r\nX-Pad: {'a' * 10_000}\r\n\r\n"
        sent = 0
        with contextlib.suppress(ConnectionError):
            for byte in head.encode():  # slowloris: every byte resets no timer
                if reader.at_eof():
                    break
                writer.write(bytes([byte]))
                await writer.drain()
                sent += 1
                await asyncio.sleep(0.01)
        # No answer: the request never arrived. The server may close with bytes of ours still
        # unread, which TCP says with a reset instead of an end.
        with contextlib.suppress(ConnectionResetError):
            assert await closed_by_server(reader) == b""
        assert sent < len(head)
        writer.close()


async def test_a_form_whose_body_never_ends_is_cut_off_without_an_error(
    make_agent: MakeAgent, caplog: pytest.LogCaptureFixture
) -> None:
    server_log = logging.getLogger("uvicorn.error")
    async with make_agent([]) as agent:
        try:
            async with serving(agent, request_seconds=0.2) as (_, base):
                server_log.addHandler(caplog.handler)  # after uvicorn configured its logging
                host, port = base.removeprefix("http://").split(":")
                reader, writer = await asyncio.open_connection(host, int(port))
                writer.write(
                    f"POST /inbox/r1/answer HTTP/1.1\r\nHost: {host}:{port}\r\n"
                    f"Cookie: {COOKIE}={Access(TOKEN).session}\r\n"
                    "Content-Type: application/x-www-form-urlencoded\r\n"
                    "Content-Length: 1000\r\n\r\ncsrf=".encode()
                )
                await writer.drain()
                await closed_by_server(reader)
                writer.close()
            # The server has stopped: every request it took has been answered or has failed.
        finally:
            server_log.removeHandler(caplog.handler)
    # Before: "Exception in ASGI application" and a ClientDisconnect traceback.
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_streams_share_one_look_at_the_run_store(make_agent: MakeAgent) -> None:
    async with make_agent([write_call()]) as agent:
        await agent.run("write", thread_id="s1")
        reads = 0
        list_runs = agent.archive.list_runs

        async def counted(**kwargs: Any) -> Any:
            nonlocal reads
            reads += 1
            return await list_runs(**kwargs)

        agent.archive.list_runs = counted  # type: ignore[method-assign]
        async with (
            serving(agent, poll=3600) as (_, base),
            signed_in(base) as http,
            contextlib.AsyncExitStack() as streams,
        ):
            for _ in range(10):
                response = await streams.enter_async_context(http.stream("GET", "/events"))
                assert response.status_code == 200
                assert await anext(response.aiter_lines()) == "retry: 2000"
            # Before: each stream read the store itself, ten reads a look.
            assert reads == 1


async def test_streams_past_the_limit_are_refused_until_one_closes(
    make_agent: MakeAgent,
) -> None:
    async with make_agent([]) as agent, serving(agent) as (_, base):
        limits = httpx.Limits(max_connections=MAX_STREAMS + 2)
        async with (
            httpx.AsyncClient(base_url=base, timeout=DEADLINE, limits=limits) as http,
            contextlib.AsyncExitStack() as streams,
        ):
            http.cookies.set(COOKIE, Access(TOKEN).session)
            opened = []
            for _ in range(MAX_STREAMS):
                response = await streams.enter_async_context(http.stream("GET", "/events"))
                assert response.status_code == 200
                opened.append(response)
            refused = await http.get("/events")
            assert refused.status_code == 503
            assert "live-update streams are open already" in refused.text
            await opened[0].aclose()  # one page closes: its place is free again
            deadline = asyncio.get_running_loop().time() + DEADLINE
            while True:
                async with http.stream("GET", "/events") as again:
                    if again.status_code == 200:
                        break
                assert asyncio.get_running_loop().time() < deadline
                await asyncio.sleep(0.05)


async def test_a_client_that_leaves_mid_stream_leaves_no_task(make_agent: MakeAgent) -> None:
    async with make_agent([]) as agent, serving(agent, poll=0.05) as (_, base):
        await asyncio.sleep(0.1)  # the server's own tasks have started
        before = len(asyncio.all_tasks())
        async with signed_in(base) as http, http.stream("GET", "/events") as response:
            assert await anext(response.aiter_lines()) == "retry: 2000"
        deadline = asyncio.get_running_loop().time() + DEADLINE
        while len(asyncio.all_tasks()) > before:  # the stream's task ends with its client
            assert asyncio.get_running_loop().time() < deadline
            await asyncio.sleep(0.05)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_a_stream_open_when_the_console_stops_ends_and_the_console_exits(
    tmp_path: Path, stop: signal.Signals
) -> None:
    from tests.console.browser import pause, script, serve

    model = script(tmp_path, write_call())
    pause(model, "stop-1")
    with serve(model) as served:
        host, port = served.base.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=DEADLINE) as sock:
            sock.sendall(
                f"GET /events HTTP/1.1\r\nHost: {host}:{port}\r\n"
                f"Cookie: {COOKIE}={Access(served.token).session}\r\n\r\n".encode()
            )
            received = b""
            while b"retry: 2000" not in received:
                received += sock.recv(4096)
            served.process.send_signal(stop)
            # Before: uvicorn waited for the stream to end, and it never did.
            assert served.process.wait(timeout=DEADLINE) == 0
            while chunk := sock.recv(4096):  # the stream was ended, not left hanging
                received += chunk
            assert received.endswith(b"0\r\n\r\n")  # the last chunk: a stream that ended


async def test_a_page_of_another_origin_cannot_read_the_console(make_agent: MakeAgent) -> None:
    async with make_agent([write_call()]) as agent:
        await agent.run("write", thread_id="o1")
        http = client(agent)
        http.cookies.set(COOKIE, Access(TOKEN).session)
        # Another port of this host is the same site: the SameSite=Strict cookie goes along.
        foreign = {"origin": "http://127.0.0.1:9999"}
        async with http:
            for path in ("/events", "/runs", "/inbox", "/runs/o1", "/static/console.js"):
                response = await http.get(path, headers=foreign)
                assert response.status_code == 403, path
                assert "access-control-allow-origin" not in response.headers
            assert (await http.get("/runs", headers={"origin": "null"})).status_code == 403
            own = {"origin": "http://127.0.0.1:8765"}
            assert (await http.get("/runs", headers=own)).status_code == 200
            assert (await http.get("/runs")).status_code == 200
