"""LocalModelServer failures that need no real model, and the package's public surface."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import ai_agent.local
from ai_agent.errors import LocalBackendError
from ai_agent.local import LocalModelServer, server
from ai_agent.local import serve as serve_module
from ai_agent.local.__main__ import main


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point tempfile at a folder of this test's own, to check nothing is left in it."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture
def broken_model(tmp_path: Path) -> Path:
    """A file llama.cpp rejects at once: the GGUF magic followed by garbage."""
    path = tmp_path / "broken.gguf"
    path.write_bytes(b"GGUF" + bytes(range(256)) * 8)
    return path


@pytest.fixture
def busy_port() -> Iterator[int]:
    # Bound but not listening: llama.cpp cannot bind it, and a health probe is refused at once.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        yield taken.getsockname()[1]


def test_public_api_is_pinned() -> None:
    assert ai_agent.local.__all__ == [
        "QWEN25_CODER_05B",
        "LocalModelServer",
        "ModelSpec",
        "WheelPart",
        "adapt_chat_template",
        "default_cache_dir",
        "ensure_model",
        "read_chat_template",
        "server_chat_template",
    ]
    assert ai_agent.local.QWEN25_CODER_05B.model_id == serve_module.DEFAULT_MODEL_ID


def test_importing_the_package_loads_no_native_code() -> None:
    probe = "import sys, ai_agent.local; print('xllamacpp' in sys.modules, 'gguf' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["False", "False"]


def test_not_running_has_no_base_url() -> None:
    local = LocalModelServer(Path("model.gguf"))

    assert local.model_id == "model"
    assert local.pid is None
    assert len(local.api_key) >= 32
    with pytest.raises(LocalBackendError, match="not running; call start"):
        _ = local.base_url


async def test_missing_xllamacpp_gives_the_install_hint(
    monkeypatch: pytest.MonkeyPatch, broken_model: Path
) -> None:
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # what an absent package looks like

    with pytest.raises(LocalBackendError, match=r"uv sync --extra local"):
        await LocalModelServer(broken_model, chat_template="x").start()


def test_child_without_xllamacpp_exits_with_the_hint(
    monkeypatch: pytest.MonkeyPatch, broken_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "xllamacpp", None)

    code = main(["serve", "--model", str(broken_model), "--port", "9"])

    assert code == serve_module.EXIT_NO_XLLAMACPP
    assert "pip install 'ai-agent[local]'" in capsys.readouterr().err


async def test_server_that_does_not_come_up(broken_model: Path, private_tmp: Path) -> None:
    local = LocalModelServer(broken_model, chat_template="{{ messages }}", n_threads=1)

    with pytest.raises(LocalBackendError) as caught:
        await local.start()

    message = str(caught.value)
    assert message.startswith("the local model server exited with code 4 before it was ready.")
    assert "failed to load model" in message  # llama.cpp's own log line, quoted
    assert local.pid is None
    assert _entries(private_tmp) == []


async def test_port_taken_each_time(
    broken_model: Path, busy_port: int, monkeypatch: pytest.MonkeyPatch, private_tmp: Path
) -> None:
    monkeypatch.setattr(server, "_free_port", lambda: busy_port)

    with pytest.raises(LocalBackendError, match=r"could not bind a port on 127\.0\.0\.1 after 3"):
        await LocalModelServer(broken_model, chat_template="{{ messages }}").start()

    assert _entries(private_tmp) == []


async def test_port_taken_once_is_retried(
    broken_model: Path, busy_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    ports = iter([busy_port])
    monkeypatch.setattr(server, "_free_port", lambda: next(ports, 0) or _any_free_port())

    # The second port binds, so the start gets as far as loading the (broken) model.
    with pytest.raises(LocalBackendError, match="failed to load model"):
        await LocalModelServer(broken_model, chat_template="{{ messages }}").start()


def _entries(folder: Path) -> list[Path]:
    return list(folder.iterdir())


def _any_free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def test_stop_without_start_is_harmless() -> None:
    local = LocalModelServer(Path("model.gguf"))
    await local.stop()
    await local.stop()
    assert local.pid is None


def test_fetch_command_prints_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "mine.gguf"
    model.write_bytes(b"GGUF" + bytes(16))
    monkeypatch.setenv("AI_AGENT_MODEL_PATH", str(model))

    assert main(["fetch"]) == 0
    assert capsys.readouterr().out == f"{model}\n"


def test_fetch_command_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AI_AGENT_MODEL_PATH", str(tmp_path / "missing.gguf"))

    assert main(["fetch", "--cache-dir", str(tmp_path)]) == 1
    assert capsys.readouterr().err.startswith("error: AI_AGENT_MODEL_PATH=")
