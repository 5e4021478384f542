"""Stored checkpoint values loaded as plain data, without LangGraph's serializer.

LangGraph's JSON-plus serializer imports LangChain (its reviver of LangChain objects), which a
command that only reads a run must not load. The engine's state is plain JSON data (see
`ai_agent.state`), stored as msgpack; the one LangGraph type its checkpoints hold is the
``Interrupt`` a paused gate writes. `PlainLoader` loads exactly that: msgpack data as it is,
an interrupt as a `StoredInterrupt`. Anything else (a LangChain message, a pydantic model, a
date, LangGraph's delta snapshots, a JSON or pickle value) raises `NotPlain`, and the reader's
caller reads that run through LangGraph instead, so no value ever loads differently here.

A LangChain message, should one be stored (a graph of the user's), is msgpack extension 5
(pydantic v2) around ``(module, class name, model_dump(), "model_validate_json")``; its plain
form would be the dump (``type``, ``content``, ``tool_calls``...), which is not what LangGraph
hands back (the message object), hence `NotPlain` rather than a look-alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ormsgpack

__all__ = ["NotPlain", "PlainLoader", "StoredInterrupt"]

# LangGraph's msgpack extension codes (``langgraph.checkpoint.serde.jsonplus``).
_CONSTRUCTOR_KW_ARGS = 2
_INTERRUPT = ("langgraph.types", "Interrupt")


class NotPlain(Exception):  # noqa: N818 - a signal to read through LangGraph, not an error
    """A stored value is not plain data: read this run through LangGraph's serializer."""


@dataclass(frozen=True, slots=True)
class StoredInterrupt:
    """LangGraph's ``Interrupt`` as stored: what a paused node asked, and its id."""

    value: Any
    id: str
    response_schema: Any = None


def _plain(blob: bytes) -> Any:
    """Msgpack data as it is, interrupts as `StoredInterrupt`; `NotPlain` for anything else.

    ormsgpack turns an exception raised in an extension hook into a ValueError of its own, so
    the hook notes what it could not load and the check comes after.
    """
    refused: list[int] = []

    def ext(code: int, data: bytes) -> Any:
        if code == _CONSTRUCTOR_KW_ARGS:
            inner = ormsgpack.unpackb(data, ext_hook=ext, option=ormsgpack.OPT_NON_STR_KEYS)
            if (
                isinstance(inner, list | tuple)
                and tuple(inner[:2]) == _INTERRUPT
                and isinstance(inner[2], dict)
                and {"value", "id"} <= set(inner[2]) <= {"value", "id", "response_schema"}
            ):
                return StoredInterrupt(**inner[2])
        refused.append(code)
        return None

    value = ormsgpack.unpackb(blob, ext_hook=ext, option=ormsgpack.OPT_NON_STR_KEYS)
    if refused:
        raise NotPlain(f"msgpack extension {refused[0]}")
    return value


class PlainLoader:
    """``loads_typed`` of the strict serializer, for values that are plain data (see above)."""

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        """The stored value; `NotPlain` when it is not plain data."""
        type_, blob = data
        if type_ == "null":
            return None
        if type_ == "msgpack":
            return _plain(blob)
        if type_ == "bytes":
            return blob
        raise NotPlain(f"a value stored as {type_!r}")

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        """Never called: the light reader does not write."""
        raise NotImplementedError("the plain loader only reads")
