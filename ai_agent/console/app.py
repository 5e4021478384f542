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

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ai_agent.console import (
    answers,
    casefile,
    depth_pages,
    rules_pages,
    storage,
    toolsmaker,
    travel_pages,
    views,
)
from ai_agent.console.auth import Access
from ai_agent.console.base import Console, ConsoleError, whole_number
from ai_agent.console.base import read_form as _form
from ai_agent.console.guard import Guard
from ai_agent.console.live import EventStream, Looks, read_error
from ai_agent.console.render import pages
from ai_agent.errors import (
    AgentError,
    InvalidPlanError,
    InvalidThreadIdError,
    PlanRefusedError,
    UnknownThreadError,
)

if TYPE_CHECKING:
    from ai_agent.graph import Agent

__all__ = ["ConsoleError", "create_app"]

logger = logging.getLogger(__name__)


def create_app(
    agent: Agent,
    access: Access,
    *,
    interval: float = 1.0,
    stopping: Callable[[], bool] = lambda: False,
) -> Guard:
    """The console as an ASGI app, guarded.

    Args:
        agent: Reads runs (its archive) and queues answers (``submit_plan``).
        access: The token and the hosts the console answers to.
        interval: Seconds between the live updates' looks at the run store.
        stopping: True once the server stops: the live-update streams end then.
    """
    looks = Looks(agent.archive, interval, stopping)
    console = Console(agent, access, pages(), interval, looks)

    def bound(handler: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            request.state.made = views.now()  # before anything is read (see Console.page)
            try:
                response: Response = await handler(console, request)
            except ConsoleError as exc:
                return console.page(request, "message.html", exc.status, message=str(exc))
            except ClientDisconnect:
                # The client left before its request arrived (the server's deadline closed
                # it): nobody reads an answer, and nothing went wrong here.
                return Response(status_code=400)
            except Exception as exc:
                if not read_error(exc):
                    raise
                # The run store is damaged or gone (a row edited by hand, the file replaced, the
                # server away): say so in words, the password hidden; the next request reads
                # it again.
                said = console.archive.database.hide(str(exc))
                logger.warning("console: the run store could not be read: %s", said)
                message = (
                    f"The run store could not be read: {said}. Check the database the console "
                    "serves, then reload this page."
                )
                return console.page(request, "message.html", 503, message=message)
            return response

        return endpoint

    routes = [
        *depth_pages.routes(bound),
        *travel_pages.routes(bound),
        Route("/", bound(_home)),
        Route("/runs", bound(_runs)),
        Route("/runs/{thread}", bound(_run)),
        Route("/inbox", bound(_inbox)),
        Route("/inbox/{thread}/answer", bound(_answer), methods=["POST"]),
        *rules_pages.routes(bound),
        Route("/events", bound(_events)),
        *casefile.routes(bound),
        *storage.routes(bound),
        *toolsmaker.routes(bound),
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
    return console.page(
        request, "runs.html", rows=rows, status=status, query=query, statuses=views.STATUSES
    )


async def _inbox(console: Console, request: Request) -> Response:
    return await _inbox_page(console, request)


async def _inbox_page(
    console: Console,
    request: Request,
    errors: Mapping[str, str] | None = None,
    status: int = 200,
    draft: Mapping[str, str] | None = None,
) -> Response:
    """The inbox; after a refused answer, its reason, and the arguments the person was editing.

    ``draft`` is the refused form: what was typed in an editor is given back, never lost.
    """
    items = await views.inbox_items(console.archive)
    return console.page(
        request, "inbox.html", status, items=items, errors=errors or {}, draft=draft or {}
    )


async def _run(console: Console, request: Request) -> Response:
    thread = request.path_params["thread"]
    last = _cycle(request.query_params.get("last"))
    try:
        everything = request.query_params.get("conversation") == "all"
        view = await views.run_view(
            console.archive,
            thread,
            last=last,
            conversation=None if everything else views.CONVERSATION,
        )
    except (UnknownThreadError, InvalidThreadIdError) as exc:
        raise ConsoleError(404, str(exc)) from None
    answered = request.query_params.get("answered")
    return console.page(request, "run.html", thread=thread, view=view, answered=answered)


def _cycle(text: str | None) -> int | None:
    """The ``last`` cycle a run page asks for (None: the latest), or a 400 that says why."""
    if not text:
        return None
    cycle = whole_number(text, 9)
    if cycle is None:
        raise ConsoleError(400, f"last={text!r} is not a cycle number; use 0 or more")
    return cycle


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
        return await _inbox_page(
            console, request, {thread: str(exc)}, 400 if mistake else 409, draft
        )
    target = f"/runs/{quote(thread, safe='')}?answered={record['id']}"
    return RedirectResponse(target, status_code=303)


async def _events(console: Console, request: Request) -> Response:
    try:
        since = float(request.query_params.get("since", ""))
    except ValueError:
        since = None  # a page that did not say when it was made misses nothing worse
    return EventStream(console.looks, since)
