"""What the console's HTTP server bounds for clients that never finish a request.

uvicorn bounds the size of a request's head (h11: 16 KiB incomplete, then ``400``) and closes a
keep-alive connection idle for ``timeout_keep_alive`` seconds after a response, but it gives a
connection no deadline for the request itself: a client that connects and sends nothing, or
sends its headers a byte a second (slowloris), holds a connection, and a file descriptor,
forever. `DeadlineProtocol` closes such a connection: from the moment it opens, or its last
response ends, the whole next request (head and body) must arrive within ``REQUEST_SECONDS``.
A request being answered, such as a live-update stream, is not cut by it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

if TYPE_CHECKING:
    from uvicorn.config import Config
    from uvicorn.server import ServerState

__all__ = ["REQUEST_SECONDS", "DeadlineProtocol", "deadline_protocol"]

REQUEST_SECONDS = 10.0
"""The time a client has to send a whole request, from connecting or from the last response."""


class DeadlineProtocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, with a deadline for each request to arrive."""

    request_seconds = REQUEST_SECONDS

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:  # noqa: D102 - uvicorn's
        super().connection_made(transport)  # type: ignore[arg-type]
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:  # noqa: D102 - uvicorn's
        self._disarm()
        super().connection_lost(exc)

    def on_response_complete(self) -> None:  # noqa: D102 - uvicorn's
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # the next request on this connection gets its own time

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.request_seconds, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        # Still waiting for the head (IDLE) or the rest of the body: a request that has all
        # arrived (DONE) is being answered, and its answer may take as long as it takes.
        if self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
            # Nothing to say to a client that never finished asking: the connection ends.
            self.transport.close()


def deadline_protocol(seconds: float) -> type[DeadlineProtocol]:
    """A `DeadlineProtocol` whose requests must arrive within ``seconds``."""

    class Limited(DeadlineProtocol):
        request_seconds = seconds

    return Limited
