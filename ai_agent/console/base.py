"""What the console's routes share: the `Console` they are bound to and `ConsoleError`.

Below `ai_agent.console.app` and the modules of routes it mounts (``depth_pages``), so that
each of them can raise a `ConsoleError` and render through the `Console` without importing
the app.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import HTMLResponse

from ai_agent.console import views

if TYPE_CHECKING:
    from jinja2 import Environment
    from starlette.types import Message

    from ai_agent.console.auth import Access
    from ai_agent.console.live import Looks
    from ai_agent.graph import Agent, RunArchive

__all__ = ["MAX_FORM_BYTES", "Console", "ConsoleError", "read_form", "whole_number"]

MAX_FORM_BYTES = 256_000
"""A form larger than this is refused before it is parsed (a plan has its own, smaller limit)."""


def whole_number(text: str, max_digits: int) -> int | None:
    """``text`` as a whole number of at most ``max_digits`` ASCII digits, or None.

    A number in an address (a cycle, a step, a rule's id, a tool's version) is one a page wrote,
    in ASCII digits. ``str.isdigit`` alone lets through what ``int`` reads as another number
    (an Arabic-Indic one, U+0661, is 1: a request would act on a number nobody wrote) or
    refuses (a superscript two: a 500), and ``int`` refuses more than 4,300 digits.

    Examples:
        >>> whole_number("12", 9), whole_number("\u00b2", 9), whole_number("\u0661", 9)
        (12, None, None)
        >>> whole_number("1234", 3) is None
        True
    """
    if not (text.isascii() and text.isdigit()) or len(text) > max_digits:
        return None
    return int(text)


class ConsoleError(Exception):
    """A request the console refuses, with the status code and the words to show."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Console:
    """What the routes share."""

    agent: Agent
    access: Access
    env: Environment
    interval: float
    looks: Looks  # the live updates' shared looks at the run store

    @property
    def archive(self) -> RunArchive:
        """The Agent's run archive."""
        return self.agent.archive

    def page(self, request: Request, name: str, code: int = 200, **values: Any) -> HTMLResponse:
        """A rendered template (HTTP status ``code``), with the CSRF token its forms carry.

        The page says when the request began (``made``), not when it was rendered: its live
        updates report every change after that, and a change made while the page's reads ran
        may not be in what it shows.
        """
        made = getattr(request.state, "made", None) or views.now()
        text = self.env.get_template(name).render(csrf=self.access.csrf, now=made, **values)
        return HTMLResponse(text, status_code=code)


async def read_form(console: Console, request: Request) -> dict[str, str]:
    """The posted form, once its CSRF token is checked (403 without it)."""
    too_large = ConsoleError(413, f"the form is larger than {MAX_FORM_BYTES:,} bytes; shorten it")
    declared = request.headers.get("content-length") or "0"
    if declared.isdigit() and int(declared) > MAX_FORM_BYTES:
        raise too_large
    # The length a request declares is not a limit: a chunked body declares none. So the body
    # is counted as it arrives, and parsed only once it is known to fit.
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise too_large
    async with _replayed(request, bytes(body)).form(max_files=0, max_fields=20) as form:
        values = {k: v for k, v in form.items() if isinstance(v, str)}
    if not console.access.csrf_ok(values.get("csrf")):
        raise ConsoleError(
            403,
            "403 Forbidden: the form's CSRF token is missing or wrong; reload the page and "
            "answer again",
        )
    return values


def _replayed(request: Request, body: bytes) -> Request:
    """The request again, its body (read already) given once more to the form parser."""

    async def receive() -> Message:
        return {"type": "http.request", "body": body, "more_body": False}

    return Request(request.scope, receive)
