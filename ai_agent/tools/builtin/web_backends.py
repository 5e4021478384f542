"""Search backends for ``web_search``: SearXNG (default, self-hosted), Tavily, Brave, SerpAPI.

Each backend turns (query, number of results, search type) into one HTTP request and the reply
into ``[{title, url, snippet}]``. HTTP failures become `SearchError` with a code the gate
understands (AUTH, RATE_LIMIT, ...) and a message that names the backend and what to do, never
the API key (SerpAPI puts it in the URL, so URLs are never quoted).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, TypedDict
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import httpx

__all__ = ["BACKENDS", "Backend", "SearchError", "SearchHit"]


class SearchHit(TypedDict):
    """One search result."""

    title: str
    url: str
    snippet: str


class SearchError(Exception):
    """A search that failed; ``code`` goes into the result's meta."""

    def __init__(self, code: str, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.retry_after = retry_after


# The longest title, URL and snippet kept of one hit: one hit of megabytes would otherwise be
# most of what the model reads of the search, the other hits summarized away.
TITLE_CHARS = 300
URL_CHARS = 2000
SNIPPET_CHARS = 1000


def _text(value: Any, limit: int) -> str:
    text = " ".join(str(value or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _web_url(value: Any) -> str | None:
    """``value`` when it is a web address (http or https) of at most URL_CHARS, else None.

    A hit's URL is what the model follows and a person may open: a ``javascript:``, ``file:``
    or ``data:`` one from a backend's reply is no search result.
    """
    if not isinstance(value, str) or len(value) > URL_CHARS:
        return None
    url = value.strip()
    try:
        parts = urlsplit(url)
    except ValueError:  # an unbalanced "[" in the host
        return None
    return url if parts.scheme.lower() in ("http", "https") and parts.netloc else None


def _hits(items: Any, url_key: str, snippet_key: str, limit: int) -> list[SearchHit]:
    out: list[SearchHit] = []
    for item in items if isinstance(items, list) else []:
        url = _web_url(item.get(url_key)) if isinstance(item, dict) else None
        if url is None:
            continue
        out.append(
            SearchHit(
                title=_text(item.get("title"), TITLE_CHARS),
                url=url,
                snippet=_text(item.get(snippet_key), SNIPPET_CHARS),
            )
        )
        if len(out) >= limit:
            break
    return out


def _detail(response: httpx.Response) -> str:
    """The error text a backend put in its JSON body (its documented shapes), bounded."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:200].strip()
    if isinstance(body, dict):
        for path in (
            ("detail", "error"),
            ("error", "detail"),
            ("error",),
            ("detail",),
            ("message",),
        ):
            value: Any = body
            for key in path:
                value = value.get(key) if isinstance(value, dict) else None
            if isinstance(value, str) and value:
                return value[:300]
    return ""


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return float(response.headers["retry-after"])
    except (KeyError, ValueError):
        return None


class Backend(ABC):
    """A search service: how to ask it, and how to read its answer."""

    name: ClassVar[str]
    types: ClassVar[tuple[str, ...]] = ("general", "news")
    needs_key: ClassVar[bool] = True
    default_key_env: ClassVar[str] = ""

    @abstractmethod
    def request(
        self, base_url: str, query: str, count: int, search_type: str, key: str | None
    ) -> httpx.Request:
        """The HTTP request for a search."""

    @abstractmethod
    def parse(self, body: Any, count: int, search_type: str) -> list[SearchHit]:
        """The hits in a successful reply."""

    def check(self, response: httpx.Response) -> None:
        """Raise SearchError for an HTTP failure, in words that say what to do."""
        status = response.status_code
        if status < 400:
            return
        detail = _detail(response)
        said = f": {detail.rstrip('.')}" if detail else ""
        where = f"{self.name} answered {status}{said}"
        if status in (401, 403):
            raise SearchError("AUTH", f"{where}. Check the API key ({self.default_key_env}).")
        if status in (429, 432, 433):
            raise SearchError(
                "RATE_LIMIT",
                f"{where}. The search quota or rate limit is reached; wait or "
                "raise the plan's limit.",
                retry_after=_retry_after(response),
            )
        if status >= 500:
            raise SearchError("UPSTREAM", f"{where}. The search service failed; try later.")
        raise SearchError("BAD_REQUEST", f"{where}. Rephrase the query or check the settings.")


class SearxngBackend(Backend):
    """SearXNG (or its predecessor searx): ``GET {url}/search?format=json``."""

    name = "searxng"

    types = ("general", "news", "images", "videos", "science", "it", "files", "music", "map")
    needs_key = False

    def request(
        self, base_url: str, query: str, count: int, search_type: str, key: str | None
    ) -> httpx.Request:
        params = {"q": query, "format": "json", "categories": search_type, "pageno": "1"}
        import httpx  # the HTTP client loads with a search, not with the catalog

        return httpx.Request("GET", f"{base_url}/search", params=params)

    def parse(self, body: Any, count: int, search_type: str) -> list[SearchHit]:
        return _hits(body.get("results"), "url", "content", count)

    def check(self, response: httpx.Response) -> None:
        if response.status_code == 403:
            raise SearchError(
                "BAD_REQUEST",
                "the SearXNG instance refused JSON output (403); add 'json' to search.formats "
                "in its settings.yml",
            )
        super().check(response)


class TavilyBackend(Backend):
    """Tavily: ``POST https://api.tavily.com/search`` with a bearer key."""

    name = "tavily"

    types = ("general", "news", "finance")
    default_key_env = "TAVILY_API_KEY"

    def request(
        self, base_url: str, query: str, count: int, search_type: str, key: str | None
    ) -> httpx.Request:
        body = {"query": query, "max_results": count, "topic": search_type, "search_depth": "basic"}
        headers = {"Authorization": f"Bearer {key}"}
        import httpx  # the HTTP client loads with a search, not with the catalog

        return httpx.Request("POST", "https://api.tavily.com/search", json=body, headers=headers)

    def parse(self, body: Any, count: int, search_type: str) -> list[SearchHit]:
        return _hits(body.get("results"), "url", "content", count)


class BraveBackend(Backend):
    """Brave Search: ``GET https://api.search.brave.com/res/v1/{web,news}/search``."""

    name = "brave"

    default_key_env = "BRAVE_API_KEY"

    def request(
        self, base_url: str, query: str, count: int, search_type: str, key: str | None
    ) -> httpx.Request:
        kind = "news" if search_type == "news" else "web"
        headers = {"Accept": "application/json", "X-Subscription-Token": str(key)}
        import httpx  # the HTTP client loads with a search, not with the catalog

        return httpx.Request(
            "GET",
            f"https://api.search.brave.com/res/v1/{kind}/search",
            params={"q": query, "count": str(min(count, 20))},
            headers=headers,
        )

    def parse(self, body: Any, count: int, search_type: str) -> list[SearchHit]:
        items = (
            body.get("results") if search_type == "news" else (body.get("web") or {}).get("results")
        )
        return _hits(items, "url", "description", count)


class SerpApiBackend(Backend):
    """SerpAPI (Google): ``GET https://serpapi.com/search.json`` (the key is a query param)."""

    name = "serpapi"

    default_key_env = "SERPAPI_API_KEY"

    def request(
        self, base_url: str, query: str, count: int, search_type: str, key: str | None
    ) -> httpx.Request:
        params = {"engine": "google", "q": query, "num": str(count), "api_key": str(key)}
        if search_type == "news":
            params["tbm"] = "nws"
        import httpx  # the HTTP client loads with a search, not with the catalog

        return httpx.Request("GET", "https://serpapi.com/search.json", params=params)

    def parse(self, body: Any, count: int, search_type: str) -> list[SearchHit]:
        error = body.get("error")
        if isinstance(error, str) and "hasn't returned any results" not in error:
            raise SearchError("UPSTREAM", f"serpapi: {error[:300]}")
        key = "news_results" if search_type == "news" else "organic_results"
        return _hits(body.get(key), "link", "snippet", count)


BACKENDS: Mapping[str, Backend] = MappingProxyType(
    {b.name: b for b in (SearxngBackend(), TavilyBackend(), BraveBackend(), SerpApiBackend())}
)
