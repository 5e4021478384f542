"""Serving the console: uvicorn on a socket bound here, and the worker that serves its answers.

The socket is bound before the server starts, so the URL printed (with its port, also when port
0 asked for any free one) is one the server already listens on. A request must arrive within
`ai_agent.console.limits.REQUEST_SECONDS` of its connection (or of the last response on it);
when the server stops, the live-update streams end, and whatever is still being answered
``SHUTDOWN_SECONDS`` later is cancelled, so Ctrl-C stops the console in bounded time.

Unless told not to (an ``ai-agent worker`` elsewhere serves the queue), the console runs a
`ai_agent.graph.Worker` over the same Agent: an answer queued in the browser is served as any
worker serves a plan, with the run's lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import uvicorn

from ai_agent.console.app import create_app
from ai_agent.console.auth import Access, hosts_for
from ai_agent.console.limits import REQUEST_SECONDS, deadline_protocol

if TYPE_CHECKING:
    from ai_agent.graph import Agent, Worker

__all__ = ["SHUTDOWN_SECONDS", "ConsoleServer", "bind"]

SHUTDOWN_SECONDS = 5
"""After a stop, how long requests still being answered get before they are cancelled."""


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0: any free port)."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError:
        sock.close()
        raise
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


@dataclass
class ConsoleServer:
    """One console: its Agent, credentials and the address it serves on.

    Args:
        agent: Reads runs and queues answers; its worker resumes them.
        token: The secret of the URL.
        host: The address bound (loopback unless the person chose otherwise).
        port: The port (0: any free one).
        worker: Whether to serve the plan queue here.
        poll: The worker's and the live updates' interval, in seconds.
        request_seconds: The time a client has to send a whole request.
    """

    agent: Agent
    token: str
    host: str = "127.0.0.1"
    port: int = 8765
    worker: bool = True
    poll: float = 1.0
    request_seconds: float = REQUEST_SECONDS
    _server: uvicorn.Server | None = field(default=None, init=False, repr=False)

    def stop(self) -> None:
        """Stop serving, as SIGINT does (`serve` returns once the server has stopped)."""
        if self._server is not None:
            self._server.should_exit = True

    async def serve(self, on_ready: Callable[[str], None]) -> None:
        """Serve until SIGINT, SIGTERM or `stop`; ``on_ready`` gets the base URL once it listens."""
        sock = bind(self.host, self.port)
        port = sock.getsockname()[1]
        access = Access(self.token, hosts_for(self.host, port))
        server: uvicorn.Server | None = None
        app = create_app(
            self.agent,
            access,
            interval=self.poll,
            stopping=lambda: server is not None and server.should_exit,
        )
        config = uvicorn.Config(
            app,
            log_level="warning",
            lifespan="off",
            access_log=False,
            http=deadline_protocol(self.request_seconds),
            ws="none",  # the console serves no WebSocket
            timeout_graceful_shutdown=SHUTDOWN_SECONDS,
        )
        server = self._server = _Server(config)
        worker = self._worker() if self.worker else None
        worker_task = asyncio.create_task(worker.run()) if worker is not None else None
        host = f"[{self.host.strip('[]')}]" if ":" in self.host else self.host
        on_ready(f"http://{host}:{port}/")
        try:
            await server.serve(sockets=[sock])
        finally:
            sock.close()
            if worker is not None and worker_task is not None:
                # As on a worker's SIGTERM: the runs it drives get their grace period, and
                # every lease it holds is given back.
                worker.stop()
                await worker_task

    def _worker(self) -> Worker:
        from ai_agent.graph import Worker

        return Worker(self.agent, poll=self.poll, on_event=None)


class _Server(uvicorn.Server):
    """uvicorn's server, which returns after a SIGINT or SIGTERM instead of raising it again.

    uvicorn re-raises the signal it stopped for once it has stopped: SIGTERM's default action
    would then kill the process before the console's worker gives its runs their grace period
    and its leases back (`ConsoleServer.serve`), and SIGINT would surface as KeyboardInterrupt.
    """

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        with super().capture_signals():
            try:
                yield
            finally:
                self._captured_signals.clear()  # the console has stopped: nothing to raise
