"""Read one string from a GGUF file's metadata without loading the rest.

``gguf.GGUFReader`` parses every tensor and every tokenizer entry into numpy objects: 7 s for the
491 MB default model on this kind of machine, on every server start. The metadata section is a
plain list of key/value pairs at the start of the file, so walking it and skipping what is not
wanted takes a fraction of a second. The tests check the result against ``gguf.GGUFReader``.

Layout (GGUF v2/v3, little-endian): ``b"GGUF"``, version u32, tensor count u64, key/value count
u64, then per pair: key (u64 length + UTF-8), value type u32, value. Strings are a u64 length and
bytes; arrays are an element type u32, a u64 count and the elements.

Every length and count comes from the file, so none is trusted: what it claims is checked against
the bytes left in the file before anything is read, allocated or skipped (a forged length of 2**63
is "cut short", not a 2**63-byte allocation), nested arrays are walked to a fixed depth, and only
a regular file is opened (a FIFO would block the open, and a device can be endless).
"""

from __future__ import annotations

import os
import stat
import struct
from pathlib import Path
from typing import BinaryIO

__all__ = ["GGUFFormatError", "open_regular", "read_gguf_string"]

_MAGIC = b"GGUF"
_STRING = 8
_ARRAY = 9
# Byte sizes of the fixed-size value types, by type code.
_FIXED_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
# The fewest bytes an item of a variable-size type takes: a string's length, an array's header.
_MIN_SIZES = {_STRING: _U64.size, _ARRAY: _U32.size + _U64.size}
# Arrays of arrays occur (one level in the tokenizer data of some models); deeper is not a model.
_MAX_ARRAY_DEPTH = 8
# Lengths up to this are read or skipped without first comparing them with the file's size.
_SMALL = 1 << 16


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
        GGUFFormatError: The file is not a regular file, not GGUF v2/v3, is cut short or
            malformed, or the key holds no UTF-8 string.
        OSError: The file cannot be read.
    """
    wanted = key.encode()
    with open_regular(path) as handle:
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
            try:
                return _read_bytes(handle).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise GGUFFormatError(f"{path}: {key} is not UTF-8 text ({exc})") from exc
    return None


def open_regular(path: Path) -> BinaryIO:
    """Open ``path`` for reading if it is a regular file, without blocking on a FIFO.

    Args:
        path: The file (a symlink to a regular file is followed).

    Returns:
        The file, open in binary mode.

    Raises:
        GGUFFormatError: ``path`` is a FIFO, a device, a directory or a socket.
        OSError: It cannot be opened.
    """
    # O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever; on a regular file
    # the flag changes nothing.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise GGUFFormatError(f"{path} is not a regular file")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _claim(handle: BinaryIO, size: int) -> None:
    """Refuse a length or count from the file that needs more bytes than the file has left."""
    # Small claims need no check (a short read or a seek past the end is caught by the next
    # read), and skipping the fstat for them keeps the walk over a 150k-token vocabulary fast.
    if size > _SMALL and size > os.fstat(handle.fileno()).st_size - handle.tell():
        raise GGUFFormatError("the GGUF metadata is cut short")


def _read(handle: BinaryIO, layout: struct.Struct) -> int:
    data = handle.read(layout.size)
    if len(data) != layout.size:
        raise GGUFFormatError("the GGUF metadata is cut short")
    value: int = layout.unpack(data)[0]
    return value


def _read_bytes(handle: BinaryIO) -> bytes:
    length = _read(handle, _U64)
    _claim(handle, length)
    data = handle.read(length)
    if len(data) != length:
        raise GGUFFormatError("the GGUF metadata is cut short")
    return data


def _skip(handle: BinaryIO, size: int) -> None:
    _claim(handle, size)
    handle.seek(size, os.SEEK_CUR)


def _skip_value(handle: BinaryIO, kind: int, depth: int = 0) -> None:
    if kind in _FIXED_SIZES:
        _skip(handle, _FIXED_SIZES[kind])
    elif kind == _STRING:
        _skip(handle, _read(handle, _U64))
    elif kind == _ARRAY:
        if depth == _MAX_ARRAY_DEPTH:
            raise GGUFFormatError(f"GGUF arrays nested more than {_MAX_ARRAY_DEPTH} deep")
        item_kind = _read(handle, _U32)
        count = _read(handle, _U64)
        if item_kind in _FIXED_SIZES:
            _skip(handle, _FIXED_SIZES[item_kind] * count)
            return
        if item_kind not in _MIN_SIZES:
            raise GGUFFormatError(f"unknown GGUF value type {item_kind}")
        # A count the rest of the file cannot hold is refused before the walk, not after it.
        _claim(handle, _MIN_SIZES[item_kind] * count)
        # Arrays of strings (the tokenizer's vocabulary) or nested arrays: walk each item.
        for _ in range(count):
            _skip_value(handle, item_kind, depth + 1)
    else:
        raise GGUFFormatError(f"unknown GGUF value type {kind}")
