"""The toolsmaker's review in the console: generated tools, their code, validation and tests.

The page lists every generated tool's versions with their status, and for each version waiting
for a person (``approval_required``): its purpose and risk, the results of the examples it was
built with (run confined after validation, failures first and marked; see
`ai_agent.tools.maker.trials`), the validator's report (errors,
warnings, what the code was seen to use), the diff against the previous version and the whole
code, shown as text (escaped; hidden characters as escapes, so a tab or a zero-width character
cannot hide a line). Its audit log is verified on every visit and the result shown.

The buttons take the command line's path: the same `ai_agent.tools.maker.ToolsmakerRegistry`
(opened by ``open_toolsmaker`` on the settings' directory, as ``ai-agent tools`` opens it) and
its ``approve``, ``reject``, ``activate`` and ``rollback``, which check each transition and
write it to the hash-chained audit log, here ``by="console"``. Each is a POST with the
session's CSRF token; a refused transition is shown in words (409), never half-done.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from ai_agent.console.base import read_form, whole_number
from ai_agent.errors import AgentError
from ai_agent.graph import open_toolsmaker

if TYPE_CHECKING:
    from starlette.requests import Request

    from ai_agent.console.base import Console
    from ai_agent.tools.maker import BuildRecord, ToolsmakerRegistry

__all__ = ["ACTIONS", "Version", "routes"]

ACTIONS = ("approve", "reject", "activate", "rollback")
REVIEWER = "console"


@dataclass(frozen=True)
class Version:
    """One version of a generated tool, as the page shows it."""

    record: BuildRecord
    active: bool
    review: dict[str, Any]
    code: str


def routes(bound: Any) -> list[Route]:
    """The review page and its actions, handlers wrapped by the app's ``bound``."""
    return [
        Route("/tools", bound(_page)),
        # The version is read by `_act`: Starlette's int converter raises (a 500) on a number
        # of more than 4,300 digits.
        Route("/tools/{name}/{version}/{action}", bound(_act), methods=["POST"]),
    ]


def _maker(console: Console) -> ToolsmakerRegistry:
    return open_toolsmaker(console.agent.settings)


def _versions(maker: ToolsmakerRegistry) -> list[Version]:
    active = maker.active_versions()
    found = []
    for record in maker.records():
        waiting = record.status.value == "approval_required"
        found.append(
            Version(
                record,
                active.get(record.name) == record.version,
                maker.review(record.name, record.version) if waiting else {},
                maker.code(record.name, record.version) if waiting else "",
            )
        )
    return found


async def _page(console: Console, request: Request) -> Response:
    return _render(console, request, request.query_params.get("done"), None)


def _render(
    console: Console,
    request: Request,
    done: str | None,
    problem: str | None,
    code: int = 200,
) -> HTMLResponse:
    maker = _maker(console)
    versions = _versions(maker)
    audit = maker.verify_audit()
    return console.page(
        request,
        "tools.html",
        code,
        pending=[v for v in versions if v.record.status.value == "approval_required"],
        versions=versions,
        audit=audit,
        done=done,
        problem=problem,
    )


async def _act(console: Console, request: Request) -> Response:
    form = await read_form(console, request)
    name, version = request.path_params["name"], whole_number(request.path_params["version"], 9)
    action = request.path_params["action"]
    if version is None:
        problem = f"there is no version {request.path_params['version'][:20]!r} of {name[:40]!r}"
        return _render(console, request, None, f"{problem}; this page lists them", 404)
    if action not in ACTIONS:
        return _render(
            console,
            request,
            None,
            f"unknown action {action!r}: use one of {', '.join(ACTIONS)}",
            404,
        )
    maker = _maker(console)
    try:
        done = _apply(maker, action, name, version, form)
    except AgentError as exc:  # an unknown tool, a refused transition, a reason missing
        return _render(console, request, None, str(exc), 409)
    return RedirectResponse(f"/tools?done={_quote(done)}", status_code=303)


def _apply(
    maker: ToolsmakerRegistry, action: str, name: str, version: int, form: dict[str, str]
) -> str:
    """Do one action as ``ai-agent tools ACTION NAME@VERSION`` does; what was done, in words."""
    if action == "approve":
        maker.approve(name, version, by=REVIEWER)
        return f"approved {name}@{version}"
    if action == "reject":
        reason = form.get("reason", "").strip()
        if not reason:
            from ai_agent.errors import ToolTransitionError

            raise ToolTransitionError("say why it is rejected: the requester reads the reason")
        maker.reject(name, version, reason=reason, by=REVIEWER)
        return f"rejected {name}@{version}"
    if action == "activate":
        maker.activate(name, version, by=REVIEWER)
        return f"activated {name}@{version}; agents load it when they start"
    spec = maker.rollback(name, version, by=REVIEWER)
    return f"{spec.name} is back at v{maker.active_versions()[spec.name]}"


def _quote(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")
