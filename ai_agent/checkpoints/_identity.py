"""Whether two lists start with the very same objects, unchanged, at the speed of C loops.

A list in CPython is an array of object pointers, so "the first n items of a are the first n
items of b" is one ``memcmp`` of n pointers: a few microseconds for thousands of items, where
comparing item by item in Python costs about 25 ns per item, which made a step's checkpoint cost
grow with the length of the run. The pointer arrays are read with ctypes at the offset CPython's
list object has kept since 3.0 (``PyObject_VAR_HEAD`` then ``ob_item``); a probe checks it on
first use and, on any other interpreter or layout, the item-by-item comparison is used instead.

The very same objects may still have been edited in place (a node that sets a field of a message
it was given). So the saver also keeps a `snapshot` of what it stored: copies of the containers
(dicts, lists, tuples) around the very same immutable leaves, so that comparing the live items
with it (`unchanged`) runs in C and mostly compares pointers, while an edited item differs.

An item that is an object (a LangChain message, a pydantic model, a dataclass) is snapshotted as
its *fields*: a copy of its ``__dict__`` (and of pydantic's ``__pydantic_extra__``, where extra
fields live), compared with the live object's own ``__dict__``. That comparison is a C dict
comparison; comparing the objects with ``==`` would run pydantic's ``__eq__`` in Python, about
four times slower per item, which made the check's cost grow visibly with the run. Only the
items themselves are taken apart this way: an object nested inside an item is copied whole and
compared with ``==``. Objects without a ``__dict__`` (``__slots__``) are copied whole too.
"""

from __future__ import annotations

import copy
import operator
from collections.abc import Callable
from typing import Any

__all__ = [
    "fields_of",
    "same_prefix",
    "snapshot",
    "snapshot_item",
    "unchanged",
]

_ATOMS = frozenset({str, int, float, bool, type(None), bytes})

_fast: Callable[[list[Any], list[Any], int], bool] | None = None
_checked = False


def _slow(a: list[Any], b: list[Any], n: int) -> bool:
    return all(map(operator.is_, a[:n], b[:n])) if n else True


def _pointer_compare() -> Callable[[list[Any], list[Any], int], bool] | None:
    import ctypes
    import struct
    import sys

    if sys.implementation.name != "cpython":  # pragma: no cover - other interpreters
        return None
    size = ctypes.sizeof(ctypes.c_void_p)
    offset = 3 * size  # ob_refcnt, ob_type, ob_size, then ob_item

    def compare(a: list[Any], b: list[Any], n: int) -> bool:
        if n == 0:
            return True
        pa = ctypes.c_void_p.from_address(id(a) + offset).value
        pb = ctypes.c_void_p.from_address(id(b) + offset).value
        if pa is None or pb is None:  # pragma: no cover - n items exist, so both arrays do
            return False
        return ctypes.string_at(pa, n * size) == ctypes.string_at(pb, n * size)

    first, second = object(), object()
    probe = [first, second]
    expected = struct.pack("PP", id(first), id(second))
    try:
        address = ctypes.c_void_p.from_address(id(probe) + offset).value
        if address is None or ctypes.string_at(address, 2 * size) != expected:
            return None  # pragma: no cover - a list layout other than CPython's
        if not compare(probe, [first, second, 3], 2) or compare(probe, [first, 3], 2):
            return None  # pragma: no cover - idem
    except (ValueError, OSError):  # pragma: no cover - a layout we cannot read
        return None
    return compare


def same_prefix(a: list[Any], b: list[Any], n: int) -> bool:
    """True when ``a[:n]`` and ``b[:n]`` are the same objects (both lists hold n or more)."""
    global _fast, _checked  # computed once, on first use: a probe, not configuration
    if not _checked:
        _fast, _checked = _pointer_compare(), True
    if _fast is not None:
        return _fast(a, b, n)
    return _slow(a, b, n)


def _copy(value: Any) -> Any:
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is dict:
        return {key: _copy(item) for key, item in value.items()}
    if kind is list:
        return [_copy(item) for item in value]
    if kind is tuple:
        return tuple(_copy(item) for item in value)
    try:
        return copy.deepcopy(value)
    except Exception:  # an object that refuses copying: only replacing it is seen
        return value


def _fields(item: Any) -> Any:
    """What `unchanged` compares of a live item: an object's fields, anything else as it is."""
    if type(item) in _ATOMS:
        return item
    fields = getattr(item, "__dict__", None)
    if fields is None or type(fields) is not dict or isinstance(item, type):
        return item
    extra = getattr(item, "__pydantic_extra__", None)
    return (fields, extra) if extra else fields


def _snapshot_item(item: Any) -> Any:
    """A copy of what `_fields` gives for ``item``, out of reach of later edits in place."""
    live = _fields(item)
    if live is item:
        return _copy(item)
    if type(live) is tuple:
        return (_copy(live[0]), _copy(live[1]))
    return _copy(live)


def snapshot_item(item: Any) -> Any:
    """A copy of one item that later edits of it in place do not reach (see the module doc)."""
    return _snapshot_item(item)


def fields_of(item: Any) -> Any:
    """What a `snapshot_item` of ``item`` is compared with when it is not ``item`` itself.

    An item is unchanged when its snapshot equals it (plain data) or its fields (an object).
    """
    return _fields(item)


def snapshot(items: list[Any]) -> list[Any]:
    """Copies of ``items`` that later edits of them in place do not reach (see the module doc)."""
    return [_snapshot_item(item) for item in items]


def unchanged(shadow: list[Any], value: list[Any], n: int) -> bool:
    """True when ``value[:n]`` still equals the snapshot ``shadow`` of its first ``n`` items.

    Only meaningful for the very objects the snapshot was taken of (`same_prefix` first): an
    object's snapshot is its fields, which only the same object's fields can equal.
    """
    if len(shadow) != n:
        return False
    head = value[:n]
    # Items that are plain data (dicts, lists, atoms) are their own snapshot's shape: one C
    # comparison answers. An object's snapshot is its fields, which the object itself never
    # equals, so a list holding objects takes the second comparison (a Python call per item).
    return shadow == head or shadow == list(map(_fields, head))
