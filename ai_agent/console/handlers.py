"""What a page module's handler is given by the app: `ConsoleParts`, as a protocol.

The routes of the regression-test download, the toolsmaker review and the storage page live in
modules of their own; ``app.create_app`` mounts them. Their handlers get the app's ``Console``
(which satisfies this protocol), and know it only through it, so no module imports the app
that imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import HTMLResponse

    from ai_agent.console.auth import Access
    from ai_agent.graph import Agent, RunArchive

__all__ = ["ConsoleParts", "checked_form"]

MAX_FORM_BYTES = 64_000
"""A form of these pages (a confirmation, a reason) is small; a larger one is refused unread."""


class ConsoleParts(Protocol):
    """The Agent, the credentials, the run archive and the page renderer."""

    @property
    def agent(self) -> Agent:
        """The console's Agent."""

    @property
    def access(self) -> Access:
        """The token, the session and the CSRF token."""

    @property
    def archive(self) -> RunArchive:
        """The Agent's run archive."""

    def page(self, request: Request, name: str, code: int = 200, **values: Any) -> HTMLResponse:
        """A rendered template with the CSRF token its forms carry, dated from ``request``."""


async def checked_form(console: ConsoleParts, request: Request) -> dict[str, str] | HTMLResponse:
    """The posted form once its size and CSRF token are checked, or the page that refuses it."""
    size = int(request.headers.get("content-length") or 0)
    if size > MAX_FORM_BYTES:
        return console.page(
            request,
            "message.html",
            413,
            message=f"the form is larger than {MAX_FORM_BYTES:,} bytes",
        )
    async with request.form(max_files=0, max_fields=20) as form:
        values = {k: v for k, v in form.items() if isinstance(v, str)}
    if not console.access.csrf_ok(values.get("csrf")):
        return console.page(
            request,
            "message.html",
            403,
            message="403 Forbidden: the form's CSRF token is missing or wrong; reload the page "
            "and try again",
        )
    return values
