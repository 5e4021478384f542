"""How long an MCP session takes to start, and a call on a kept-open session versus a new one.

Run from the repository root after .ci/setup (the reference servers in .ci/npm)::

    uv run python bench/mcp_sessions.py [--starts 5] [--calls 50] [--fresh 10]

For each transport it measures: the start of a session as the Agent makes it (spawn or connect,
``initialize``, ``tools/list``); an ``echo`` call on that session, kept open; and the same call
through langchain-mcp-adapters' default (``MultiServerMCPClient.get_tools()``), which opens a new
session, and for stdio a new server process, for every call. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ai_agent.config import McpServerConfig
from ai_agent.tools.mcp.connection import McpConnection

if TYPE_CHECKING:
    from langchain_mcp_adapters.sessions import Connection

ROOT = Path(__file__).resolve().parents[1]
EVERYTHING = ROOT / ".ci/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
LOOPBACK = ROOT / "tests/mcp/servers/loopback.cjs"
FASTMCP = ROOT / "tests/mcp/servers/fastmcp_server.py"


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _http_everything(transport: str) -> tuple[subprocess.Popen[bytes], str]:
    port = _port()
    process = subprocess.Popen(
        ["node", "--require", str(LOOPBACK), str(EVERYTHING), transport],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    path = "/sse" if transport == "sse" else "/mcp"
    return process, f"http://127.0.0.1:{port}{path}"


async def _timed(fn: Callable[[], Awaitable[Any]], times: int) -> list[float]:
    out = []
    for _ in range(times):
        started = time.perf_counter()
        await fn()
        out.append((time.perf_counter() - started) * 1000)
    return out


def _ms(values: list[float]) -> str:
    values = sorted(values)
    p95 = values[min(len(values) - 1, int(len(values) * 0.95))]
    return f"{statistics.median(values):.1f} (p95 {p95:.1f})"


async def _measure(
    label: str,
    config: McpServerConfig,
    adapter: dict[str, Any],
    call: tuple[str, dict[str, Any]],
    args: argparse.Namespace,
) -> str:
    from langchain_mcp_adapters.client import MultiServerMCPClient

    connection = McpConnection(config)
    # The start is timed to the moment the session is ready; stopping is not part of it.
    starts = []
    for _ in range(args.starts):
        started = time.perf_counter()
        await connection.start()
        starts.append((time.perf_counter() - started) * 1000)
        await connection.stop()
    await connection.start()
    tool, payload = call
    kept = await _timed(lambda: connection.call(tool, payload), args.calls)
    await connection.stop()
    client = MultiServerMCPClient({"s": cast("Connection", adapter)})
    tools = {t.name: t for t in await client.get_tools()}
    fresh = await _timed(lambda: tools[tool].ainvoke(payload), args.fresh)
    return f"| {label} | {_ms(starts)} | {_ms(kept)} | {_ms(fresh)} |"


async def main(args: argparse.Namespace) -> None:
    echo = ("echo", {"message": "hi"})
    node = [str(EVERYTHING), "stdio"]
    rows = [
        await _measure(
            "stdio (server-everything, node)",
            McpServerConfig(name="s", command="node", args=node),
            {"transport": "stdio", "command": "node", "args": node},
            echo,
            args,
        ),
        await _measure(
            "stdio (FastMCP, python)",
            McpServerConfig(name="s", command=sys.executable, args=[str(FASTMCP)]),
            {"transport": "stdio", "command": sys.executable, "args": [str(FASTMCP)]},
            ("echo", {"text": "hi"}),
            args,
        ),
    ]
    for transport, kind in (("sse", "sse"), ("streamableHttp", "streamable_http")):
        process, url = _http_everything(transport)
        try:
            rows.append(
                await _measure(
                    f"{kind} (server-everything)",
                    McpServerConfig(name="s", url=url, transport=kind),
                    {"transport": kind, "url": url},
                    echo,
                    args,
                )
            )
        finally:
            process.kill()
            process.wait()
    print(
        "| transport | session start, ms | call on a kept-open session, ms |"
        " call with a new session each time (adapter default), ms |"
    )
    print("|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--fresh", type=int, default=10)
    asyncio.run(main(parser.parse_args()))
