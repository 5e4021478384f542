"""The one serializer every checkpoint value goes through: strict msgpack."""

from __future__ import annotations

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

__all__ = ["strict_serializer"]


def strict_serializer() -> JsonPlusSerializer:
    """A serializer that only loads LangGraph's allowlisted safe types (strict msgpack)."""
    return JsonPlusSerializer(allowed_msgpack_modules=None)
