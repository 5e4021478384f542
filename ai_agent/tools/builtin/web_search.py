"""``web_search`` (spec 5.4.5): structured results from a pluggable backend, rate-limited, cached.

An EXTERNAL tool: a person confirms its calls (by default) and sees its first use in each run.
The hosted backends' API key comes from the environment variable the settings name; it is a
``requires_env`` of the tool, so a missing key pauses the run at the gate instead of failing, and
the registry scrubs its value from anything the tool returns. Its schema comes from the signature
of the function `web_search_tool` makes, whose ``search_type`` choices are the backend's.
"""

from __future__ import annotations

import asyncio
import time
import zlib
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from ai_agent.config import WebSearchConfig
from ai_agent.state import ToolResult
from ai_agent.tools.builtin.typed import builtin_spec
from ai_agent.tools.builtin.web_backends import BACKENDS, Backend, SearchError, SearchHit
from ai_agent.tools.spec import ToolCategory, ToolSpec

if TYPE_CHECKING:
    import httpx

__all__ = ["MAX_REPLY_BYTES", "RateLimiter", "TTLCache", "WebSearch", "web_search_tool"]

_CACHE_ENTRIES = 256
# The longest reply body read from a backend (a page of results is some tens of KiB).
MAX_REPLY_BYTES = 4 * 2**20
# Headers that describe the body as it came over the wire, not as it was read.
_BODY_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})
# The compressions a reply may come in (each decompressed a bounded piece at a time).
_ACCEPTED = "gzip, deflate"
_ENCODINGS = {"gzip": "gzip", "x-gzip": "gzip", "deflate": "deflate"}


class RateLimiter:
    """At most ``per_minute`` calls in any 60 seconds; a call waits up to ``max_wait`` for a slot.

    Examples:
        >>> limiter = RateLimiter(2, max_wait=0)
        >>> [asyncio.run(limiter.acquire()) for _ in range(3)]
        [None, None, 60.0]
    """

    def __init__(
        self,
        per_minute: int,
        *,
        max_wait: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.per_minute, self.max_wait = per_minute, max_wait
        self.clock, self.sleep = clock, sleep
        self._calls: deque[float] = deque()

    async def acquire(self) -> float | None:
        """Take a slot (waiting if needed); return the seconds still to wait when over budget."""
        if self.per_minute <= 0:
            return None
        while True:
            now = self.clock()
            while self._calls and now - self._calls[0] >= 60:
                self._calls.popleft()
            if len(self._calls) < self.per_minute:
                self._calls.append(now)
                return None
            wait = 60 - (now - self._calls[0])
            if wait > self.max_wait:
                return round(wait, 1)
            # Checked again after the sleep: another call may have taken the slot meanwhile.
            await self.sleep(wait)


class TTLCache:
    """Results kept for ``ttl`` seconds (0: nothing is kept), at most 256 entries.

    Examples:
        >>> cache = TTLCache(60)
        >>> cache.put(("q",), [1]); cache.get(("q",))
        [1]
    """

    def __init__(self, ttl: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl, self.clock = ttl, clock
        self._items: OrderedDict[tuple[Any, ...], tuple[float, Any]] = OrderedDict()

    def get(self, key: tuple[Any, ...]) -> Any | None:
        """The cached value, or None when missing or expired."""
        item = self._items.get(key)
        if item is None or item[0] <= self.clock():
            self._items.pop(key, None)
            return None
        return item[1]

    def put(self, key: tuple[Any, ...], value: Any) -> None:
        """Keep a value (ignored when the TTL is 0)."""
        if self.ttl <= 0:
            return
        self._items[key] = (self.clock() + self.ttl, value)
        self._items.move_to_end(key)
        while len(self._items) > _CACHE_ENTRIES:
            self._items.popitem(last=False)


class _ReplyTooLargeError(Exception):
    """A reply longer than MAX_REPLY_BYTES (its reading stopped there)."""


class _Inflater:
    """A gzip or deflate body, decompressed a bounded piece at a time.

    httpx decompresses each piece that arrives whole: 64 KiB of gzip is 64 MiB of zeros, and of
    zstd (which it decodes when ``zstandard`` is installed, asked for or not) gigabytes, all in
    memory before the reply's length is looked at.
    """

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        # gzip, or deflate's zlib stream (raw deflate, which some servers send, if that fails).
        self._z = zlib.decompressobj(zlib.MAX_WBITS | 32)
        self._started = False

    def feed(self, data: bytes, room: int) -> bytes:
        """At most ``room`` bytes of what ``data`` decompresses to (more is over the limit)."""
        try:
            out = self._z.decompress(data, room)
        except zlib.error:
            if self._started or self.encoding != "deflate":
                raise
            self._z = zlib.decompressobj(-zlib.MAX_WBITS)
            out = self._z.decompress(data, room)
        self._started = True
        return out


def _inflater(encoding: str) -> _Inflater | None:
    """The decoder of a ``Content-Encoding`` asked for (None: the body is as it came)."""
    codings = [c.strip().lower() for c in encoding.split(",") if c.strip()]
    codings = [c for c in codings if c != "identity"]
    if not codings:
        return None
    if len(codings) == 1 and codings[0] in _ENCODINGS:
        return _Inflater(_ENCODINGS[codings[0]])
    raise SearchError(
        "UPSTREAM",
        f"the reply came compressed as {encoding[:40]!r}, which was not asked for "
        f"(only {_ACCEPTED})",
    )


async def _bounded_send(client: httpx.AsyncClient, request: httpx.Request) -> httpx.Response:
    """The reply to ``request``, its body read (and decompressed) to at most MAX_REPLY_BYTES.

    Read whole, a backend's (or whatever answers at its URL) endless body would take the
    engine's memory; the timeout alone does not stop a fast one. The body is read as it came
    and decompressed here, a bounded piece at a time (`_Inflater`).

    Raises:
        _ReplyTooLargeError: the body is longer.
        SearchError: it is compressed in a way that was not asked for, or broken.
    """
    import httpx  # loaded with a search, as in `WebSearch._fetch`

    request.headers["Accept-Encoding"] = _ACCEPTED
    response = await client.send(request, stream=True)
    try:
        inflater = _inflater(response.headers.get("content-encoding", ""))
        body = bytearray()
        async for chunk in response.aiter_raw():
            room = MAX_REPLY_BYTES + 1 - len(body)
            body += chunk if inflater is None else inflater.feed(chunk, room)
            if len(body) > MAX_REPLY_BYTES:
                raise _ReplyTooLargeError
    except zlib.error:
        raise SearchError("UPSTREAM", "the compressed reply is broken") from None
    finally:
        await response.aclose()
    # Decoded already: the new response must not be told its body is compressed.
    headers = {k: v for k, v in response.headers.items() if k.lower() not in _BODY_HEADERS}
    return httpx.Response(
        response.status_code, headers=headers, content=bytes(body), request=request
    )


class WebSearch:
    """The ``web_search`` tool over one configured backend."""

    def __init__(self, config: WebSearchConfig, *, backend: Backend | None = None) -> None:
        self.config = config
        self.backend = backend or BACKENDS[config.backend]
        self.key_env = config.api_key_env or self.backend.default_key_env
        self.limiter = RateLimiter(config.rate_limit_per_minute, max_wait=config.max_wait_seconds)
        self.cache = TTLCache(config.cache_ttl_seconds)

    @property
    def requires_env(self) -> list[str]:
        """The key variable, for backends that need one."""
        return [self.key_env] if self.backend.needs_key and self.key_env else []

    def _arguments(self, query: str, num_results: int, search_type: str) -> tuple[str, int, str]:
        if not query.strip():
            raise SearchError("BAD_ARGUMENTS", "query must be a non-empty string")
        count = max(1, min(num_results, self.config.max_results))
        kind = search_type or "general"
        if kind not in self.backend.types:
            choices = ", ".join(self.backend.types)
            raise SearchError(
                "BAD_ARGUMENTS",
                f"search_type {kind!r} is not offered by {self.backend.name}; use one of {choices}",
            )
        return query.strip(), count, kind

    async def run(
        self,
        query: str,
        num_results: int = 10,
        search_type: str = "general",
        *,
        ctx: dict[str, Any],
    ) -> ToolResult:
        """The tool function: errors, the local rate limit included, are error results.

        Args:
            query: What to search for.
            num_results: How many results (at most the settings' max_results).
            search_type: One of the backend's search types.
            ctx: The tool context (the API key is in ``ctx["env"]``).
        """
        try:
            query, count, kind = self._arguments(query, num_results, search_type)
            return await self._run(query, count, kind, ctx)
        except SearchError as exc:
            meta: dict[str, Any] = {"code": exc.code, "backend": self.backend.name}
            if exc.retry_after is not None:
                meta["retry_after"] = exc.retry_after
            return ToolResult(status="error", error=f"web_search: {exc}", meta=meta)

    async def _run(self, query: str, count: int, kind: str, ctx: dict[str, Any]) -> ToolResult:
        key = (self.backend.name, query, count, kind)
        cached = self.cache.get(key)
        if cached is not None:
            return self._result(query, cached, cached=True)
        wait = await self.limiter.acquire()
        if wait is not None:
            raise SearchError(
                "RATE_LIMIT",
                f"the local rate limit of {self.config.rate_limit_per_minute} searches a minute "
                f"is reached; try again in {wait:g}s",
                retry_after=wait,
            )
        secret = (ctx.get("env") or {}).get(self.key_env) if self.backend.needs_key else None
        hits = await self._fetch(query, count, kind, secret)
        self.cache.put(key, hits)
        return self._result(query, hits, cached=False)

    async def _fetch(self, query: str, count: int, kind: str, key: str | None) -> list[SearchHit]:
        # Imported with the first search: listing the catalog must not load the HTTP client.
        import httpx

        try:
            request = self.backend.request(self.config.url, query, count, kind, key)
        except (httpx.InvalidURL, UnicodeError) as exc:
            # The query goes into the URL: one over httpx's 65,536 characters, or holding half
            # a character (a lone surrogate, which JSON can carry), makes no URL.
            raise SearchError(
                "BAD_ARGUMENTS",
                f"no {self.backend.name} request can be made of this query ({exc}); search for "
                "fewer words, written in whole characters",
            ) from None
        host = request.url.host
        try:
            async with httpx.AsyncClient(timeout=self.config.timeout) as client:
                response = await _bounded_send(client, request)
        except _ReplyTooLargeError:
            raise SearchError(
                "UPSTREAM",
                f"{self.backend.name} at {host} answered with more than "
                f"{MAX_REPLY_BYTES // 2**20} MiB; a search reply is far smaller",
            ) from None
        except httpx.TimeoutException:
            raise SearchError(
                "UPSTREAM",
                f"{self.backend.name} at {host} did not answer within {self.config.timeout:g}s",
            ) from None
        except httpx.HTTPError as exc:
            raise SearchError(
                "UNREACHABLE",
                f"cannot reach {self.backend.name} at {host} ({type(exc).__name__}); check "
                "that it is running and the URL in tool_config.web_search",
            ) from None
        self.backend.check(response)
        try:
            body = response.json()
        except (ValueError, RecursionError):  # not JSON; JSON nested past Python's stack
            raise SearchError(
                "UPSTREAM", f"{self.backend.name} at {host} did not answer with JSON"
            ) from None
        if not isinstance(body, dict):
            raise SearchError("UPSTREAM", f"{self.backend.name} answered with unexpected JSON")
        return self.backend.parse(body, count, kind)

    def _result(self, query: str, hits: list[SearchHit], *, cached: bool) -> ToolResult:
        return ToolResult(
            status="ok",
            content={
                "query": query,
                "backend": self.backend.name,
                "results": [dict(h) for h in hits],
            },
            meta={"cached": cached, "count": len(hits)},
        )

    def preview(self, args: dict[str, Any]) -> str:
        """Which service would receive which query."""
        where = self.config.url if self.backend.name == "searxng" else self.backend.name
        return (
            f"web_search via {self.backend.name} ({where}): {args.get('query')!r} "
            f"({args.get('num_results', 10)} results, {args.get('search_type', 'general')})"
        )


def web_search_tool(config: WebSearchConfig) -> ToolSpec:
    """The ``web_search`` tool for the configured backend.

    Examples:
        >>> spec = web_search_tool(WebSearchConfig(backend="tavily"))
        >>> spec.category.value, spec.requires_env
        ('external', ('TAVILY_API_KEY',))
    """
    search = WebSearch(config)

    def summary(result: ToolResult) -> str:
        if result["status"] != "ok":
            return f"web_search: {result.get('error')}"
        content = result.get("content") or {}
        cached = " (cached)" if (result.get("meta") or {}).get("cached") else ""
        return (
            f"web_search ({content.get('backend')}): {len(content.get('results', []))} result(s) "
            f"for {content.get('query')!r}{cached}"
        )

    async def web_search(
        query: str,
        num_results: Annotated[int, Field(ge=1)] = 10,
        # The backend's choices, known only here: an enum in the schema the calls are checked
        # against (and by the tool itself).
        search_type: str = Field("general", json_schema_extra={"enum": [*search.backend.types]}),
        *,
        ctx: dict[str, Any],
    ) -> ToolResult:
        """Search the web; returns results with title, url and snippet."""
        return await search.run(query, num_results, search_type, ctx=ctx)

    return builtin_spec(
        web_search,
        category=ToolCategory.EXTERNAL,
        group="web",
        requires_env=search.requires_env,
        timeout=config.timeout + config.max_wait_seconds + 5,
        preview=search.preview,
        format_result=summary,
    )
