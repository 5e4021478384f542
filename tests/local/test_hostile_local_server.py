"""LocalModelServer against a hostile machine and hostile arguments, without the real model.

These start the real child process (and llama.cpp, which fails on the broken model), so they
need the local extra; they stay fast because the model is refused at once.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ai_agent.errors import LocalBackendError
from ai_agent.local import LocalModelServer, server

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None,
    reason="the local extra is not installed: uv sync --extra local",
)


@pytest.fixture
def broken_model(tmp_path: Path) -> Path:
    """A file llama.cpp rejects at once: the GGUF magic followed by garbage."""
    path = tmp_path / "broken.gguf"
    path.write_bytes(b"GGUF" + bytes(range(256)) * 8)
    return path


class _Impostor:
    """Another program listening on 127.0.0.1 that answers every GET with 200 (and logs it)."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        impostor = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                impostor.requests.append(self.path)
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, format: str, *args: object) -> None:
                """Keep the test output quiet."""

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


@pytest.fixture
def impostor() -> Iterator[_Impostor]:
    squatter = _Impostor()
    yield squatter
    squatter.close()


async def test_a_server_already_on_the_port_is_not_taken_for_ours(
    broken_model: Path, impostor: _Impostor, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The port is found free, then another program takes it before the child binds it. That
    # program's /health answers 200; it must not pass for our server (the caller would send it
    # the key and every prompt).
    monkeypatch.setattr(server, "_free_port", lambda: impostor.port)
    local = LocalModelServer(broken_model, chat_template="{{ messages }}", n_threads=1)

    with pytest.raises(LocalBackendError, match="could not bind a port"):
        await local.start()

    assert local.pid is None
    assert impostor.requests == []


async def test_a_model_file_whose_name_starts_with_a_dash(tmp_path: Path) -> None:
    # The file's stem is the default model id, so both reach the child's command line as
    # values that look like options.
    model = tmp_path / "-broken.gguf"
    model.write_bytes(b"GGUF" + bytes(range(256)) * 8)
    local = LocalModelServer(Path("-broken.gguf"), chat_template="{{ messages }}", n_threads=1)
    assert local.model_id == "-broken"

    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path)
        with pytest.raises(LocalBackendError) as caught:
            await local.start()

    # llama.cpp got the file and refused its contents: the arguments arrived whole.
    assert "failed to load model" in str(caught.value)
    assert "expected one argument" not in str(caught.value)


async def test_a_chat_template_that_is_not_text(broken_model: Path) -> None:
    local = LocalModelServer(broken_model, chat_template="{{ messages }}\ud800")

    with pytest.raises(LocalBackendError, match="chat_template"):
        await local.start()

    assert local.pid is None
