"""The console's routes: runs, the inbox, one run, answers, live events, the static files.

``create_app`` puts them behind the `ai_agent.console.guard.Guard` (token, Host, Origin), and
every form that changes something carries the session's CSRF token, checked by `_form` before
anything is read from it. Reads go through the Agent's run archive; an answer is queued through
`ai_agent.console.answers.submit`, the path of ``ai-agent resume --queue``.

Errors a person can act on (a plan that does not fit, a run already answered, an unknown run)
are shown on the page, in words, with the status code that says so (400, 404, 409); nothing
reaches the browser as a traceback.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ai_agent.console import answers, views
from ai_agent.console.auth import Access
from ai_agent.console.guard import Guard
from ai_agent.console.live import run_changes
from ai_agent.console.render import pages
from ai_agent.errors import (
    AgentError,
    InvalidPlanError,
    InvalidThreadIdError,
    PlanRefusedError,
    RunError,
    UnknownThreadError,
)

if TYPE_CHECKING:
    from jinja2 import Environment

    from ai_agent.graph import Agent, RunArchive

__all__ = ["ConsoleError", "create_app"]

MAX_FORM_BYTES = 256_000
"""A form larger than this is refused before it is parsed (a plan has its own, smaller limit)."""


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

    @property
    def archive(self) -> RunArchive:
        """The Agent's run archive."""
        return self.agent.archive

    def page(self, name: str, code: int = 200, **values: Any) -> HTMLResponse:
        """A rendered template (HTTP status ``code``), with the CSRF token its forms carry."""
        text = self.env.get_template(name).render(csrf=self.access.csrf, now=views.now(), **values)
        return HTMLResponse(text, status_code=code)


def create_app(agent: Agent, access: Access, *, interval: float = 1.0) -> Guard:
    """The console as an ASGI app, guarded.

    Args:
        agent: Reads runs (its archive) and queues answers (``submit_plan``).
        access: The token and the hosts the console answers to.
        interval: Seconds between the live updates' looks at the run store.
    """
    console = Console(agent, access, pages(), interval)

    def bound(handler: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            try:
                response: Response = await handler(console, request)
            except ConsoleError as exc:
                return console.page("message.html", exc.status, message=str(exc))
            return response

        return endpoint

    routes = [
        Route("/", bound(_home)),
        Route("/runs", bound(_runs)),
        Route("/runs/{thread}", bound(_run)),
        Route("/inbox", bound(_inbox)),
        Route("/inbox/{thread}/answer", bound(_answer), methods=["POST"]),
        Route("/rules", bound(_rules)),
        Route("/rules/{rule}/revoke", bound(_revoke), methods=["POST"]),
        Route("/events", bound(_events)),
        Mount("/static", StaticFiles(packages=[("ai_agent.console", "static")]), name="static"),
    ]
    return Guard(Starlette(routes=routes), access)


async def _home(console: Console, request: Request) -> Response:
    return RedirectResponse("/inbox", status_code=303)


async def _runs(console: Console, request: Request) -> Response:
    status = request.query_params.get("status") or None
    if status is not None and status not in views.STATUSES:
        raise ConsoleError(
            400, f"unknown status {status!r}: use one of {', '.join(views.STATUSES)}"
        )
    query = request.query_params.get("q", "")
    rows = await views.run_rows(console.archive, status=status, query=query)
    return console.page("runs.html", rows=rows, status=status, query=query, statuses=views.STATUSES)


async def _inbox(console: Console, request: Request) -> Response:
    return await _inbox_page(console)


async def _inbox_page(
    console: Console,
    errors: Mapping[str, str] | None = None,
    status: int = 200,
    draft: Mapping[str, str] | None = None,
) -> Response:
    """The inbox; after a refused answer, its reason, and the arguments the person was editing.

    ``draft`` is the refused form: what was typed in an editor is given back, never lost.
    """
    items = await views.inbox_items(console.archive)
    return console.page("inbox.html", status, items=items, errors=errors or {}, draft=draft or {})


async def _run(console: Console, request: Request) -> Response:
    thread = request.path_params["thread"]
    try:
        view = await views.run_view(console.archive, thread)
    except (UnknownThreadError, InvalidThreadIdError) as exc:
        raise ConsoleError(404, str(exc)) from None
    answered = request.query_params.get("answered")
    return console.page("run.html", thread=thread, view=view, answered=answered)


async def _answer(console: Console, request: Request) -> Response:
    thread = request.path_params["thread"]
    form = await _form(console, request)
    try:
        record = await answers.submit(console.agent, thread, form)
    except InvalidThreadIdError as exc:
        raise ConsoleError(404, str(exc)) from None
    except AgentError as exc:
        # The run stays as it was: the page shows why, next to the gate it was meant for. A
        # plan that does not fit is the person's to fix (400); one that came too late, or a
        # run that is no longer waiting, is a conflict with whoever answered first (409).
        mistake = isinstance(exc, InvalidPlanError) and not isinstance(exc, PlanRefusedError)
        draft = {"thread": thread, "call": form.get("call", ""), "args": form.get("args", "")}
        return await _inbox_page(console, {thread: str(exc)}, 400 if mistake else 409, draft)
    target = f"/runs/{quote(thread, safe='')}?answered={record['id']}"
    return RedirectResponse(target, status_code=303)


async def _form(console: Console, request: Request) -> dict[str, str]:
    """The posted form, once its CSRF token is checked (403 without it)."""
    size = int(request.headers.get("content-length") or 0)
    if size > MAX_FORM_BYTES:
        raise ConsoleError(413, f"the form is larger than {MAX_FORM_BYTES:,} bytes; shorten it")
    async with request.form(max_files=0, max_fields=20) as form:
        values = {k: v for k, v in form.items() if isinstance(v, str)}
    if not console.access.csrf_ok(values.get("csrf")):
        raise ConsoleError(
            403,
            "403 Forbidden: the form's CSRF token is missing or wrong; reload the page and "
            "answer again",
        )
    return values


async def _rules(console: Console, request: Request) -> Response:
    return await _rules_page(console)


async def _rules_page(
    console: Console, *, message: str | None = None, error: str | None = None, status: int = 200
) -> Response:
    rows = await views.rule_rows(console.archive)
    return console.page("rules.html", status, rules=rows, message=message, error=error)


async def _revoke(console: Console, request: Request) -> Response:
    """Revoke a rule (a form with the session's CSRF token); the page says what happened."""
    await _form(console, request)
    text = request.path_params["rule"]
    if not text.isdigit() or len(text) > 18:
        raise ConsoleError(404, f"there is no rule {text[:20]!r}; the Rules page lists them")
    try:
        rule = await console.archive.store.revoke_rule(int(text))
    except RunError as exc:
        return await _rules_page(console, error=str(exc), status=409)
    return await _rules_page(
        console, message=f"Revoked rule {rule['id']}: the gate asks again for such calls."
    )


async def _events(console: Console, request: Request) -> Response:
    try:
        since = float(request.query_params.get("since", ""))
    except ValueError:
        since = None  # a page that did not say when it was made misses nothing worse
    stream = run_changes(console.archive, interval=console.interval, since=since)
    return StreamingResponse(stream, media_type="text/event-stream")
