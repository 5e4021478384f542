"""The one serializer every checkpoint value goes through: strict msgpack.

A pipeline that keeps values of its own types in the state registers them
(`StateType`: the type, to data, from data); `TypedSerializer` then stores them as data through
the strict serializer, which still refuses every other type.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from ai_agent.errors import StoreError

__all__ = ["MARKER", "StateType", "TypedSerializer", "strict_serializer", "widened"]


def strict_serializer() -> JsonPlusSerializer:
    """A serializer that only loads LangGraph's allowlisted safe types (strict msgpack)."""
    return JsonPlusSerializer(allowed_msgpack_modules=None)


def widened(serde: SerializerProtocol, extra: Collection[tuple[str, ...]]) -> SerializerProtocol:
    """``serde`` also loading the ``(module, name)`` types of ``extra`` (itself if it can't).

    What LangGraph's own savers do for ``with_allowlist``: a JSON-plus serializer (encrypted
    or not) gets the types added; any other serializer has no allowlist to widen.
    """
    if isinstance(serde, JsonPlusSerializer):
        return serde.with_msgpack_allowlist(extra)
    if isinstance(serde, EncryptedSerializer) and isinstance(serde.serde, JsonPlusSerializer):
        inner = serde.serde.with_msgpack_allowlist(extra)
        return serde if inner is serde.serde else EncryptedSerializer(serde.cipher, inner)
    return serde


@dataclass(frozen=True, slots=True)
class StateType:
    """A user's type the checkpoints may hold: how it becomes data, and data it again."""

    type_: type
    to_data: Callable[[Any], Any]
    from_data: Callable[[Any], Any]

    @property
    def name(self) -> str:
        """The name its values are stored under: its module and qualified name."""
        return f"{self.type_.__module__}.{self.type_.__qualname__}"


# A stored value of a user's type is this one-key dict around its data; nothing the engine
# stores has a key of this name (state is JSON data whose keys the engine or the user chose).
MARKER = "__ai_agent_type__"


class TypedSerializer:
    """``inner`` (the strict serializer) storing the user's registered types as data.

    A value of a registered type is stored as ``{MARKER: name, "data": to_data(value)}`` and
    loaded back through ``from_data``; every other value goes to ``inner`` as it is, so the
    strict allowlist still decides what else loads. A stored value whose type is not
    registered here is a `StoreError` that says which type to register.

    Args:
        inner: The serializer that stores the data (default: `strict_serializer`).
        types: The registered types.
    """

    def __init__(self, inner: SerializerProtocol, types: Iterable[StateType]) -> None:
        self.inner = inner
        self.types = {t.name: t for t in types}
        self._by_type = {t.type_: t for t in self.types.values()}

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        """The value stored: registered types as their data, then ``inner``'s encoding."""
        return self.inner.dumps_typed(self._encode(obj) if self._by_type else obj)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        """The stored value loaded by ``inner``, registered types made again."""
        return self._decode(self.inner.loads_typed(data))

    def _encode(self, value: Any) -> Any:
        codec = self._by_type.get(type(value))
        if codec is not None:
            return {MARKER: codec.name, "data": self._encode(codec.to_data(value))}
        if isinstance(value, dict):
            return {k: self._encode(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._encode(v) for v in value]
        if isinstance(value, tuple) and not hasattr(value, "_fields"):
            return tuple(self._encode(v) for v in value)
        return value

    def _decode(self, value: Any) -> Any:
        if isinstance(value, dict):
            if MARKER in value and len(value) == 2 and "data" in value:
                return self._made(value[MARKER], value["data"])
            return {k: self._decode(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._decode(v) for v in value]
        if isinstance(value, tuple) and not hasattr(value, "_fields"):
            return tuple(self._decode(v) for v in value)
        return value

    def _made(self, name: Any, data: Any) -> Any:
        codec = self.types.get(name) if isinstance(name, str) else None
        if codec is None:
            raise StoreError(
                f"a checkpoint holds a value of type {name!r}, which no serializer of this "
                "pipeline loads: register it with PipelineBuilder.serializer(type, to_data, "
                "from_data) in every process that reads the run"
            )
        return codec.from_data(self._decode(data))
