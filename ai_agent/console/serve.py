"""Serving the console: uvicorn on a socket bound here, and the worker that serves its answers.

The socket is bound before the server starts, so the URL printed (with its port, also when port
0 asked for any free one) is one the server already listens on. Unless told not to (an
``ai-agent worker`` elsewhere serves the queue), the console runs a `ai_agent.graph.Worker`
over the same Agent: an answer queued in the browser is served as any worker serves a plan,
with the run's lease.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import uvicorn

from ai_agent.console.app import create_app
from ai_agent.console.auth import Access, hosts_for

if TYPE_CHECKING:
    from ai_agent.graph import Agent, Worker

__all__ = ["ConsoleServer", "bind"]


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
    """

    agent: Agent
    token: str
    host: str = "127.0.0.1"
    port: int = 8765
    worker: bool = True
    poll: float = 1.0

    async def serve(self, on_ready: Callable[[str], None]) -> None:
        """Serve until SIGINT or SIGTERM; ``on_ready`` gets the base URL once it listens."""
        sock = bind(self.host, self.port)
        port = sock.getsockname()[1]
        access = Access(self.token, hosts_for(self.host, port))
        app = create_app(self.agent, access, interval=self.poll)
        config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
        server = uvicorn.Server(config)
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
