"""LangGraph's PostgreSQL checkpoint rows read back: checked, a damaged one a CorruptRunError.

Anyone who can write to the database can edit a row: a checkpoint column that is not an object,
metadata that is a list, a step that is text, an inline value that is a whole object, a blob or
a write's type that is NULL, JSON nested deeper than Python's parser goes. LangGraph's saver
reads each as it comes, and the run fails far away (a TypeError in a page, "internal error"),
or reads on with another meaning. Here a row is checked for the shape LangGraph's saver writes
before it is read, and what still fails to read (a blob naming a type outside the allowlist, a
serialization type no serializer writes) becomes the same CorruptRunError the SQLite saver
raises (``ai_agent.checkpoints._reads.readable``): it names the thread and the checkpoint, and
says what can still be done. Nothing of the row is imported or run (`StrictSerializer`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import psycopg

from ai_agent.checkpoints._reads import UNREADABLE
from ai_agent.errors import CorruptRunError, StoreError

__all__ = ["checked_row", "reading"]

_INLINE = (str, int, float, bool)
"""What LangGraph's saver keeps inline in a checkpoint row (the rest are blobs; None too)."""

# What reading a damaged row raises (`UNREADABLE`, as on SQLite), and a statement the server
# cannot run on the row (DataError: ``jsonb_each_text`` on versions that are a list).
_UNREADABLE: tuple[type[BaseException], ...] = (psycopg.DataError, *UNREADABLE)


def checked_row(row: Mapping[str, Any]) -> None:
    """Raise StoreError if a checkpoint row has not the shape LangGraph's saver writes.

    What the engine and LangGraph read without looking (the checkpoint's keys, the metadata's
    step), so that a row edited to another shape fails here, named, not in a page later.
    """
    checkpoint, metadata = row["checkpoint"], row["metadata"]
    _must(checkpoint, dict, "its checkpoint column")
    if type(checkpoint.get("v")) is not int:
        raise StoreError("its checkpoint has no format version ('v' is not a number)")
    _must(checkpoint.get("id"), str, "its checkpoint's id")
    for key in ("channel_values", "channel_versions", "versions_seen"):
        _must(checkpoint.get(key), dict, f"its checkpoint's {key}")
    for node, seen in checkpoint["versions_seen"].items():
        _must(seen, dict, f"the versions node {node!r} has seen")
    for channel, version in checkpoint["channel_versions"].items():
        if type(version) not in (str, int, float):
            raise StoreError(f"the version of channel {channel!r} is {_kind(version)}")
    for channel, value in checkpoint["channel_values"].items():
        # Only a primitive is stored inline (True also marks a delta snapshot's blob): an object
        # there would be read as the channel's value, a meaning the run never had.
        if value is not None and not isinstance(value, _INLINE):
            raise StoreError(f"the inline value of channel {channel!r} is {_kind(value)}")
    _must(metadata, dict, "its metadata")
    for key, shape in (("step", int), ("source", str), ("parents", dict)):
        if key in metadata:
            _must(metadata[key], shape, f"its metadata's {key}")


def _must(value: Any, shape: type, what: str) -> None:
    if type(value) is not shape:  # bool is not the step's int
        raise StoreError(f"{what} is {_kind(value)}, not {_NAMES[shape]}")


_NAMES = {dict: "an object", list: "a list", str: "text", int: "a whole number"}


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return _NAMES.get(type(value), type(value).__name__)


@contextmanager
def reading(thread_id: str | None, checkpoint_id: str | None = None) -> Iterator[None]:
    """Turn a row of ``thread_id`` that cannot be read back into a CorruptRunError naming it.

    Around LangGraph's own reads, where a row fails before its checkpoint is known (JSON nested
    too deeply fails as the row is fetched; a checkpoint that is not an object, as LangGraph
    looks at its version): the error names the thread, and the checkpoint asked for if any.
    """
    try:
        yield
    except CorruptRunError:
        raise
    except _UNREADABLE as exc:
        which = f"checkpoint {checkpoint_id} " if checkpoint_id is not None else "a checkpoint "
        whose = f"of thread {thread_id} " if thread_id is not None else ""
        detail = str(exc)[:200] or type(exc).__name__
        raise CorruptRunError(
            f"{which}{whose}cannot be read back ({type(exc).__name__}: {detail}): the database "
            "was damaged or changed outside ai-agent. Other runs are not affected; repair the "
            "row, or run the task again as a new run.",
            thread_id=thread_id or "",
        ) from exc
