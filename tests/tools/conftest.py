"""Fixtures for the built-in tools: a sandbox tree with real files, symlinks and neighbours."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

CANARY = "outside-canary-4e1d"


@dataclass
class Tree:
    """``base`` is the sandbox; ``outside`` and ``evil`` (``base-evil``) are its neighbours."""

    root: Path
    base: Path
    outside: Path
    evil: Path

    @property
    def secret(self) -> Path:
        return self.outside / "secret.txt"


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    base = tmp_path / "base"
    outside = tmp_path / "outside"
    evil = tmp_path / "base-evil"
    for d in (base / "sub" / "deep", outside, evil):
        d.mkdir(parents=True)
    (base / "notes.txt").write_text("line one\nline two\n")
    (base / "sub" / "a.txt").write_text("alpha\n")
    (base / "sub" / "deep" / "b.md").write_text("# Bee\n")
    (outside / "secret.txt").write_text(CANARY)
    (evil / "secret.txt").write_text(CANARY)
    (base / "link_in").symlink_to("sub/a.txt")
    (base / "link_out").symlink_to(outside / "secret.txt")
    (base / "dir_out").symlink_to(outside)
    (base / "rel_out").symlink_to("../outside")
    return Tree(tmp_path, base, outside, evil)


def _state(path: Path) -> tuple[float, float, bytes, list[str]]:
    info = os.stat(path)
    if path.is_dir():
        return info.st_atime, info.st_mtime, b"", sorted(os.listdir(path))
    return info.st_atime, info.st_mtime, path.read_bytes(), []


@contextmanager
def untouched(*paths: Path) -> Iterator[None]:
    """Assert the body neither read nor wrote any of ``paths`` (nor added files to them).

    Reads are caught through the access time: it is set far in the past first, and the
    filesystem (relatime) moves it forward on any read of an older-than-modified file.
    """
    files = [p for root in paths for p in ([root, *root.rglob("*")] if root.is_dir() else [root])]
    for p in files:
        if p.is_file():
            os.utime(p, (1, time.time() - 10))
    before = {p: _state(p) for p in files}
    for p, state in before.items():  # reading them here moved the atime: reset it again
        if p.is_file():
            os.utime(p, (1, state[1]))
    before = {p: (1.0, s[1], s[2], s[3]) if p.is_file() else s for p, s in before.items()}
    yield
    for p, (atime, mtime, data, listing) in before.items():
        now = os.stat(p)
        if p.is_file():
            assert now.st_atime == atime, f"{p} was read"
            assert now.st_mtime == mtime and p.read_bytes() == data, f"{p} was written"
        else:
            assert sorted(os.listdir(p)) == listing, f"{p} gained or lost entries"


Reply = Callable[[BaseHTTPRequestHandler], None]
"""What a test server does with each GET."""


@pytest.fixture
def serve() -> Iterator[Callable[[Reply], str]]:
    """Start real HTTP servers on 127.0.0.1 answering with a `Reply`; each start's base URL."""
    servers: list[ThreadingHTTPServer] = []

    def start(reply: Reply) -> str:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                reply(self)

            def log_message(self, format: str, *args: object) -> None:
                return

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
