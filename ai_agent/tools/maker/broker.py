"""The HTTP broker: the only way a generated tool reaches the network, checked on every hop.

The tool's network namespace has no route out, so HTTP goes over its socket pair to the engine,
which runs the request here. For each request, and again for every redirect it follows:

1. the URL must be ``http`` or ``https``, without user info, and its host and port must match
   the tool's ``allowed_domains`` (an entry without a port allows 80 and 443 only);
2. the host is resolved by the engine and *every* address must be acceptable: an allowlisted
   name that resolves to loopback, a private network or link-local (cloud metadata) is refused,
   unless the entry names that address literally or is ``localhost``;
3. the connection goes to the address that was checked (the URL's host is replaced by it, with
   the original ``Host`` header and TLS server name), so a second DNS answer cannot differ;
4. redirects are followed by the broker itself (never by the HTTP client), at most
   ``max_redirects``, each one through steps 1-3.

A host or address that is not allowed ends the call as a policy violation
(`ai_agent.tools.maker.calls.Violation`). Transport problems (refused, timed out, a
response larger than ``max_response_bytes``) are answered to the tool as errors. Proxy settings
of the engine's environment are ignored.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import SplitResult, urljoin, urlsplit

import httpx

from ai_agent.tools.maker.allowlists import HostRule, address_ok, host_allowed
from ai_agent.tools.maker.calls import Violation

__all__ = ["HttpBroker", "Resolver"]

Resolver = Callable[[str, int], Awaitable[list[str]]]
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}\Z")
_DROP = frozenset(
    {
        "host",
        "connection",
        "keep-alive",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
    }
)
_REQUEST_TIMEOUT = 30.0


async def _system_resolve(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


class _RequestFailedError(Exception):
    """A request that failed in transport: answered to the tool, not a violation."""


class HttpBroker:
    """Runs a generated tool's HTTP requests under its host allowlist.

    Args:
        rules: The parsed ``allowed_domains``.
        max_response_bytes: Larger bodies are refused (the tool gets an error).
        max_redirects: Redirects followed per request.
        resolve: ``async (host, port) -> [address, ...]`` (the system resolver by default; tests
            pass their own).
        transport: An httpx transport (tests pass a mock; None: real connections).
    """

    def __init__(
        self,
        rules: list[HostRule],
        *,
        max_response_bytes: int = 1_000_000,
        max_redirects: int = 5,
        resolve: Resolver | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.rules = rules
        self.max_response_bytes = max_response_bytes
        self.max_redirects = max_redirects
        self.resolve = resolve or _system_resolve
        self.transport = transport

    async def __call__(self, message: dict[str, Any], deadline: float) -> dict[str, Any]:
        """Answer one ``{"op": "http", ...}`` frame from the sandbox.

        Args:
            message: The frame: ``method``, ``url``, ``headers``, ``body``,
                ``follow_redirects``.
            deadline: The call's deadline on the event loop's clock.

        Returns:
            ``{"ok": True, "response": {status, headers, body, url, redirects}}``, or
            ``{"ok": False, "error": ...}`` for a request that failed in transport or was
            malformed.

        Raises:
            Violation: a URL, host or address outside the allowlist (at any hop).
        """
        try:
            method, url, headers, body = _request_parts(message)
            response = await self._follow(
                method, url, headers, body, bool(message.get("follow_redirects", True)), deadline
            )
        except _RequestFailedError as exc:
            return {"ok": False, "error": str(exc)}
        return {"ok": True, "response": response}

    async def _follow(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        body: bytes | None,
        follow: bool,
        deadline: float,
    ) -> dict[str, Any]:
        for hop in range(self.max_redirects + 1):
            status, reply_headers, content = await self._send(method, url, headers, body, deadline)
            location = reply_headers.get("location")
            if not (follow and status in _REDIRECTS and location):
                return {
                    "status": status,
                    "headers": reply_headers,
                    "body": content.decode("utf-8", "replace"),
                    "url": url,
                    "redirects": hop,
                }
            url = urljoin(url, location)
            if status == 303 or (status in (301, 302) and method == "POST"):
                method, body = "GET", None
        raise _RequestFailedError(f"more than {self.max_redirects} redirects")

    async def _target(self, url: str) -> tuple[str, str, HostRule, str]:
        """Check ``url`` against the allowlist; (host, host header, rule, address to connect)."""
        parts = _split(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise Violation("host_not_allowed", f"may only use http(s) URLs, not {url[:200]!r}")
        if parts.username is not None or parts.password is not None:
            raise Violation("host_not_allowed", "URLs with user info are not allowed")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise Violation("host_not_allowed", f"the URL {url[:200]!r} has a bad port") from None
        host = parts.hostname.rstrip(".")
        rule = host_allowed(self.rules, host, port)
        if rule is None:
            raise Violation(
                "host_not_allowed",
                f"tried to reach {host}:{port}, which is not in its allowed domains",
            )
        try:
            addresses = [str(ipaddress.ip_address(host))]
        except ValueError:
            try:
                addresses = await self.resolve(host, port)
            except OSError as exc:
                raise _RequestFailedError(f"cannot resolve {host}: {exc}") from None
        bad = [a for a in addresses if not address_ok(a, rule)]
        if bad or not addresses:
            raise Violation(
                "address_not_allowed",
                f"{host} resolves to {', '.join(bad) or 'nothing'}, a private or local address; "
                "only the allowlist's literal addresses may be private",
            )
        netloc = parts.netloc.rsplit("@", 1)[-1]
        return host, netloc, rule, addresses[0]

    async def _send(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        body: bytes | None,
        deadline: float,
    ) -> tuple[int, dict[str, str], bytes]:
        host, netloc, _, address = await self._target(url)
        parts = urlsplit(url)
        literal = f"[{address}]" if ":" in address else address
        pinned = parts._replace(netloc=f"{literal}:{parts.port}" if parts.port else literal)
        remaining = deadline - asyncio.get_running_loop().time()
        timeout = max(0.1, min(_REQUEST_TIMEOUT, remaining))
        extensions = {"sni_hostname": host} if parts.scheme == "https" else {}
        async with httpx.AsyncClient(
            transport=self.transport, trust_env=False, follow_redirects=False, timeout=timeout
        ) as client:
            try:
                # Inside the try: a URL the client refuses (a control character in its path)
                # is the tool's bad request, answered to it, not an exception that ends the
                # call without a word.
                request = client.build_request(
                    method,
                    pinned.geturl(),
                    headers={**headers, "Host": netloc},
                    content=body,
                    extensions=extensions,
                )
                response = await client.send(request, stream=True)
                try:
                    content = await self._body(response)
                finally:
                    await response.aclose()
            except (httpx.HTTPError, httpx.InvalidURL, ValueError) as exc:
                raise _RequestFailedError(f"{type(exc).__name__}: {exc}") from None
        reply = {k.lower(): v for k, v in response.headers.items()}
        return response.status_code, reply, content

    async def _body(self, response: httpx.Response) -> bytes:
        chunks = bytearray()
        async for chunk in response.aiter_bytes():
            chunks += chunk
            if len(chunks) > self.max_response_bytes:
                raise _RequestFailedError(
                    f"the response is larger than {self.max_response_bytes} bytes; not passed on"
                )
        return bytes(chunks)


def _split(url: str) -> SplitResult:
    """``urlsplit(url)``; a URL it cannot read (``http://[::1/``) is the tool's bad request."""
    try:
        return urlsplit(url)
    except ValueError as exc:
        raise _RequestFailedError(f"the URL {url[:200]!r} cannot be read: {exc}") from None


def _request_parts(message: dict[str, Any]) -> tuple[str, str, dict[str, str], bytes | None]:
    method = str(message.get("method", "GET")).upper()
    if method not in _METHODS:
        raise _RequestFailedError(f"method {method[:20]!r} is not supported")
    url = message.get("url")
    if not isinstance(url, str) or len(url) > 8192:
        raise _RequestFailedError("url must be a string of at most 8192 characters")
    raw = message.get("headers") or {}
    if not isinstance(raw, dict) or len(raw) > 64:
        raise _RequestFailedError("headers must be an object of at most 64 entries")
    headers: dict[str, str] = {}
    for name, value in raw.items():
        if (
            not _TOKEN.match(str(name))
            or not isinstance(value, str)
            or not value.isascii()  # what HTTP/1.1 clients send; other text cannot be encoded
            or any(c in value for c in "\r\n\x00")
        ):
            raise _RequestFailedError(
                f"header {str(name)[:40]!r} is not a valid header (a token name, and a value "
                "of ASCII text without line breaks; encode other text, e.g. percent-encoding)"
            )
        if name.lower() not in _DROP:
            headers[name] = value
    body = message.get("body")
    if body is not None and not isinstance(body, str):
        raise _RequestFailedError("body must be a string or null")
    return method, url, headers, body.encode() if body is not None else None
