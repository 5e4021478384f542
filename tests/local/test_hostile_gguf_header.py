"""read_gguf_string and the model path check against forged, cut and non-regular files."""

from __future__ import annotations

import os
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ai_agent.errors import LocalBackendError
from ai_agent.local import ensure_model, read_chat_template
from ai_agent.local.gguf_header import GGUFFormatError, read_gguf_string

_KEY = "tokenizer.chat_template"


def _header(pairs: int) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", 3, 0, pairs)


def _name(key: bytes) -> bytes:
    return struct.pack("<Q", len(key)) + key


def _gguf_with_template(template: bytes) -> bytes:
    return _header(1) + _name(_KEY.encode()) + struct.pack("<IQ", 8, len(template)) + template


@pytest.mark.parametrize(
    ("content", "message"),
    [
        # A key whose length is 2**63: not an allocation of that size.
        pytest.param(_header(1) + struct.pack("<Q", 2**63) + b"k", "cut short", id="key-2**63"),
        pytest.param(_header(1) + struct.pack("<Q", 2**40) + b"k", "cut short", id="key-2**40"),
        # A string value to skip of 2**64 - 1 bytes: not a seek that overflows.
        pytest.param(
            _header(1) + _name(b"a") + struct.pack("<IQ", 8, 2**64 - 1), "cut short", id="skip"
        ),
        # An array of 2**62 eight-byte numbers.
        pytest.param(
            _header(1) + _name(b"a") + struct.pack("<IIQ", 9, 10, 2**62), "cut short", id="array"
        ),
        # 2**60 strings in a 40-byte file: refused before walking them.
        pytest.param(
            _header(1) + _name(b"a") + struct.pack("<IIQ", 9, 8, 2**60), "cut short", id="strings"
        ),
        # Arrays of arrays 5000 deep: not a RecursionError.
        pytest.param(
            _header(1) + _name(b"a") + struct.pack("<I", 9) + struct.pack("<IQ", 9, 1) * 5000,
            "nested more than",
            id="nested",
        ),
        pytest.param(
            _header(1) + _name(b"a") + struct.pack("<IIQ", 9, 77, 1), "value type 77", id="item"
        ),
        pytest.param(_gguf_with_template(b"\xff\xfe{{ x }}"), "not UTF-8 text", id="not-utf8"),
    ],
)
def test_forged_metadata_is_a_format_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "forged.gguf"
    path.write_bytes(content)

    with pytest.raises(GGUFFormatError, match=message):
        read_gguf_string(path, _KEY)
    # What the server start reports: a LocalBackendError that says what to do.
    with pytest.raises(LocalBackendError, match="point AI_AGENT_MODEL_PATH at a GGUF model"):
        read_chat_template(path)


def test_a_large_real_template_is_still_read(tmp_path: Path) -> None:
    # The size checks apply to what the file cannot hold, not to big values it does hold.
    template = b"{{ messages }}" * 20_000
    path = tmp_path / "big.gguf"
    path.write_bytes(_gguf_with_template(template))

    assert read_gguf_string(path, _KEY) == template.decode()


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    """A FIFO with a writer that sends a valid GGUF file once someone opens it for reading."""
    path = tmp_path / "model.gguf"
    os.mkfifo(path)

    def write() -> None:
        try:
            with path.open("wb") as pipe:
                pipe.write(_gguf_with_template(b"{{ messages }}"))
        except BrokenPipeError:
            pass  # the reader looked and let go, as it should

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    yield path
    # Release a writer still waiting for a reader, then wait for it to finish.
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    writer.join()
    os.close(reader)


def test_a_fifo_is_not_read_as_a_model(fifo: Path) -> None:
    # Opening a FIFO blocks until a writer appears (for good, if none does), and its data is
    # not the file llama.cpp will map: it is refused without waiting.
    with pytest.raises(GGUFFormatError, match="not a regular file"):
        read_gguf_string(fifo, _KEY)


def test_a_fifo_as_the_model_path_override(
    fifo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AI_AGENT_MODEL_PATH", str(fifo))

    with pytest.raises(LocalBackendError, match="is not a regular file"):
        ensure_model(tmp_path / "cache")


@pytest.mark.parametrize("make", ["directory", "loop", "device"])
def test_other_non_files_are_clear_errors(tmp_path: Path, make: str) -> None:
    path = tmp_path / "model.gguf"
    if make == "directory":
        path.mkdir()
    elif make == "loop":
        path.symlink_to(path)
    else:
        path = Path("/dev/zero")

    with pytest.raises(LocalBackendError, match="cannot read the chat template"):
        read_chat_template(path)
