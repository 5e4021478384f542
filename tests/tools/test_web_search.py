"""web_search against a real local searx, and the hosted APIs' documented replies with respx."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx

from ai_agent.config import WebSearchConfig
from ai_agent.state import ToolCall, ToolResult
from ai_agent.tools import ToolRegistry
from ai_agent.tools.builtin.web_search import RateLimiter, TTLCache, web_search_tool
from tests.tools.searx_server import SEARX_PACKAGE, Searx, free_port, running_searx

KEY = "tvly-canary-0f9e8d7c6b5a"


def registry(**config: Any) -> ToolRegistry:
    return ToolRegistry([web_search_tool(WebSearchConfig(**config))])


async def search(reg: ToolRegistry, **args: Any) -> ToolResult:
    call: ToolCall = {"id": "c", "name": "web_search", "args": args}
    return await reg.execute(call, {})


@pytest.fixture(scope="module")
def searx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Searx]:
    if not SEARX_PACKAGE.is_dir():  # pragma: no cover - .ci/setup installs it
        pytest.skip("Debian package searx is not installed (.ci/setup installs it)")
    with running_searx(tmp_path_factory.mktemp("searx")) as server:
        yield server


# A real searx ----------------------------------------------------------------------------------


async def test_searx_returns_structured_results(searx: Searx) -> None:
    reg = registry(url=searx.url)
    result = await search(reg, query="tide tables", num_results=3)
    assert result["status"] == "ok", result
    content = result["content"]
    assert content["backend"] == "searxng" and content["query"] == "tide tables"
    assert content["results"] == [
        {
            "title": f"Result {i} about tide tables",
            "url": f"https://example.org/tide-tables/{i}",
            "snippet": f"Snippet {i} for tide tables.",
        }
        for i in (1, 2, 3)
    ]
    assert searx.queries[-1] == "tide tables"
    assert result["summary"] == "web_search (searxng): 3 result(s) for 'tide tables'"
    assert result["meta"] == {"cached": False, "count": 3}


async def test_searx_cache(searx: Searx) -> None:
    reg = registry(url=searx.url, cache_ttl_seconds=60)
    before = len(searx.queries)
    first = await search(reg, query="cached query")
    second = await search(reg, query="cached query")
    assert len(searx.queries) == before + 1
    assert second["content"] == first["content"] and second["meta"]["cached"] is True
    assert second["summary"].endswith("(cached)")
    other = await search(reg, query="cached query", num_results=2)  # another key: not cached
    assert other["meta"]["cached"] is False and len(searx.queries) == before + 2


async def test_the_local_rate_limit(searx: Searx) -> None:
    reg = registry(url=searx.url, rate_limit_per_minute=2, max_wait_seconds=0)
    assert (await search(reg, query="a"))["status"] == "ok"
    assert (await search(reg, query="b"))["status"] == "ok"
    limited = await search(reg, query="c")
    assert limited["meta"]["code"] == "RATE_LIMIT" and limited["meta"]["retry_after"] > 50
    assert "local rate limit of 2 searches a minute" in str(limited["error"])


async def test_bad_arguments_and_an_unreachable_instance() -> None:
    reg = registry(url=f"http://127.0.0.1:{free_port()}")
    wrong_type = await search(reg, query="x", search_type="torrents")
    assert wrong_type["meta"]["code"] == "SCHEMA_VIOLATION"
    down = await search(reg, query="x")
    assert down["meta"]["code"] == "UNREACHABLE"
    assert "cannot reach searxng at 127.0.0.1" in str(down["error"])
    blank = await search(reg, query="  ")
    assert blank["meta"]["code"] == "BAD_ARGUMENTS"
    for query in ("x \ud800", "word " * 20_000):  # no URL can hold either
        unusable = await search(reg, query=query)
        assert unusable["meta"]["code"] == "BAD_ARGUMENTS", unusable
        assert "search for fewer words, written in whole characters" in str(unusable["error"])


async def test_searxng_requests_and_a_refused_json_format() -> None:
    reg = registry(url="http://searx.local:8080/")
    with respx.mock:
        route = respx.get("http://searx.local:8080/search")
        route.side_effect = [
            httpx.Response(200, json={"results": [{"url": "https://a/", "title": "A"}]}),
            httpx.Response(403, text="Forbidden"),
        ]
        news = await search(reg, query="storm", search_type="news", num_results=1)
        refused = await search(reg, query="storm")
    params = route.calls[0].request.url.params
    assert dict(params) == {"q": "storm", "format": "json", "categories": "news", "pageno": "1"}
    assert news["content"]["results"] == [{"title": "A", "url": "https://a/", "snippet": ""}]
    assert refused["meta"]["code"] == "BAD_REQUEST"
    assert "add 'json' to search.formats" in str(refused["error"])


def test_the_searx_preview_names_the_instance() -> None:
    reg = registry(url="http://127.0.0.1:8888")
    call: ToolCall = {"id": "c", "name": "web_search", "args": {"query": "tides"}}
    assert reg.preview(call) == (
        "web_search via searxng (http://127.0.0.1:8888): 'tides' (10 results, general)"
    )


# Hosted APIs with respx ------------------------------------------------------------------------


def tavily_reply() -> dict[str, Any]:
    return {
        "query": "tides",
        "answer": None,
        "results": [
            {
                "title": "Tide tables",
                "url": "https://tides.example/a",
                "content": "High tide at 6.",
                "score": 0.9,
                "raw_content": None,
            }
        ],
        "response_time": 1.2,
    }


async def test_tavily(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", KEY)
    reg = registry(backend="tavily")
    assert reg["web_search"].requires_env == ("TAVILY_API_KEY",)
    with respx.mock:
        route = respx.post("https://api.tavily.com/search").respond(json=tavily_reply())
        result = await search(reg, query="tides", num_results=3, search_type="news")
    sent = route.calls.last.request
    assert sent.headers["Authorization"] == f"Bearer {KEY}"
    assert json.loads(sent.content) == {
        "query": "tides",
        "max_results": 3,
        "topic": "news",
        "search_depth": "basic",
    }
    assert result["content"]["results"] == [
        {"title": "Tide tables", "url": "https://tides.example/a", "snippet": "High tide at 6."}
    ]


@pytest.mark.parametrize(
    ("status", "body", "code", "text"),
    [
        (
            401,
            {"detail": {"error": "Unauthorized: missing or invalid API key."}},
            "AUTH",
            "tavily answered 401: Unauthorized: missing or invalid API key. Check the API key "
            "(TAVILY_API_KEY).",
        ),
        (429, {"detail": {"error": "Rate limit exceeded"}}, "RATE_LIMIT", "Rate limit exceeded"),
        (
            432,
            {"detail": {"error": "This request exceeds your plan's set usage limit."}},
            "RATE_LIMIT",
            "plan's set usage limit",
        ),
        (400, {"detail": {"error": "Query is too long."}}, "BAD_REQUEST", "Query is too long"),
        (500, {"detail": {"error": "Internal error"}}, "UPSTREAM", "try later"),
    ],
)
async def test_tavily_errors(
    monkeypatch: pytest.MonkeyPatch, status: int, body: Any, code: str, text: str
) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", KEY)
    with respx.mock:
        respx.post("https://api.tavily.com/search").respond(status, json=body)
        result = await search(registry(backend="tavily"), query="tides")
    assert result["status"] == "error" and result["meta"]["code"] == code
    assert text in str(result["error"])
    assert KEY not in json.dumps(result)


async def test_brave_web_and_news(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", KEY)
    web = {
        "type": "search",
        "query": {"original": "tides"},
        "web": {
            "type": "search",
            "results": [
                {
                    "title": "Tides <strong>now</strong>",
                    "url": "https://b.example/1",
                    "description": "Current tides.",
                },
                {"title": "No url"},
            ],
        },
    }
    news = {
        "type": "news",
        "results": [{"title": "Storm", "url": "https://n.example/1", "description": "Surge."}],
    }
    reg = registry(backend="brave")
    with respx.mock:
        web_route = respx.get("https://api.search.brave.com/res/v1/web/search").respond(json=web)
        respx.get("https://api.search.brave.com/res/v1/news/search").respond(json=news)
        first = await search(reg, query="tides", num_results=50)
        second = await search(reg, query="tides", search_type="news")
    request = web_route.calls.last.request
    assert request.headers["X-Subscription-Token"] == KEY
    assert request.url.params["count"] == "20"  # Brave's maximum
    assert first["content"]["results"] == [
        {
            "title": "Tides <strong>now</strong>",
            "url": "https://b.example/1",
            "snippet": "Current tides.",
        }
    ]
    assert second["content"]["results"][0]["title"] == "Storm"


async def test_brave_errors_carry_retry_after(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAVE_API_KEY", KEY)
    invalid = {
        "type": "ErrorResponse",
        "error": {
            "id": "x",
            "status": 422,
            "code": "SUBSCRIPTION_TOKEN_INVALID",
            "detail": "The provided subscription token is invalid.",
        },
        "time": 1,
    }
    limited = {
        "type": "ErrorResponse",
        "error": {
            "id": "y",
            "status": 429,
            "code": "RATE_LIMITED",
            "detail": "Request rate limit exceeded for plan.",
        },
    }
    reg = registry(backend="brave")
    with respx.mock:
        route = respx.get("https://api.search.brave.com/res/v1/web/search")
        route.side_effect = [
            httpx.Response(422, json=invalid),
            httpx.Response(429, json=limited, headers={"Retry-After": "2"}),
            httpx.Response(401, json=invalid),
        ]
        bad = await search(reg, query="a")
        slow = await search(reg, query="b")
        auth = await search(reg, query="c")
    assert bad["meta"]["code"] == "BAD_REQUEST"
    assert "The provided subscription token is invalid." in str(bad["error"])
    assert slow["meta"] == {"code": "RATE_LIMIT", "backend": "brave", "retry_after": 2.0}
    assert auth["meta"]["code"] == "AUTH"


async def test_serpapi(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERPAPI_API_KEY", KEY)
    organic = {
        "search_metadata": {"status": "Success"},
        "organic_results": [
            {"position": 1, "title": "Tides", "link": "https://s.example/1", "snippet": "Tides."}
        ],
    }
    news = {"news_results": [{"title": "Surge", "link": "https://s.example/n", "snippet": "S"}]}
    empty = {"error": "Google hasn't returned any results for this query."}
    reg = registry(backend="serpapi")
    with respx.mock:
        route = respx.get("https://serpapi.com/search.json")
        route.side_effect = [
            httpx.Response(200, json=organic),
            httpx.Response(200, json=news),
            httpx.Response(200, json=empty),
        ]
        first = await search(reg, query="tides", num_results=4)
        second = await search(reg, query="tides", search_type="news")
        third = await search(reg, query="zzz")
    params = route.calls[0].request.url.params
    assert (params["engine"], params["q"], params["num"], params["api_key"]) == (
        "google",
        "tides",
        "4",
        KEY,
    )
    assert route.calls[1].request.url.params["tbm"] == "nws"
    assert first["content"]["results"] == [
        {"title": "Tides", "url": "https://s.example/1", "snippet": "Tides."}
    ]
    assert second["content"]["results"][0]["url"] == "https://s.example/n"
    assert third["status"] == "ok" and third["content"]["results"] == []


@pytest.mark.parametrize(
    ("status", "body", "code"),
    [
        (
            401,
            {
                "error": "Invalid API key. Your API key should be here: "
                "https://serpapi.com/manage-api-key"
            },
            "AUTH",
        ),
        (429, {"error": "Your account has run out of searches."}, "RATE_LIMIT"),
        (200, {"error": "Something unusual."}, "UPSTREAM"),
        (200, "not json", "UPSTREAM"),
        (200, ["a", "list"], "UPSTREAM"),
    ],
)
async def test_serpapi_errors_never_show_the_key(
    monkeypatch: pytest.MonkeyPatch, status: int, body: Any, code: str
) -> None:
    monkeypatch.setenv("SERPAPI_API_KEY", KEY)
    with respx.mock:
        reply = (
            httpx.Response(status, text=body)
            if isinstance(body, str)
            else httpx.Response(status, json=body)
        )
        respx.get("https://serpapi.com/search.json").mock(return_value=reply)
        result = await search(registry(backend="serpapi"), query="tides")
    assert result["meta"]["code"] == code
    assert KEY not in json.dumps(result)


async def test_network_failures_never_show_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERPAPI_API_KEY", KEY)
    with respx.mock:
        respx.get("https://serpapi.com/search.json").mock(
            side_effect=httpx.ConnectError(f"failed: https://serpapi.com/?api_key={KEY}")
        )
        down = await search(registry(backend="serpapi"), query="tides")
        respx.get("https://serpapi.com/search.json").mock(side_effect=httpx.ReadTimeout("slow"))
        slow = await search(registry(backend="serpapi"), query="tides")
    assert down["meta"]["code"] == "UNREACHABLE" and KEY not in json.dumps(down)
    assert slow["meta"]["code"] == "UPSTREAM" and "did not answer within" in str(slow["error"])


async def test_a_missing_key_never_calls_out() -> None:
    with respx.mock:
        route = respx.post("https://api.tavily.com/search").respond(json=tavily_reply())
        result = await search(registry(backend="tavily", api_key_env="MY_TAVILY"), query="x")
    assert result["meta"] == {"code": "MISSING_ENV", "missing": ["MY_TAVILY"]}
    assert not route.called


# Limiter and cache on their own ----------------------------------------------------------------


async def test_the_rate_limiter_waits_for_a_slot_within_max_wait() -> None:
    now = [0.0]
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    limiter = RateLimiter(1, max_wait=5, clock=lambda: now[0], sleep=fake_sleep)
    assert await limiter.acquire() is None
    now[0] = 57.0
    assert await limiter.acquire() is None  # waits the last 3 s
    assert slept == [3.0]
    assert await RateLimiter(0, max_wait=0).acquire() is None


def test_the_cache_expires_and_stays_bounded() -> None:
    now = [0.0]
    cache = TTLCache(10, clock=lambda: now[0])
    cache.put(("a",), 1)
    assert cache.get(("a",)) == 1
    now[0] = 11
    assert cache.get(("a",)) is None
    for i in range(300):
        cache.put((i,), i)
    assert cache.get((0,)) is None and cache.get((299,)) == 299
    off = TTLCache(0)
    off.put(("x",), 1)
    assert off.get(("x",)) is None
