"""A small MCP server of our own (FastMCP, mcp 1.30) for the tests: every transport, optional key.

Run it as a child process::

    python fastmcp_server.py --transport stdio
    python fastmcp_server.py --transport streamable-http --key-env TEST_MCP_KEY
    python fastmcp_server.py --transport sse --key-env TEST_MCP_KEY --header X-API-Key

Over HTTP it binds 127.0.0.1 on a free port and prints ``LISTENING <port>`` on stdout once it
accepts connections. With ``--key-env NAME`` every request must carry the value of that variable
(``Authorization: Bearer <key>``, or the bare key in ``--header``), else it gets 401 before it
reaches MCP at all, as a gateway in front of a real server would answer.

Tools: ``count`` (a counter kept per session: state across calls), ``echo``, ``read_file`` (the
same name as server-filesystem's), ``chime`` (audio content), ``pid``, ``env`` (one variable of
its environment), ``sleep`` (answers after a while), ``hang`` (never answers), ``crash`` (the
process dies mid-call), ``fail`` (an MCP tool error), ``grow`` and ``shrink`` (add or remove a
tool and say the list changed), and tools carrying each kind of annotation. ``--noisy`` prints
lines that are not JSON-RPC first.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import os
import socket
import sys
import weakref
from typing import Any

from mcp.server.fastmcp import Context, FastMCP
from mcp.server.fastmcp.utilities.types import Audio
from mcp.types import ToolAnnotations

# The counters of open sessions, by session object: a new session starts from zero. Weak keys,
# not id(): a new session allocated where a closed one was would have inherited its count.
_COUNTS: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()

mcp = FastMCP("ai-agent-test-server")


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False))
def count(ctx: Context[Any, Any, Any]) -> int:
    """Add one to this session's counter and return it."""
    key = ctx.session
    _COUNTS[key] = _COUNTS.get(key, 0) + 1
    return _COUNTS[key]


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
def read_file(path: str) -> str:
    """Pretend to read a file: says which server answered."""
    return f"fastmcp read {path}"


# A tenth of a second of silence as a WAV file (8 kHz, 8-bit mono): real audio, few bytes.
_WAV = (
    b"RIFF"
    + (36 + 800).to_bytes(4, "little")
    + b"WAVEfmt "
    + (16).to_bytes(4, "little")
    + (1).to_bytes(2, "little")
    + (1).to_bytes(2, "little")
    + (8000).to_bytes(4, "little")
    + (8000).to_bytes(4, "little")
    + (1).to_bytes(2, "little")
    + (8).to_bytes(2, "little")
    + b"data"
    + (800).to_bytes(4, "little")
    + b"\x80" * 800
)


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
def chime(kind: str = "wav") -> Audio:
    """A short clip of audio: 'wav' (audio/wav) or 'ogg' (a type OpenAI's input_audio refuses)."""
    return Audio(data=_WAV, format=kind)


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
def env(name: str) -> str:
    """The value of one environment variable of the server ('' when unset)."""
    return os.environ.get(name, "")


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
async def sleep(seconds: float) -> str:
    """Wait, then answer."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
async def hang() -> str:
    """Never answer."""
    await asyncio.Event().wait()
    return "unreachable"


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
def crash() -> str:
    """The server process dies in the middle of this call."""
    os._exit(3)


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
def fail(message: str) -> str:
    """An MCP tool error carrying the message."""
    raise ValueError(message)


@mcp.tool(annotations=ToolAnnotations(destructiveHint=True, readOnlyHint=False))
def wipe(target: str) -> str:
    """A destructive tool (it only says so)."""
    return f"wiped {target}"


@mcp.tool(annotations=ToolAnnotations(openWorldHint=True, readOnlyHint=True))
def fetch(url: str) -> str:
    """A tool that talks to the outside world (it only says so)."""
    return f"fetched {url}"


@mcp.tool()
def plain(text: str) -> str:
    """A tool without annotations."""
    return text


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=False))
async def grow(ctx: Context[Any, Any, Any]) -> str:
    """Add the tool 'grown' and tell the client the tool list changed."""

    def grown() -> str:
        """A tool added while the server runs."""
        return "I am new"

    mcp.add_tool(grown, annotations=ToolAnnotations(readOnlyHint=True))
    await ctx.session.send_tool_list_changed()
    return "grown"


@mcp.tool(annotations=ToolAnnotations(readOnlyHint=False))
async def shrink(ctx: Context[Any, Any, Any]) -> str:
    """Remove the tool 'plain' and tell the client the tool list changed."""
    mcp.remove_tool("plain")
    await ctx.session.send_tool_list_changed()
    return "shrunk"


def _noisy() -> None:
    """Before serving: lines on stdout that are no JSON-RPC, and stderr without a newline."""
    sys.stdout.write("\nstarting up, not JSON\n")
    sys.stdout.flush()
    sys.stderr.write("a warning without a newline")
    sys.stderr.flush()


def _guarded(app: Any, key: str, header: str) -> Any:
    """The app behind a key check: 401 without the right key, before MCP sees the request."""
    expected = key if header.lower() != "authorization" else f"Bearer {key}"

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = ""
            for name, value in scope.get("headers", []):
                if name.decode("latin-1").lower() == header.lower():
                    given = value.decode("latin-1")
            if not hmac.compare_digest(given.encode(), expected.encode()):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"text/plain")],
                    }
                )
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await app(scope, receive, send)

    return guarded


async def _serve_http(transport: str, key_env: str | None, header: str) -> None:
    import uvicorn

    app: Any = mcp.sse_app() if transport == "sse" else mcp.streamable_http_app()
    if key_env:
        app = _guarded(app, os.environ[key_env], header)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    port = sock.getsockname()[1]

    async def announce() -> None:
        while not server.started:  # noqa: ASYNC110 - uvicorn offers no event to wait on
            await asyncio.sleep(0.01)
        print(f"LISTENING {port}", flush=True)

    announcer = asyncio.create_task(announce())
    await server.serve(sockets=[sock])
    announcer.cancel()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transport", choices=["stdio", "sse", "streamable-http"], default="stdio")
    parser.add_argument("--key-env", help="environment variable holding the key requests need")
    parser.add_argument("--header", default="Authorization", help="header that carries the key")
    parser.add_argument("--noisy", action="store_true", help="print non-protocol lines first")
    args = parser.parse_args(argv)
    if args.noisy:
        _noisy()
    if args.transport == "stdio":
        mcp.run("stdio")
        return 0
    asyncio.run(_serve_http(args.transport, args.key_env, args.header))
    return 0


if __name__ == "__main__":
    sys.exit(main())
