"""Read one string from a GGUF file's metadata without loading the rest.

``gguf.GGUFReader`` parses every tensor and every tokenizer entry into numpy objects: 7 s for the
491 MB default model on this kind of machine, on every server start. The metadata section is a
plain list of key/value pairs at the start of the file, so walking it and skipping what is not
wanted takes a fraction of a second. The tests check the result against ``gguf.GGUFReader``.

Layout (GGUF v2/v3, little-endian): ``b"GGUF"``, version u32, tensor count u64, key/value count
u64, then per pair: key (u64 length + UTF-8), value type u32, value. Strings are a u64 length and
bytes; arrays are an element type u32, a u64 count and the elements.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

__all__ = ["GGUFFormatError", "read_gguf_string"]

_MAGIC = b"GGUF"
_STRING = 8
_ARRAY = 9
# Byte sizes of the fixed-size value types, by type code.
_FIXED_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


class GGUFFormatError(ValueError):
    """The file is not a GGUF file this reader understands."""


def read_gguf_string(path: Path, key: str) -> str | None:
    """Return the string stored under ``key`` in a GGUF file's metadata.

    Args:
        path: The GGUF file.
        key: The metadata key, e.g. ``tokenizer.chat_template``.

    Returns:
        The value, or None when the file has no such key.

    Raises:
        GGUFFormatError: The file is not GGUF v2/v3, is cut short, or the key holds no string.
        OSError: The file cannot be read.
    """
    wanted = key.encode()
    with path.open("rb") as handle:
        if handle.read(4) != _MAGIC:
            raise GGUFFormatError(f"{path} does not start with b'GGUF'")
        version = _read(handle, _U32)
        if version not in (2, 3):
            raise GGUFFormatError(f"{path} is GGUF version {version}; only 2 and 3 are read")
        _read(handle, _U64)  # tensor count: not needed
        for _ in range(_read(handle, _U64)):
            name = _read_bytes(handle)
            kind = _read(handle, _U32)
            if name != wanted:
                _skip_value(handle, kind)
                continue
            if kind != _STRING:
                raise GGUFFormatError(f"{path}: {key} has value type {kind}, not a string")
            return _read_bytes(handle).decode("utf-8")
    return None


def _read(handle: BinaryIO, layout: struct.Struct) -> int:
    data = handle.read(layout.size)
    if len(data) != layout.size:
        raise GGUFFormatError("the GGUF metadata is cut short")
    value: int = layout.unpack(data)[0]
    return value


def _read_bytes(handle: BinaryIO) -> bytes:
    length = _read(handle, _U64)
    data = handle.read(length)
    if len(data) != length:
        raise GGUFFormatError("the GGUF metadata is cut short")
    return data


def _skip_value(handle: BinaryIO, kind: int) -> None:
    if kind in _FIXED_SIZES:
        handle.seek(_FIXED_SIZES[kind], 1)
    elif kind == _STRING:
        handle.seek(_read(handle, _U64), 1)
    elif kind == _ARRAY:
        item_kind = _read(handle, _U32)
        count = _read(handle, _U64)
        if item_kind in _FIXED_SIZES:
            handle.seek(_FIXED_SIZES[item_kind] * count, 1)
        else:
            # Arrays of strings (the tokenizer's vocabulary) or nested arrays: walk each item.
            for _ in range(count):
                _skip_value(handle, item_kind)
    else:
        raise GGUFFormatError(f"unknown GGUF value type {kind}")
