"""The HTTP broker: an approved tool reaches exactly its allowlisted hosts, hop by hop.

A real HTTP server on loopback plays both the allowed host and the forbidden one (another port).
The tool runs in a real sandbox and talks to the broker over its socket pair.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from ai_agent.errors import ToolPolicyViolation
from ai_agent.tools.maker import ToolsmakerRegistry
from ai_agent.tools.maker import broker as broker_module
from ai_agent.tools.maker.allowlists import parse_host_rule
from ai_agent.tools.maker.broker import HttpBroker
from ai_agent.tools.maker.confine import Violation
from tests.maker.conftest import ApproveTool, CallTool


class _Server:
    """A loopback HTTP server that records what reached it."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str | None]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self) -> None:
                outer.seen.append((self.command, self.path, self.headers.get("Host")))
                if self.path.startswith("/redirect?to="):
                    self.send_response(302)
                    self.send_header("Location", self.path.split("=", 1)[1])
                    self.end_headers()
                    return
                body = b"x" * 5000 if self.path == "/big" else b"hello " + self.path.encode()
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    body += b" " + self.rfile.read(length)
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _reply  # noqa: N815

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def allowed() -> Iterator[_Server]:
    server = _Server()
    yield server
    server.close()


@pytest.fixture
def forbidden() -> Iterator[_Server]:
    server = _Server()
    yield server
    server.close()


FETCH = """
try:
    return self.http.request(kwargs.get("method", "GET"), kwargs["url"], body=kwargs.get("body"))
except OSError as exc:
    return {"error": str(exc)}
"""


def _fetcher(approve_tool: ApproveTool, hosts: list[str], **intent: Any) -> Any:
    return approve_tool(
        FETCH,
        imports="",
        capabilities=["http"],
        allowed_domains=hosts,
        inputs={
            "url": "string",
            "method": {"type": "string", "default": "GET"},
            "body": {"type": ["string", "null"], "default": None},
        },
        **intent,
    )


def _blocked(maker: ToolsmakerRegistry) -> dict[str, Any]:
    return [e for e in maker.audit_log.events() if e["event"] == "tool_policy_blocked"][-1]


async def test_an_allowlisted_host_is_reached_through_the_broker(
    approve_tool: ApproveTool, call_tool: CallTool, allowed: _Server
) -> None:
    tool = _fetcher(approve_tool, [f"127.0.0.1:{allowed.port}"])
    result = await call_tool(
        tool, {"url": f"http://127.0.0.1:{allowed.port}/data", "method": "POST", "body": "hi"}
    )
    response = result["content"]
    assert response["status"] == 200
    assert response["body"] == "hello /data hi"
    assert allowed.seen == [("POST", "/data", f"127.0.0.1:{allowed.port}")]


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:{other}/",
        "http://localhost:{port}/",  # another name for an allowed address is another host
        "http://127.0.0.1:{port}@127.0.0.1:{other}/",  # user info hiding the real host
        "http://[::1]:{port}/",
        "ftp://127.0.0.1:{port}/",
        "file:///etc/passwd",
        "http://127.0.0.1/",  # the allowlisted host, but a port it does not name
    ],
)
async def test_anything_else_is_a_violation(
    url: str,
    approve_tool: ApproveTool,
    call_tool: CallTool,
    allowed: _Server,
    forbidden: _Server,
    maker: ToolsmakerRegistry,
) -> None:
    tool = _fetcher(approve_tool, [f"127.0.0.1:{allowed.port}"])
    with pytest.raises(ToolPolicyViolation, match="host_not_allowed"):
        await call_tool(tool, {"url": url.format(port=allowed.port, other=forbidden.port)})
    assert forbidden.seen == [] and allowed.seen == []
    assert _blocked(maker)["data"]["reason"] == "host_not_allowed"


async def test_a_redirect_to_a_host_outside_the_allowlist_is_not_followed(
    approve_tool: ApproveTool,
    call_tool: CallTool,
    allowed: _Server,
    forbidden: _Server,
    maker: ToolsmakerRegistry,
) -> None:
    tool = _fetcher(approve_tool, [f"127.0.0.1:{allowed.port}"])
    target = f"http://127.0.0.1:{forbidden.port}/internal"
    with pytest.raises(ToolPolicyViolation, match=f"127.0.0.1:{forbidden.port}"):
        await call_tool(tool, {"url": f"http://127.0.0.1:{allowed.port}/redirect?to={target}"})
    assert [p for _, p, _ in allowed.seen] == [f"/redirect?to={target}"]
    assert forbidden.seen == []


async def test_redirects_inside_the_allowlist_are_followed_and_bounded(
    approve_tool: ApproveTool, call_tool: CallTool, allowed: _Server
) -> None:
    tool = _fetcher(approve_tool, [f"127.0.0.1:{allowed.port}"])
    base = f"http://127.0.0.1:{allowed.port}"
    result = await call_tool(tool, {"url": f"{base}/redirect?to=/final"})
    assert result["content"]["body"] == "hello /final"
    assert result["content"]["redirects"] == 1
    loop = f"{base}/redirect?to=/redirect?to=/redirect?to=/redirect?to=/redirect?to=/x"
    deep = f"{base}/redirect?to=/redirect?to={loop.removeprefix(base)}"
    result = await call_tool(tool, {"url": deep})
    assert result["content"] == {"error": "more than 5 redirects"}


async def test_an_allowlisted_name_that_resolves_to_a_private_address_is_refused(
    approve_tool: ApproveTool,
    call_tool: CallTool,
    allowed: _Server,
    monkeypatch: pytest.MonkeyPatch,
    maker: ToolsmakerRegistry,
) -> None:
    # DNS rebinding / SSRF: the reviewer allowed api.example.com, its DNS now says 127.0.0.1.
    async def rebinding(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    monkeypatch.setattr(broker_module, "_system_resolve", rebinding)
    tool = _fetcher(approve_tool, [f"api.example.com:{allowed.port}"])
    with pytest.raises(ToolPolicyViolation, match="address_not_allowed"):
        await call_tool(tool, {"url": f"http://api.example.com:{allowed.port}/"})
    assert allowed.seen == []
    assert _blocked(maker)["data"]["reason"] == "address_not_allowed"


async def test_a_tool_without_the_http_capability_cannot_use_the_broker(
    approve_tool: ApproveTool,
    call_tool: CallTool,
    allowed: _Server,
    maker: ToolsmakerRegistry,
    careless_validator: None,
) -> None:
    tool = approve_tool(f'return self.http.get("http://127.0.0.1:{allowed.port}/")', imports="")
    with pytest.raises(ToolPolicyViolation, match="http_not_declared"):
        await call_tool(tool)
    assert allowed.seen == []


async def test_a_large_response_is_refused_to_the_tool_not_passed_on(
    approve_tool: ApproveTool, call_tool: CallTool, allowed: _Server
) -> None:
    from ai_agent.tools.maker import SandboxLimits

    tool = _fetcher(
        approve_tool, [f"127.0.0.1:{allowed.port}"], limits=SandboxLimits(max_response_bytes=1000)
    )
    result = await call_tool(tool, {"url": f"http://127.0.0.1:{allowed.port}/big"})
    assert "larger than 1000 bytes" in result["content"]["error"]


async def test_transport_failures_reach_the_tool_as_errors(
    approve_tool: ApproveTool, call_tool: CallTool, forbidden: _Server
) -> None:
    port = forbidden.port
    forbidden.close()  # nothing listens there any more
    tool = _fetcher(approve_tool, [f"127.0.0.1:{port}"])
    result = await call_tool(tool, {"url": f"http://127.0.0.1:{port}/"})
    assert result["content"]["error"].startswith("ConnectError")


# The broker on its own (no sandbox) -------------------------------------------------------------
def _broker(*hosts: str, **options: Any) -> HttpBroker:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text=f"{request.url.host} {request.headers['host']}")

    async def resolve(host: str, port: int) -> list[str]:
        if host == "down.example.com":
            raise OSError("no such host")
        return {
            "public.example.com": ["93.184.215.14"],
            "mixed.example.com": ["93.184.215.14", "10.0.0.1"],
        }.get(host, ["169.254.169.254"])

    return HttpBroker(
        [parse_host_rule(h) for h in hosts],
        resolve=resolve,
        transport=httpx.MockTransport(handler),
        **options,
    )


async def _ask(broker: HttpBroker, **message: Any) -> dict[str, Any]:
    return await broker({"op": "http", **message}, asyncio.get_running_loop().time() + 5)


async def test_the_broker_connects_to_the_address_it_checked() -> None:
    broker = _broker("public.example.com")
    reply = await _ask(broker, url="https://public.example.com/x")
    # The connection goes to the checked address; Host and the TLS name keep the name.
    assert reply["response"]["body"] == "93.184.215.14 public.example.com"


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ({"url": "http://public.example.com/", "method": "TRACE"}, "method 'TRACE'"),
        ({"url": 42}, "url must be a string"),
        ({"url": "http://public.example.com/", "headers": {"X": "a\r\nB: c"}}, "header 'X'"),
        # A name ending in a newline: "$" in the name's pattern let it through.
        ({"url": "http://public.example.com/", "headers": {"X\n": "a"}}, "header 'X\\n'"),
        ({"url": "http://public.example.com/", "headers": ["x"]}, "headers must be"),
        ({"url": "http://public.example.com/", "body": {"a": 1}}, "body must be"),
        ({"url": "http://down.example.com/"}, "cannot resolve down.example.com"),
    ],
)
async def test_the_broker_answers_bad_requests_with_errors(
    message: dict[str, Any], error: str
) -> None:
    reply = await _ask(_broker("public.example.com", "down.example.com"), **message)
    assert reply["ok"] is False
    assert error in reply["error"]


@pytest.mark.parametrize(
    ("hosts", "url", "reason"),
    [
        (["public.example.com"], "http://metadata.example.com/", "host_not_allowed"),
        (["*.example.com"], "http://metadata.example.com/", "address_not_allowed"),
        (["*.example.com"], "http://mixed.example.com/", "address_not_allowed"),
        (["public.example.com"], "http://public.example.com:bad/", "host_not_allowed"),
        (["public.example.com"], "http://user:pw@public.example.com/", "host_not_allowed"),
    ],
)
async def test_the_broker_refuses_hosts_and_addresses(
    hosts: list[str], url: str, reason: str
) -> None:
    with pytest.raises(Violation) as caught:
        await _ask(_broker(*hosts), url=url)
    assert caught.value.reason == reason


async def test_the_broker_drops_hop_by_hop_headers_and_rewrites_posts_on_303() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == "/form":
            return httpx.Response(303, headers={"Location": "/done"})
        return httpx.Response(200, text="ok")

    async def resolve(host: str, port: int) -> list[str]:
        return ["93.184.215.14"]

    broker = HttpBroker(
        [parse_host_rule("public.example.com")],
        resolve=resolve,
        transport=httpx.MockTransport(handler),
    )
    reply = await _ask(
        broker,
        url="http://public.example.com/form",
        method="POST",
        body="x",
        headers={"Connection": "close", "X-Token": "t", "Host": "evil.example.com"},
    )
    assert reply["response"]["status"] == 200
    assert [(r.method, r.url.path) for r in seen] == [("POST", "/form"), ("GET", "/done")]
    assert seen[0].headers["host"] == "public.example.com"
    assert seen[0].headers["x-token"] == "t"
    assert "close" not in seen[0].headers.get("connection", "")
    stop = await _ask(broker, url="http://public.example.com/form", follow_redirects=False)
    assert stop["response"]["status"] == 303


# Requests the HTTP client cannot encode -----------------------------------------------------------
# Each one raised out of the broker (UnicodeEncodeError, InvalidURL, ValueError): the sandbox was
# killed, the call ended as "tool 'x' raised UnicodeEncodeError: 'ascii' codec..." with nothing
# audited, and a tool catching OSError for a failed request never got the chance. Each is now a
# failed request answered to the tool, and the call goes on.
UNENCODABLE = [
    ({"url": "{base}/", "headers": {"X-Name": "café"}}, "header 'X-Name' is not a valid header"),
    ({"url": "{base}/a\x01b"}, "InvalidURL"),
    ({"url": "http://[::1/"}, "cannot be read: Invalid IPv6 URL"),
]
# The same requests as the tool's code makes them, then one that goes through.
UNENCODABLE_IN_CODE = """[
    {"url": base + "/", "headers": {"X-Name": "caf\\u00e9"}},
    {"url": base + "/a" + chr(1) + "b"},
    {"url": "http://[::1/"},
    {"url": base + "/after"},
]"""

EACH_REQUEST = (
    """
base = kwargs["base"]
answers = []
for request in """
    + UNENCODABLE_IN_CODE
    + """:
    try:
        response = self.http.request(
            "GET", request["url"], headers=request.get("headers"), body=request.get("body")
        )
        answers.append({"status": response["status"]})
    except OSError as exc:
        answers.append({"error": str(exc)})
return answers
"""
)


async def test_a_request_the_client_cannot_encode_is_answered_to_the_tool(
    approve_tool: ApproveTool, call_tool: CallTool, allowed: _Server
) -> None:
    base = f"http://127.0.0.1:{allowed.port}"
    tool = approve_tool(
        EACH_REQUEST,
        imports="",
        capabilities=["http"],
        allowed_domains=[f"127.0.0.1:{allowed.port}"],
        inputs={"base": "string"},
    )
    result = await call_tool(tool, {"base": base})
    assert result["status"] == "ok", result
    *refused, last = result["content"]
    for answer, (_, error) in zip(refused, UNENCODABLE, strict=True):
        assert error in answer["error"]
    # The channel lives on: the next request of the same call goes through.
    assert last == {"status": 200}
    assert allowed.seen == [("GET", "/after", f"127.0.0.1:{allowed.port}")]


@pytest.mark.parametrize(("message", "error"), UNENCODABLE)
async def test_the_broker_answers_requests_it_cannot_encode(
    message: dict[str, Any], error: str
) -> None:
    broker = _broker("public.example.com")
    reply = await _ask(
        broker, **{**message, "url": message["url"].format(base="http://public.example.com")}
    )
    assert reply["ok"] is False
    assert error in reply["error"]
