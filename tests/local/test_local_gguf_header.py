"""read_gguf_string against files written by the official ``gguf`` writer."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from ai_agent.local.gguf_header import GGUFFormatError, read_gguf_string

# The official writer and reader (the local extra) are the reference for the format.
gguf = pytest.importorskip("gguf")
np = pytest.importorskip("numpy")


def _write(path: Path, template: str | None = "{{ messages }}") -> Path:
    writer = gguf.GGUFWriter(path, "qwen2")
    # Values of every kind before the wanted key, so the reader must skip each correctly.
    writer.add_uint8("test.u8", 1)
    writer.add_int16("test.i16", -2)
    writer.add_uint32("test.u32", 3)
    writer.add_float32("test.f32", 0.5)
    writer.add_bool("test.bool", True)
    writer.add_uint64("test.u64", 2**40)
    writer.add_float64("test.f64", 0.25)
    writer.add_string("test.string", "skip me")
    writer.add_array("test.ints", [1, 2, 3])
    writer.add_token_list(["<|im_start|>", "hello", "wörld"])
    writer.add_array("test.nested", [["a", "b"], ["c"]])
    if template is not None:
        writer.add_chat_template(template)
    writer.add_uint32("test.after", 7)
    writer.add_tensor("weight", np.zeros((2, 2), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_reads_the_chat_template(tmp_path: Path) -> None:
    path = _write(tmp_path / "m.gguf", "{% for m in messages %}{{ m.content }}{% endfor %}\n")

    assert read_gguf_string(path, "tokenizer.chat_template") == (
        "{% for m in messages %}{{ m.content }}{% endfor %}\n"
    )
    assert read_gguf_string(path, "test.string") == "skip me"
    reader = gguf.GGUFReader(path)
    assert read_gguf_string(path, "tokenizer.chat_template") == (
        reader.fields["tokenizer.chat_template"].contents()
    )


def test_missing_key_is_none(tmp_path: Path) -> None:
    assert read_gguf_string(_write(tmp_path / "m.gguf", None), "tokenizer.chat_template") is None


def test_key_of_another_type_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(GGUFFormatError, match="value type 4, not a string"):
        read_gguf_string(_write(tmp_path / "m.gguf"), "test.after")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"PK\x03\x04", "does not start with b'GGUF'"),
        (b"GGUF" + struct.pack("<I", 1), "version 1"),
        (b"GGUF" + struct.pack("<I", 3) + b"\0\0", "cut short"),
        (
            b"GGUF" + struct.pack("<IQQQ", 3, 0, 1, 1) + b"k" + struct.pack("<I", 99),
            "unknown GGUF value type 99",
        ),
        (
            b"GGUF" + struct.pack("<IQQQ", 3, 0, 1, 30) + b"tokenizer.chat_template",
            "cut short",
        ),
    ],
)
def test_malformed_files(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.gguf"
    path.write_bytes(content)

    with pytest.raises(GGUFFormatError, match=message):
        read_gguf_string(path, "tokenizer.chat_template")
