"""What went wrong with an MCP server, as a short text or an error that says what to do.

Used by `ai_agent.tools.mcp.connection` for a start that failed (the command is missing, the
endpoint refused the credentials or answered 404, the process died during start-up) and for a
call that failed. Nothing here holds a key: every text is passed through the connection's
scrubber (``scrub``) before it leaves.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio
import httpx
from mcp import McpError
from mcp import types as mcp_types
from pydantic import ValidationError

from ai_agent.errors import McpAuthError, McpConnectError, McpServerError
from ai_agent.tools.mcp.session import http_status

if TYPE_CHECKING:
    from ai_agent.config import McpServerConfig
    from ai_agent.tools.mcp.resolve import Resolved

__all__ = ["closed", "describe", "http_error", "invalid_reply", "start_error"]


def _leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, or the exception itself."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def closed(exc: BaseException) -> bool:
    """Whether a call failed because the connection is gone (not because of the call)."""
    if isinstance(exc, McpError):
        return exc.error.code == mcp_types.CONNECTION_CLOSED
    # The client refused the server's answer: a reply that is not valid MCP (pydantic), or
    # structured content against the tool's outputSchema (the SDK raises RuntimeError). The
    # server did answer, so it is not dead: restarting it would lose its state and its restart
    # allowance, and "outcome unknown" would invite the model to run the tool again.
    return not invalid_reply(exc)


def invalid_reply(exc: BaseException) -> bool:
    """Whether a call failed because the client could not accept the server's reply."""
    return isinstance(_leaves(exc)[0], ValidationError | RuntimeError)


def describe(exc: BaseException) -> str:
    """A short description of an exception (the first leaf of a group), without traceback."""
    leaf = _leaves(exc)[0]
    if isinstance(leaf, McpError):
        return _cut(leaf.error.message)
    if isinstance(leaf, ValidationError) and leaf.errors():
        # Its first line only counts the errors: say where the first one is, and what.
        first = leaf.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "the reply"
        return _cut(f"{type(leaf).__name__}: {leaf.title}: {where}: {first['msg']}")
    text = _cut(str(leaf).split("\n", 1)[0].strip())
    if isinstance(leaf, (anyio.ClosedResourceError, anyio.BrokenResourceError)) and not text:
        text = "the connection is closed"
    return f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__


def _cut(text: str, limit: int = 300) -> str:
    """A text the server chose (a schema, a value it sent) kept to the length of a message."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def start_error(
    exc: BaseException,
    resolved: Resolved,
    config: McpServerConfig,
    *,
    scrub: Callable[[str], str],
    stderr_hint: str,
) -> McpServerError:
    """What went wrong at start, as a message saying what to do (never holding a key).

    ``stderr_hint`` is the server's last stderr lines, ready to append to a message.
    """
    name = config.name
    leaves = _leaves(exc)
    where = resolved.target
    if resolved.transport == "streamable_http" and isinstance(leaves[0], McpError):
        # That client reports some HTTP answers only as "Session terminated" (404) or a
        # generic error: ask the endpoint once more, plainly, to say what it answered.
        status = await http_status(resolved, config.startup_timeout)
        if status is not None and status >= 400:
            return http_error(status, where, config, scrub=scrub)
    for leaf in leaves:
        if isinstance(leaf, httpx.HTTPStatusError):
            return http_error(leaf.response.status_code, where, config, scrub=scrub)
    for leaf in leaves:
        if isinstance(leaf, (httpx.ConnectError, httpx.ConnectTimeout, ConnectionError)):
            text = (
                f"MCP server {name!r} is unreachable at {where} ({describe(leaf)}): "
                "is it running, and are the url and transport right?"
            )
            return McpConnectError(scrub(text), server=name)
    leaf = leaves[0]
    if isinstance(leaf, FileNotFoundError):
        text = (
            f"MCP server {name!r} cannot start: the command {resolved.command!r} was "
            "not found; install it or give its full path"
        )
    elif isinstance(leaf, PermissionError):
        text = f"MCP server {name!r} cannot start: {resolved.command!r} is not executable"
    elif resolved.transport == "stdio":
        text = (
            f"MCP server {name!r} ({where}) stopped during start-up ({describe(leaf)}){stderr_hint}"
        )
    else:
        text = f"MCP server {name!r} at {where} failed to start ({describe(leaf)})"
    return McpConnectError(scrub(text), server=name)


def http_error(
    status: int, where: str, config: McpServerConfig, *, scrub: Callable[[str], str]
) -> McpServerError:
    """The error for an HTTP status an endpoint answered at start."""
    name = config.name
    if status in (401, 403):
        auth = config.auth
        if auth is None:
            advice = "the server wants credentials: add auth (type: api_key, key_env: ...)"
        elif auth.key_env is not None:
            advice = f"check the key in {auth.key_env}"
        else:
            advice = "check the key that auth.key refers to"
        reason = "401 Unauthorized" if status == 401 else "403 Forbidden"
        return McpAuthError(
            f"MCP server {name!r} refused the credentials (HTTP {reason}) at {where}; "
            f"{advice}, then try again",
            server=name,
        )
    hint = (
        "; check the path (streamable HTTP servers usually answer at /mcp, SSE servers at "
        "/sse) and the transport"
        if status in (404, 405)
        else ""
    )
    return McpConnectError(
        scrub(f"MCP server {name!r} answered HTTP {status} at {where}{hint}"), server=name
    )
