"""The chat model of any OpenAI-compatible ``/v1/chat/completions`` server, from settings.

Its HTTP clients read every response body through `BodyLimits`. The caller's size cap
(``max_response_chars``) counts the reply once it is parsed and its deadlines bound the time;
neither bounds what the HTTP client holds before that. A server can send one line that never
ends, stream parts whose metadata the client keeps concatenating, or a gzip body of kilobytes
that decodes to gigabytes (httpx decodes each chunk whole, and zstd reaches ratios past
30000:1). `BodyLimits` stops a body at a limit with `ai_agent.errors.ResponseTooLargeError`,
decodes gzip itself in bounded pieces, and refuses any coding it did not offer. It is an httpx
response hook that wraps the response's stream before the body is read, as
`ai_agent.observability.httplog.HttpLog` does to show bodies; listed first, so the log sees the
body decoded and bounded.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any

import httpx  # the clients' own library; its stream classes are the base of the bounded ones

from ai_agent.errors import ModelResponseError, ResponseTooLargeError

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from ai_agent.config import ModelBackendSettings
    from ai_agent.observability.httplog import HttpLog

__all__ = ["ACCEPT_ENCODING", "BodyLimits", "body_limit", "make_chat_model"]


def make_chat_model(
    backend: ModelBackendSettings,
    *,
    http_log: HttpLog | None = None,
    max_body_bytes: int | None = None,
) -> BaseChatModel:
    """A ChatOpenAI for the configured OpenAI-compatible server (`StrictChatOpenAI`).

    Its streamed tool-call arguments reach the caller unparsed, for one strict parse there
    (`ai_agent.models.strict_openai`). Retries are ours (``ChatModelCaller``), so the client's
    own are off; usage is requested when streaming because langchain-openai turns it off
    whenever ``base_url`` is set. The model gets its own HTTP clients (langchain-openai otherwise
    shares one process-wide client, whose pooled connections outlive the event loop they were
    made on); ``ChatModelCaller.aclose`` closes them.

    Args:
        backend: The server, model and generation settings.
        http_log: Event hooks that log each request (method, URL, status; headers and bodies at
            DEBUG). See `ai_agent.observability.httplog.HttpLog`.
        max_body_bytes: Decoded bytes one response may take (None: room for a reply of
            ``max_response_chars``, `body_limit`). A body past it is a `ResponseTooLargeError`
            before it fills memory (`BodyLimits`).
    """
    from ai_agent.models.caller import shown_url
    from ai_agent.models.strict_openai import StrictChatOpenAI

    key = backend.api_key.get_secret_value() if backend.api_key is not None else "not-needed"
    # No pooled keep-alive connections: an Agent may drive runs on several event loops
    # (run_sync, stream), and a pooled connection belongs to the loop that opened it. A local
    # server answers in seconds; one TCP handshake per call costs nothing next to that.
    limits = httpx.Limits(max_keepalive_connections=0)
    bodies = BodyLimits(
        max_body_bytes or body_limit(backend.max_response_chars), shown_url(backend.base_url)
    )
    # Only the coding the body limits decode in bounded pieces is offered (httpx offers zstd).
    headers = {"Accept-Encoding": ACCEPT_ENCODING}
    params: dict[str, Any] = {
        "base_url": backend.base_url,
        "api_key": key,
        "model": backend.model,
        "timeout": backend.timeout,
        "max_retries": 0,
        "use_responses_api": False,
        "stream_usage": True,
        # ChatModelCaller's limits (total_timeout, idle_timeout) govern a streamed reply, with
        # retryable errors; the client's own per-part limit would be a second, fixed one.
        "stream_chunk_timeout": None,
        "http_client": httpx.Client(
            limits=limits,
            timeout=backend.timeout,
            headers=headers,
            event_hooks=_first(
                bodies.sync_response, http_log.sync_event_hooks() if http_log else {}
            ),
        ),
        "http_async_client": httpx.AsyncClient(
            limits=limits,
            timeout=backend.timeout,
            headers=headers,
            event_hooks=_first(bodies.on_response, http_log.event_hooks() if http_log else {}),
        ),
    }
    for name in ("temperature", "max_tokens", "top_p", "seed"):
        value = getattr(backend, name, None)
        if value is not None:
            params[name] = value
    return StrictChatOpenAI(**params)


def _first(bound: Callable[..., Any], hooks: dict[str, list[Callable[..., Any]]]) -> dict[str, Any]:
    """``hooks`` with the body limits' response hook ``bound`` first.

    Every later hook then reads the body decoded and bounded (the HTTP log's copy included).
    """
    return {**hooks, "response": [bound, *hooks.get("response", [])]}


# The one coding asked for: the one decoded here, piece by piece.
ACCEPT_ENCODING = "gzip"
_GZIP = frozenset({"gzip", "x-gzip"})
# Decoded bytes per piece: what one chunk of the wire may become before it is counted.
_PIECE = 64 * 1024
# Room for what the cap does not count: envelopes of a streamed reply's parts, a reasoning
# model's thoughts, usage. A reply can take this many bytes whatever its length.
_ENVELOPES = 16 * 2**20
# Bytes a character of the reply may take: 6 JSON-escaped, and a streamed reply wraps every
# few characters in an envelope of a couple of hundred bytes.
_BYTES_PER_CHAR = 32


def body_limit(max_response_chars: int) -> int:
    """Decoded bytes one response may take: room for a reply of ``max_response_chars``.

    Examples:
        >>> body_limit(1_000_000) // 2**20
        46
    """
    return _BYTES_PER_CHAR * max_response_chars + _ENVELOPES


class BodyLimits:
    """Response hooks that bound every body of a client to ``limit`` decoded bytes.

    Args:
        limit: Decoded bytes one response may take.
        where: The server as messages name it (no password).
    """

    def __init__(self, limit: int, where: str) -> None:
        self.limit, self.where = limit, where

    async def on_response(self, response: httpx.Response) -> None:
        """Wrap an async client's response stream (an httpx ``response`` event hook)."""
        body = self._body(response)
        if isinstance(response.stream, httpx.AsyncByteStream):
            response.stream = _AsyncBody(response.stream, body)

    def sync_response(self, response: httpx.Response) -> None:
        """Wrap a sync client's response stream (an httpx ``response`` event hook)."""
        body = self._body(response)
        if isinstance(response.stream, httpx.SyncByteStream):
            response.stream = _SyncBody(response.stream, body)

    def _body(self, response: httpx.Response) -> _Body:
        """The checks of one body; its coding is taken off, since it is decoded here."""
        coding = response.headers.get("content-encoding", "identity").strip().lower()
        if coding not in _GZIP | {"identity", ""}:
            raise ModelResponseError(
                f"the model server at {self.where} sent a body compressed with {coding!r}, "
                "which the request did not offer; check the server (or the proxy in front of it)"
            )
        response.headers.pop("content-encoding", None)
        if coding in _GZIP:
            response.headers.pop("content-length", None)  # of the coded body, not the decoded
        return _Body(self, gzip=coding in _GZIP)

    def too_large(self) -> ResponseTooLargeError:
        """The error of a body past the limit."""
        return ResponseTooLargeError(
            f"the model server at {self.where} sent more than {self.limit} bytes for one "
            "reply; it is runaway or broken (raise MAMBA_MODEL_BACKEND__MAX_RESPONSE_CHARS if "
            "replies are really this long)"
        )


class _Body:
    """One body as it arrives: decoded in bounded pieces, counted, stopped past the limit."""

    def __init__(self, limits: BodyLimits, *, gzip: bool) -> None:
        self.limits = limits
        self.size = 0
        self._inflate = zlib.decompressobj(wbits=31) if gzip else None

    def pieces(self, data: bytes) -> Iterator[bytes]:
        """``data`` as it reads, decoded, each piece counted before it is handed on."""
        if self._inflate is None:
            yield self._counted(data)
            return
        while True:
            try:
                piece = self._inflate.decompress(data, _PIECE)
            except zlib.error as exc:
                raise ModelResponseError(
                    f"the model server at {self.limits.where} sent a gzip body that does not "
                    f"decode ({exc}); check the server (or the proxy in front of it)"
                ) from None
            data = self._inflate.unconsumed_tail
            if piece:
                yield self._counted(piece)
            if not data and len(piece) < _PIECE:  # input used up and no output held back
                return

    def _counted(self, piece: bytes) -> bytes:
        self.size += len(piece)
        if self.size > self.limits.limit:
            raise self.limits.too_large()
        return piece


class _AsyncBody(httpx.AsyncByteStream):
    """An async response stream passed through `_Body`."""

    def __init__(self, inner: httpx.AsyncByteStream, body: _Body) -> None:
        self.inner, self.body = inner, body

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for data in self.inner:
            for piece in self.body.pieces(data):
                yield piece

    async def aclose(self) -> None:
        await self.inner.aclose()


class _SyncBody(httpx.SyncByteStream):
    """The synchronous twin of `_AsyncBody`."""

    def __init__(self, inner: httpx.SyncByteStream, body: _Body) -> None:
        self.inner, self.body = inner, body

    def __iter__(self) -> Iterator[bytes]:
        for data in self.inner:
            yield from self.body.pieces(data)

    def close(self) -> None:
        self.inner.close()
