"""The routes of the run view's depth: a checkpoint's state, a model call's context window.

``GET /runs/{thread}/checkpoints?id=CHECKPOINT`` shows the state at a checkpoint (the timeline's
step numbers and the run page's checkpoint picker link it); ``GET /runs/{thread}/steps/{step}/
context`` shows what the model call of a draft step was sent. Both only read; what they show
comes from `ai_agent.console.depth`, masked and inert.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.routing import Route

from ai_agent.console import depth
from ai_agent.console.base import Console, ConsoleError, whole_number
from ai_agent.errors import InvalidThreadIdError, UnknownCheckpointError, UnknownThreadError

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

__all__ = ["routes"]

_MISSING = (UnknownThreadError, UnknownCheckpointError, InvalidThreadIdError)


def routes(bound: Any) -> list[Route]:
    """The routes, each through the app's ``bound`` (errors become pages)."""
    return [
        Route("/runs/{thread}/checkpoints", bound(_checkpoint)),
        Route("/runs/{thread}/steps/{step}/context", bound(_context)),
    ]


async def _checkpoint(console: Console, request: Request) -> Response:
    thread = request.path_params["thread"]
    checkpoint = request.query_params.get("id", "").strip()
    if not checkpoint or len(checkpoint) > 200:
        raise ConsoleError(400, "say which checkpoint: ?id=CHECKPOINT (the run page links them)")
    try:
        state = await depth.state_at(console.agent, thread, checkpoint)
    except _MISSING as exc:
        raise ConsoleError(404, str(exc)) from None
    return console.page(request, "checkpoint.html", thread=thread, state=state)


async def _context(console: Console, request: Request) -> Response:
    thread, text = request.path_params["thread"], request.path_params["step"]
    step = whole_number(text, 9)
    if step is None:
        raise ConsoleError(400, f"step {text[:20]!r} is not a step number; use 0 or more")
    try:
        context = await depth.context_of(console.agent, thread, step)
    except _MISSING as exc:
        raise ConsoleError(404, str(exc)) from None
    return console.page(request, "context.html", thread=thread, context=context)
