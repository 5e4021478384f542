"""Opening one MCP session: the transports, the live session's record, listing its tools.

`ai_agent.tools.mcp.connection` keeps a server connected (starts, watches, restarts it); this
module is what it opens each time: a stdio process (`ai_agent.tools.mcp.stdio`) or an HTTP
endpoint (SSE or streamable HTTP, through langchain-mcp-adapters' session factory), with an MCP
`ClientSession` over it. A new transport goes in `open_session`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx
from mcp import ClientSession
from mcp import types as mcp_types

from ai_agent.tools.mcp.stdio import stdio_transport

if TYPE_CHECKING:
    from anyio.abc import Process
    from mcp.client.session import MessageHandlerFnT

    from ai_agent.tools.mcp.resolve import Resolved

__all__ = [
    "CLIENT",
    "Live",
    "exit_text",
    "exited",
    "http_status",
    "list_tools",
    "open_session",
    "scrub_tools",
]

CLIENT = mcp_types.Implementation(name="ai-agent", version="0.1.0")
# HTTP sessions are kept open for a whole run or Agent block; the SSE stream may stay quiet for
# long. A dead server is noticed by the calls (and their pings), not by this read timeout.
_STREAM_READ_TIMEOUT = 24 * 3600.0


@dataclass
class Live:
    """A started session."""

    session: ClientSession
    tools: list[mcp_types.Tool]
    process: Process | None
    server: str
    generation: int = 0
    started_ms: float = 0.0
    watch: set[asyncio.Task[Any]] = field(default_factory=set)
    # Set when the session has ended (on its own or by stop): calls still waiting on it fail at
    # once. The session itself cannot tell them when its transport dies with an exception.
    ended: asyncio.Event = field(default_factory=asyncio.Event)


@asynccontextmanager
async def open_session(
    resolved: Resolved,
    *,
    connect_timeout: float,
    grace: float,
    on_message: MessageHandlerFnT,
    on_stderr: Callable[[str], None],
) -> AsyncIterator[tuple[ClientSession, Process | None]]:
    """The MCP session over the server's transport, and its process (stdio) or None (HTTP).

    ``connect_timeout`` bounds connecting over HTTP; ``grace`` is how long a stdio server gets
    to exit (see `ai_agent.tools.mcp.stdio`). ``on_message`` gets what the server sends
    unasked, ``on_stderr`` each line a stdio server writes to stderr.
    """
    if resolved.transport == "stdio":
        async with (
            stdio_transport(
                resolved.command or "",
                list(resolved.args),
                env=dict(resolved.env),
                cwd=resolved.cwd,
                on_stderr=on_stderr,
                grace=grace,
            ) as (read, write, process),
            ClientSession(read, write, message_handler=on_message, client_info=CLIENT) as session,
        ):
            yield session, process
        return
    # HTTP transports through langchain-mcp-adapters' session factory.
    from langchain_mcp_adapters.sessions import (
        SSEConnection,
        StreamableHttpConnection,
        create_session,
    )

    kwargs: dict[str, Any] = {"message_handler": on_message, "client_info": CLIENT}
    connection: SSEConnection | StreamableHttpConnection
    if resolved.transport == "sse":
        connection = SSEConnection(
            transport="sse",
            url=str(resolved.url),
            headers=dict(resolved.headers),
            timeout=connect_timeout,
            sse_read_timeout=_STREAM_READ_TIMEOUT,
            session_kwargs=kwargs,
        )
    else:
        connection = StreamableHttpConnection(
            transport="streamable_http",
            url=str(resolved.url),
            headers=dict(resolved.headers),
            timeout=connect_timeout,
            sse_read_timeout=_STREAM_READ_TIMEOUT,
            session_kwargs=kwargs,
        )
    async with create_session(connection) as session:
        yield session, None


async def list_tools(session: ClientSession) -> list[mcp_types.Tool]:
    """Every tool, following the pagination cursor."""
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(1000):
        page = await session.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.nextCursor
        if not cursor:
            break
    return tools


def scrub_tools(tools: list[mcp_types.Tool], resolved: Resolved | None) -> list[mcp_types.Tool]:
    """The tools as listed, scrubbed like everything else the server sends back.

    Their names, descriptions and schemas reach the model, the status and ``mcp list``, and a
    server may quote the key it was given (a tool whose name holds it is then called by the
    scrubbed name, and the server says it has no such tool).
    """
    if resolved is None or not resolved.secrets:
        return tools
    scrubber = resolved.scrubber
    out = []
    for tool in tools:
        data = tool.model_dump(by_alias=True, exclude_unset=True)
        clean = scrubber.scrub(data)
        out.append(tool if clean is data else mcp_types.Tool.model_validate(clean))
    return out


async def http_status(resolved: Resolved, limit: float) -> int | None:
    """The HTTP status a streamable HTTP endpoint gives an initialize request, or None."""
    request = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": mcp_types.LATEST_PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": CLIENT.model_dump(),
        },
    }
    headers = {**resolved.headers, "Accept": "application/json, text/event-stream"}
    try:
        async with httpx.AsyncClient(headers=headers, timeout=min(limit, 10.0)) as client:
            response = await client.post(str(resolved.url), json=request)
            await response.aclose()
    except httpx.HTTPError:
        return None
    return response.status_code


def exited(live: Live) -> bool:
    """Whether the session's stdio server process has exited."""
    return live.process is not None and live.process.returncode is not None


def exit_text(live: Live) -> str:
    """How the session's stdio server ended, for a message."""
    code = live.process.returncode if live.process is not None else None
    return f"exited (exit code {code})"
