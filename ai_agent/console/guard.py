"""The console's front door: every request passes the token, Host and Origin checks here.

An ASGI middleware (not Starlette's ``BaseHTTPMiddleware``, which buffers the server-sent
events stream). What it checks is drawn in `ai_agent.console.auth`; the CSRF token of a form
is checked where the form is read (`ai_agent.console.app`), since reading the body here would
consume it. Every response gets headers that keep the pages inert: a Content-Security-Policy
allowing only the console's own scripts and styles (no inline script, so markup that escaped
escaping still could not run), no framing, no sniffing, no referrer to other sites, no caching.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from ai_agent.console.auth import COOKIE, Access

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["SECURITY_HEADERS", "Guard"]

SECURITY_HEADERS = {
    "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    # Not no-referrer: with it Chromium sends "Origin: null" on the console's own forms.
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}

FORBIDDEN = (
    "403 Forbidden: open the console with the URL `ai-agent ui` printed (it carries the token); "
    "the token was missing or wrong, or this page came from another site."
)


class Guard:
    """Let a request through only with the console's token (see the module docstring).

    Args:
        app: The console's routes.
        access: The token and the hosts.
    """

    def __init__(self, app: ASGIApp, access: Access) -> None:
        self.app = app
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a request: refused, redirected to sign in, or passed on."""
        if scope["type"] == "websocket":  # the console serves none
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":  # lifespan: nothing to guard
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(Request(scope))
        sender = _with_headers(send)
        if refusal is not None:
            await refusal(scope, receive, sender)
        else:
            await self.app(scope, receive, sender)

    def _refusal(self, request: Request) -> Response | None:
        """The response that refuses (or redirects) this request, or None to let it through."""
        host = request.headers.get("host")
        if not self.access.host_ok(host):
            return PlainTextResponse(
                "403 Forbidden: this console answers to its own address only "
                "(open the URL `ai-agent ui` printed)",
                status_code=403,
            )
        # Any method: a browser names the page's origin on a cross-origin read (fetch,
        # EventSource) as on a form, and a page of another port on this host is same-site, so
        # its requests carry the SameSite=Strict cookie. Such a read is refused outright.
        if not self.access.origin_ok(request.headers.get("origin"), host):
            return PlainTextResponse(FORBIDDEN, status_code=403)
        token = request.query_params.get("token")
        if token is not None:
            return self._sign_in(request, token)
        if not self.access.session_ok(request.cookies.get(COOKIE)):
            return PlainTextResponse(FORBIDDEN, status_code=403)
        return None

    def _sign_in(self, request: Request, token: str) -> Response:
        """The first visit: set the session cookie, and go to the page without the token."""
        if not self.access.token_ok(token):
            return PlainTextResponse(FORBIDDEN, status_code=403)
        query = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
        # One leading slash: ``//host/...`` would send the browser to another site.
        path = "/" + request.url.path.lstrip("/")
        target = path + (f"?{urlencode(query)}" if query else "")
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(
            COOKIE,
            self.access.session,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return response


def _with_headers(send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", []))
            present = {k.lower() for k, _ in headers}
            headers += [
                (k.encode(), v.encode())
                for k, v in SECURITY_HEADERS.items()
                if k.encode() not in present
            ]
            message = {**message, "headers": headers}
        await send(message)

    return sending
