"""Shared fixtures. Every test runs isolated from the developer's machine and from the network.

- HOME, the working directory and the MAMBA_* environment are private to each test, so no real
  ``~/agents.env``, ``.env`` or ``config.toml`` is read and no ``.agents/`` directory is written
  outside ``tmp_path``.
- Sockets may only connect to loopback: a test cannot reach a real network model by accident.
  Tests that need the one allowed download (the local model) fetch it in their own fixture.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path
from typing import Any

import pytest

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _loopback_only(address: Any) -> None:
    if not isinstance(address, tuple):  # unix sockets are local by nature
        return
    host = address[0]
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        if host == "localhost":
            return
    raise ConnectionRefusedError(
        f"tests may only connect to loopback; blocked a connection to {host!r}"
    )


def _guarded_connect(self: socket.socket, address: Any) -> None:
    _loopback_only(address)
    _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> int:
    _loopback_only(address)
    return _real_connect_ex(self, address)


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("allow_network"):
        return
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", _guarded_connect_ex)


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in list(os.environ):
        if name.startswith("MAMBA_"):
            monkeypatch.delenv(name)
    # A model call that slips through goes to a closed loopback port, never to a real server.
    monkeypatch.setenv("MAMBA_MODEL_BACKEND__BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("MAMBA_MODEL_BACKEND__MAX_RETRIES", "0")
    monkeypatch.chdir(work)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "allow_network: the test may open non-loopback sockets")


def good_and_bad_runs(db: str, folder: Path) -> None:
    """Two finished runs on ``db``, ``good`` and ``bad``, by the command line (a scripted "42").

    The start of each hostile-row test: ``bad``'s rows are then damaged, and ``good`` must
    still read.
    """
    from ai_agent.cli import main  # the command line, imported by the tests that run it

    script = folder / "script.json"
    script.write_text('[{"text": "42"}]')
    for thread in ("good", "bad"):
        argv = ["run", "multiply", "--db", db, "--model", f"scripted:{script}"]
        assert main([*argv, "--thread-id", thread, "--quiet"]) == 0


def tool_rule(tool: str, key: str) -> dict[str, Any]:
    """A confirmed "this tool, always" rule of a modification tool, as the run store adds it."""
    return {
        "tool": tool,
        "scope": "tool",
        "thread_id": None,
        "args_hash": None,
        "args": None,
        "category": "modification",
        "confirmed": True,
        "source": "a test",
        "key": key,
    }
