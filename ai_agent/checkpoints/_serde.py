"""The one serializer every checkpoint value goes through: strict msgpack."""

from __future__ import annotations

from collections.abc import Collection

from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

__all__ = ["strict_serializer", "widened"]


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
