"""The Rules page: the always-allow rules people gave, each revocable (CSRF-checked).

A rule is kept in the run store (`ai_agent.checkpoints.rules`); a row that cannot be read is
listed as not used, with the reason, and revoking it is still possible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.routing import Route

from ai_agent.console import views
from ai_agent.console.base import ConsoleError, read_form, whole_number
from ai_agent.errors import RunError

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from ai_agent.console.base import Console

__all__ = ["routes"]


def routes(bound: Any) -> list[Route]:
    """The page and its revoke button, handlers wrapped by the app's ``bound``."""
    return [
        Route("/rules", bound(_rules)),
        Route("/rules/{rule}/revoke", bound(_revoke), methods=["POST"]),
    ]


async def _rules(console: Console, request: Request) -> Response:
    return await _rules_page(console, request)


async def _rules_page(
    console: Console,
    request: Request,
    *,
    message: str | None = None,
    error: str | None = None,
    status: int = 200,
) -> Response:
    rows = await views.rule_rows(console.archive)
    return console.page(request, "rules.html", status, rules=rows, message=message, error=error)


async def _revoke(console: Console, request: Request) -> Response:
    """Revoke a rule (a form with the session's CSRF token); the page says what happened."""
    await read_form(console, request)
    text = request.path_params["rule"]
    rule_id = whole_number(text, 18)
    if rule_id is None:
        raise ConsoleError(404, f"there is no rule {text[:20]!r}; the Rules page lists them")
    try:
        rule = await console.archive.store.revoke_rule(rule_id)
    except RunError as exc:
        return await _rules_page(console, request, error=str(exc), status=409)
    return await _rules_page(
        console, request, message=f"Revoked rule {rule['id']}: the gate asks again for such calls."
    )
