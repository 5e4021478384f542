"""Real MCP servers for the tests: the npm reference servers and a FastMCP server of our own.

The reference servers are installed by the project's set-up (``.ci/setup`` runs ``npm ci`` in
``.ci/npm``). A test that needs them fails, naming the fix, when they are missing: a silent skip
would let the MCP support rot unnoticed.

HTTP servers listen on 127.0.0.1 only: server-everything would listen on every interface, so it
runs with ``servers/loopback.cjs`` preloaded, which binds a listen without a host to 127.0.0.1;
the tests connect only to 127.0.0.1 either way.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ai_agent.config import McpServerConfig

REPO = Path(__file__).resolve().parents[2]
NPM_ROOT = REPO / ".ci" / "npm"
SCOPE = NPM_ROOT / "node_modules" / "@modelcontextprotocol"
VERSION = "2026.8.31"
SERVERS = Path(__file__).resolve().parent / "servers"
FASTMCP = SERVERS / "fastmcp_server.py"
LOOPBACK = SERVERS / "loopback.cjs"
KEY = "test-key-7f3a9c2e41d8"


def _reference(package: str) -> Path:
    node = shutil.which("node")
    entry = SCOPE / package / "dist" / "index.js"
    manifest = SCOPE / package / "package.json"
    if node is None:
        pytest.fail("node is not on PATH: install Node.js 20+ (.ci/setup expects it)")
    if not entry.is_file() or not manifest.is_file():
        pytest.fail(
            f"the reference MCP server @modelcontextprotocol/{package} is not installed in "
            f"{NPM_ROOT.relative_to(REPO)}: run .ci/setup (it runs npm ci there)"
        )
    version = json.loads(manifest.read_text())["version"]
    if version != VERSION:
        pytest.fail(
            f"@modelcontextprotocol/{package} is {version}, the tests expect {VERSION}: "
            "run .ci/setup again"
        )
    return entry


@pytest.fixture(scope="session")
def filesystem_entry() -> Path:
    """server-filesystem's entry point (stdio)."""
    return _reference("server-filesystem")


@pytest.fixture(scope="session")
def everything_entry() -> Path:
    """server-everything's entry point (stdio, sse, streamableHttp)."""
    return _reference("server-everything")


def filesystem_server(entry: Path, root: Path, name: str = "fs", **options: Any) -> McpServerConfig:
    """server-filesystem over stdio, allowed to use ``root``."""
    return McpServerConfig(name=name, command="node", args=[str(entry), str(root)], **options)


def everything_server(entry: Path, name: str = "every", **options: Any) -> McpServerConfig:
    """server-everything over stdio."""
    return McpServerConfig(name=name, command="node", args=[str(entry), "stdio"], **options)


def fastmcp_stdio(name: str = "py", **options: Any) -> McpServerConfig:
    """Our FastMCP server over stdio."""
    return McpServerConfig(
        name=name, command=sys.executable, args=[str(FASTMCP), "--transport", "stdio"], **options
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class HttpServer:
    """A server process the test started, listening on 127.0.0.1."""

    process: subprocess.Popen[str]
    url: str
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()


def _wait_for_port(port: int, process: subprocess.Popen[str], log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the test server exited ({process.returncode}): {log.read_text()[-800:]}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    pytest.fail(f"the test server did not listen on 127.0.0.1:{port}: {log.read_text()[-800:]}")


@pytest.fixture
def start_everything(
    everything_entry: Path, tmp_path: Path
) -> Iterator[Callable[[str], HttpServer]]:
    """Start server-everything over ``sse`` or ``streamableHttp`` on a free loopback port."""
    started: list[HttpServer] = []

    def start(transport: str) -> HttpServer:
        port = free_port()
        log = tmp_path / f"everything-{transport}-{port}.log"
        with log.open("w") as out:
            process = subprocess.Popen(
                ["node", "--require", str(LOOPBACK), str(everything_entry), transport],
                env={**os.environ, "PORT": str(port)},
                stdout=out,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
        _wait_for_port(port, process, log)
        path = "/sse" if transport == "sse" else "/mcp"
        server = HttpServer(process, f"http://127.0.0.1:{port}{path}", log)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def start_fastmcp(tmp_path: Path) -> Iterator[Callable[..., HttpServer]]:
    """Start our FastMCP server over ``sse`` or ``streamable-http`` on a free loopback port,
    optionally requiring the key in ``TEST_SERVER_KEY`` (in ``header``)."""
    started: list[HttpServer] = []

    def start(transport: str, *, key: bool = False, header: str = "Authorization") -> HttpServer:
        log = tmp_path / f"fastmcp-{transport}-{len(started)}.log"
        args = [sys.executable, str(FASTMCP), "--transport", transport, "--header", header]
        env = dict(os.environ)
        if key:
            args += ["--key-env", "TEST_SERVER_KEY"]
            env["TEST_SERVER_KEY"] = KEY
        with log.open("w") as err:
            process = subprocess.Popen(
                args,
                env=env,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                start_new_session=True,
            )
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("LISTENING "):
            process.kill()
            pytest.fail(f"the FastMCP server did not start: {line!r} {log.read_text()[-800:]}")
        port = int(line.split()[1])
        path = "/sse" if transport == "sse" else "/mcp"
        server = HttpServer(process, f"http://127.0.0.1:{port}{path}", log)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def descendants(pid: int | None = None) -> set[int]:
    """Every living process below ``pid`` (default: this test process), from /proc."""
    root = os.getpid() if pid is None else pid
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] == "Z":
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    out: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.add(child)
            todo.append(child)
    return out


def alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def wait_gone(pids: set[int], seconds: float = 10.0) -> set[int]:
    """The pids still alive after waiting up to ``seconds`` for them to go."""
    deadline = time.monotonic() + seconds
    left = {p for p in pids if alive(p)}
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = {p for p in left if alive(p)}
    return left
