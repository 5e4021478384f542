"""HTTP logging of model requests: httpx event hooks on the clients the engine creates.

``make_chat_model`` gives its httpx clients these hooks. Per request they log:

- INFO: method, URL (redacted) and response status, with the time to the response headers;
- DEBUG: request and response headers (credentials masked);
- DEBUG, only when ``include_request_body`` / ``include_response_body`` is on: the bodies,
  redacted (a streamed reply's keys across its events, `masked_across_events`), cut to
  ``body_size_limit`` bytes; an image or audio clip in a request shows as its
  size and digest (`elide_media`). A response body is logged as it is read, without
  holding a streamed reply back: the stream passes through untouched and its first bytes are
  kept aside for the log.

The hooks run on the task that makes the request, so the records carry the model call's ids
(``request_id`` is its ``X-Request-ID``).

Examples:
    >>> import httpx
    >>> hooks = HttpLog(None, Redactor()).event_hooks()
    >>> client = httpx.AsyncClient(event_hooks=hooks)
    >>> sorted(hooks)
    ['request', 'response']
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any

import httpx

from ai_agent.observability.logs import engine_logger
from ai_agent.observability.redaction import Redactor, cut_body, elide_media
from ai_agent.observability.streamed import masked_across_events

if TYPE_CHECKING:
    from ai_agent.config import LoggingConfig

__all__ = ["HttpLog", "cut_body"]

log = engine_logger("ai_agent.http")
_STARTED = "ai_agent_started"
# Bytes kept past the limit before redaction, so a secret that straddles the cut is still
# recognised whole and masked rather than half shown.
_MARGIN = 512


class HttpLog:
    """httpx event hooks that log each request and response (see the module docstring).

    Args:
        config: The logging settings (bodies, size limit); defaults when None.
        redactor: Masks credentials in URLs, headers and bodies.
    """

    def __init__(self, config: LoggingConfig | None, redactor: Redactor) -> None:
        self.request_bodies = bool(config and config.include_request_body)
        self.response_bodies = bool(config and config.include_response_body)
        self.limit = config.body_size_limit if config is not None else 1024
        self.redactor = redactor

    def event_hooks(self) -> dict[str, list[Callable[..., Any]]]:
        """Hooks for an ``httpx.AsyncClient``."""
        return {"request": [self.on_request], "response": [self.on_response]}

    def sync_event_hooks(self) -> dict[str, list[Callable[..., Any]]]:
        """Hooks for an ``httpx.Client``."""
        return {"request": [self.request], "response": [self.sync_response]}

    async def on_request(self, request: httpx.Request) -> None:
        """The async request hook."""
        self.request(request)

    async def on_response(self, response: httpx.Response) -> None:
        """The async response hook."""
        self.response(response)

    def sync_response(self, response: httpx.Response) -> None:
        """The sync response hook."""
        self.response(response, sync=True)

    def request(self, request: httpx.Request) -> None:
        """Note the start time; log headers and (when opted in) the body at DEBUG."""
        request.extensions[_STARTED] = time.perf_counter()
        if not log.enabled(logging.DEBUG):
            return
        redact = self.redactor
        method, url = request.method, redact(str(request.url))
        log.debug(
            "request %s %s headers %s",
            method,
            url,
            redact.headers(request.headers.multi_items()),
            redactor=redact,
            fields={"method": method, "url": url},
        )
        if self.request_bodies:
            try:
                body = request.content.decode(errors="replace")
            except httpx.RequestNotRead:  # a streamed upload: nothing to show without reading it
                return
            log.debug(
                "request body: %s",
                cut_body(redact(elide_media(body)), self.limit, len(request.content)),
                redactor=redact,
                fields={"bytes": len(request.content)},
            )

    def response(self, response: httpx.Response, *, sync: bool = False) -> None:
        """Log method, URL and status at INFO; headers (and the body, opted in) at DEBUG."""
        request = response.request
        started = request.extensions.get(_STARTED)
        elapsed = round((time.perf_counter() - started) * 1000, 1) if started else None
        redact = self.redactor
        if log.enabled(logging.INFO):
            url = redact(str(request.url))
            log.info(
                "%s %s -> %d%s",
                request.method,
                url,
                response.status_code,
                f" ({elapsed} ms)" if elapsed is not None else "",
                redactor=redact,
                fields={
                    "method": request.method,
                    "url": url,
                    "status": response.status_code,
                    "duration_ms": elapsed,
                },
            )
        if not log.enabled(logging.DEBUG):
            return
        log.debug(
            "response %d headers %s",
            response.status_code,
            redact.headers(response.headers.multi_items()),
            redactor=redact,
        )
        if self.response_bodies:
            self._tee(response, sync)

    def _tee(self, response: httpx.Response, sync: bool) -> None:
        keep = self.limit + _MARGIN
        kept = bytearray()
        total = [0]

        def take(chunk: bytes) -> None:
            total[0] += len(chunk)
            if len(kept) < keep:
                kept.extend(chunk[: keep - len(kept)])

        def done() -> None:
            # Masked across its events too: a streamed reply cuts a key it repeats into pieces.
            body = masked_across_events(kept.decode(errors="replace"), self.redactor.secrets)
            text = cut_body(self.redactor(body), self.limit, total[0])
            log.debug("response body: %s", text, redactor=self.redactor, fields={"bytes": total[0]})

        # The client's kind decides: some streams (httpx.ByteStream) are both sync and async.
        stream = response.stream
        if sync and isinstance(stream, httpx.SyncByteStream):
            response.stream = _SyncTee(stream, take, done)
        elif not sync and isinstance(stream, httpx.AsyncByteStream):
            response.stream = _AsyncTee(stream, take, done)


class _AsyncTee(httpx.AsyncByteStream):
    """Passes a response stream through, showing each chunk to ``take``; ``done`` on close."""

    def __init__(
        self, inner: httpx.AsyncByteStream, take: Callable[[bytes], None], done: Callable[[], None]
    ) -> None:
        self.inner, self.take, self.done = inner, take, done
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            self.take(chunk)
            yield chunk

    async def aclose(self) -> None:
        try:
            await self.inner.aclose()
        finally:
            if not self.closed:
                self.closed = True
                self.done()


class _SyncTee(httpx.SyncByteStream):
    """The synchronous twin of `_AsyncTee`, for ``httpx.Client``."""

    def __init__(
        self, inner: httpx.SyncByteStream, take: Callable[[bytes], None], done: Callable[[], None]
    ) -> None:
        self.inner, self.take, self.done = inner, take, done
        self.closed = False

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.inner:
            self.take(chunk)
            yield chunk

    def close(self) -> None:
        try:
            self.inner.close()
        finally:
            if not self.closed:
                self.closed = True
                self.done()
