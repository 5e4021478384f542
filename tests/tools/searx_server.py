"""A real local searx (Debian's ``searx`` 1.1.0) answering from a fixture, for web_search tests.

searx's ``json_engine`` fetches a URL and reads results out of its JSON; here that URL is a tiny
HTTP server in the test process whose reply names the query, so a test can see the query travel
through searx and back. searx itself runs in Debian's Python (``/usr/bin/python3 -m
searx.webapp``) on a free loopback port, as a child process that the fixture stops.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

SEARX_PYTHON = "/usr/bin/python3"
SEARX_PACKAGE = Path("/usr/lib/python3/dist-packages/searx")

SETTINGS = """\
use_default_settings: false
general:
  debug: false
  instance_name: "ai-agent tests"
  enable_stats: false
search:
  safe_search: 0
  autocomplete: ""
  default_lang: ""
  ban_time_on_fail: 0
  max_ban_time_on_fail: 0
  formats: [html, json]
server:
  port: {port}
  bind_address: "127.0.0.1"
  secret_key: "tests-only-not-a-secret"
  base_url: false
  image_proxy: false
  http_protocol_version: "1.0"
  method: "GET"
ui:
  static_path: "/usr/share/python3-searx/static"
  templates_path: "/usr/share/python3-searx/templates"
  default_theme: oscar
  default_locale: ""
  theme_args:
    oscar_style: logicodev
outgoing:
  request_timeout: 5.0
  pool_connections: 10
  pool_maxsize: 10
engines:
  - name: fixture
    engine: json_engine
    shortcut: fx
    categories: general
    search_url: "http://127.0.0.1:{fixture_port}/results.json?q={{query}}"
    results_query: results
    url_query: url
    title_query: title
    content_query: content
    timeout: 5.0
    enable_http: true
locales:
  en: English
doi_resolvers:
  oadoi.org: "https://oadoi.org/"
default_doi_resolver: "oadoi.org"
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Searx:
    """A running searx: its URL and the queries its fixture engine received."""

    url: str
    queries: list[str] = field(default_factory=list)


def _fixture_handler(queries: list[str]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            query = parse_qs(urlparse(self.path).query).get("q", [""])[0]
            queries.append(query)
            results = [
                {
                    "url": f"https://example.org/{query.replace(' ', '-')}/{i}",
                    "title": f"Result {i} about {query}",
                    "content": f"Snippet {i} for {query}.",
                }
                for i in range(1, 6)
            ]
            body = json.dumps({"results": results}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    return Handler


def _wait_ready(url: str, proc: subprocess.Popen[bytes], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"searx exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/", timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("searx did not start in time")


@contextmanager
def running_searx(workdir: Path) -> Iterator[Searx]:
    """Start the fixture server and searx; stop both afterwards."""
    queries: list[str] = []
    fixture = ThreadingHTTPServer(("127.0.0.1", 0), _fixture_handler(queries))
    thread = threading.Thread(target=fixture.serve_forever, daemon=True)
    thread.start()
    port = free_port()
    settings = workdir / "searx-settings.yml"
    settings.write_text(SETTINGS.format(port=port, fixture_port=fixture.server_address[1]))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["SEARX_SETTINGS_PATH"] = str(settings)
    log = (workdir / "searx.log").open("wb")
    proc = subprocess.Popen(
        [SEARX_PYTHON, "-m", "searx.webapp"], env=env, cwd=workdir, stdout=log, stderr=log
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(url, proc)
        yield Searx(url=url, queries=queries)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:  # pragma: no cover - searx ignores SIGTERM
            proc.kill()
            proc.wait(10)
        log.close()
        fixture.shutdown()
        fixture.server_close()
