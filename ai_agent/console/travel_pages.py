"""The routes of time travel: fork from a checkpoint, replay offline, diff two runs.

``POST /runs/{thread}/fork`` (the checkpoint page's form: the checkpoint, edited state as JSON,
a new plan) forks and sets the fork going, then shows the fork's page. ``POST /runs/{thread}/
replay`` replays the run from its recording and shows where and how it diverged, if it did.
``GET /diff?a=THREAD&b=THREAD`` shows two runs side by side. The work is `ai_agent.console.
travel`'s; every form carries the session's CSRF token.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from starlette.responses import RedirectResponse
from starlette.routing import Route

from ai_agent.console import depth, travel
from ai_agent.console.base import Console, ConsoleError, read_form
from ai_agent.errors import (
    AgentError,
    InvalidThreadIdError,
    UnknownCheckpointError,
    UnknownThreadError,
)

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

__all__ = ["routes"]

_MISSING = (UnknownThreadError, UnknownCheckpointError, InvalidThreadIdError)


def routes(bound: Any) -> list[Route]:
    """The routes, each through the app's ``bound`` (errors become pages)."""
    return [
        Route("/runs/{thread}/fork", bound(_fork), methods=["POST"]),
        Route("/runs/{thread}/replay", bound(_replay), methods=["POST"]),
        Route("/diff", bound(_diff)),
    ]


async def _fork(console: Console, request: Request) -> Response:
    thread = request.path_params["thread"]
    form = await read_form(console, request)
    checkpoint = form.get("checkpoint", "").strip()
    if not checkpoint:
        raise ConsoleError(400, "say which checkpoint to fork at (the checkpoint page's form)")
    try:
        outcome = await travel.fork(
            console.agent, thread, checkpoint, form.get("update", ""), form.get("plan", "")
        )
    except _MISSING as exc:
        raise ConsoleError(404, str(exc)) from None
    except travel.ForkedWithoutPlanError as exc:  # made: the page must not say "not forked"
        return await _fork_refused(console, request, thread, checkpoint, form, str(exc))
    except AgentError as exc:
        return await _fork_refused(console, request, thread, checkpoint, form, f"not forked: {exc}")
    # The fork's page says where it came from (its run row), and follows it as it runs.
    return RedirectResponse(f"/runs/{quote(outcome.thread_id, safe='')}", status_code=303)


async def _fork_refused(
    console: Console,
    request: Request,
    thread: str,
    checkpoint: str,
    form: dict[str, str],
    problem: str,
) -> Response:
    """The checkpoint's page again, saying why, with what was typed still in the form."""
    try:
        state = await depth.state_at(console.agent, thread, checkpoint)
    except AgentError:
        raise ConsoleError(400, problem) from None
    typed = {"update": form.get("update", ""), "plan": form.get("plan", "")}
    return console.page(
        request,
        "checkpoint.html",
        400,
        thread=thread,
        state=state,
        problem=problem,
        typed=typed,
    )


async def _replay(console: Console, request: Request) -> Response:
    thread = request.path_params["thread"]
    await read_form(console, request)
    try:
        result = await travel.replay(console.agent, thread)
    except _MISSING as exc:
        raise ConsoleError(404, str(exc)) from None
    except AgentError as exc:
        raise ConsoleError(409, f"not replayed: {exc}") from None
    return console.page(request, "replay.html", thread=thread, result=result)


async def _diff(console: Console, request: Request) -> Response:
    left, right = request.query_params.get("a", ""), request.query_params.get("b", "")
    if not left or not right:
        raise ConsoleError(400, "say which two runs to compare: /diff?a=THREAD&b=THREAD")
    try:
        diff = await travel.diff(console.agent, left.strip(), right.strip())
    except _MISSING as exc:
        raise ConsoleError(404, str(exc)) from None
    return console.page(request, "diff.html", diff=diff)
