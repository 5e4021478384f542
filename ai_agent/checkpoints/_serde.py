"""The one serializer every checkpoint value goes through: strict msgpack.

A pipeline that keeps values of its own types in the state registers them
(`StateType`: the type, to data, from data); `TypedSerializer` then stores them as data through
the strict serializer, which still refuses every other type.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any

import ormsgpack
from langgraph.checkpoint.serde import _msgpack as lg_msgpack
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer, _send_from_args
from langgraph.checkpoint.serde.types import _DeltaSnapshot

from ai_agent.errors import StoreError

__all__ = [
    "ENGINE_TYPES",
    "MARKER",
    "StateType",
    "StrictSerializer",
    "TypedSerializer",
    "strict_serializer",
    "widened",
]


# The engine's own enums, which its state may hold (an issue's kind from a toolset, a tool's
# category, a generated tool's status): each loads as its member, or as its text when the value
# is not one (as LangGraph builds a type that refuses its data).
ENGINE_TYPES = (
    ("ai_agent.issues", "IssueKind"),
    ("ai_agent.tools.spec", "ToolCategory"),
    ("ai_agent.tools.maker.records", "ToolStatus"),
)


def strict_serializer() -> JsonPlusSerializer:
    """A serializer that only loads LangGraph's allowlisted safe types and `ENGINE_TYPES`.

    A stored value that names any other type, or an extension no serializer writes, is a
    `StoreError` (`StrictSerializer`), not its raw data.
    """
    return StrictSerializer(allowed_msgpack_modules=ENGINE_TYPES)


# LangGraph's msgpack extension codes (``langgraph.checkpoint.serde.jsonplus``).
_ONE_ARG, _POS_ARGS, _KW_ARGS, _METHOD, _PYDANTIC_V1, _PYDANTIC_V2, _NUMPY, _DELTA = range(8)


class StrictSerializer(JsonPlusSerializer):
    """LangGraph's JSON-plus serializer whose refusals are errors, never a changed value.

    LangGraph's strict mode loads a value of a type outside its allowlist (``os.system``, a
    module of the attacker's) as the arguments it was stored with, and an unknown extension as
    None: a row edited by hand would be read as other data, with no sign. Here each is a
    `StoreError` naming the type, as is a value stored as JSON (which no saver of ai-agent
    writes, and which LangChain's reviver would turn into its objects). Nothing outside the
    allowlist is imported (numpy aside: LangGraph reads an array without one, and one it cannot
    read, which it would load as None, is refused too); what the allowlist admits is built
    exactly as LangGraph builds it.
    """

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        """The stored value; `StoreError` for a type this serializer refuses (see above)."""
        type_, blob = data
        if type_ == "msgpack":
            # Always with the hook, which costs nothing where no extension is: a scan for an
            # extension's first byte first ("plain data, no hook") took twice the unpacking
            # (6.8 ms of a 16 ms read of an 800-cycle pipeline's 2.6 MB of values).
            refused: list[str] = []
            value = ormsgpack.unpackb(blob, ext_hook=self._hook(refused), option=_KEYS)
            if refused:
                raise StoreError(
                    f"a stored value names {refused[0]}, which this serializer does not load "
                    "(a type your graph stores goes in the saver's allowlist)"
                )
            return value
        if type_ == "json":
            raise StoreError("a stored value is JSON, which ai-agent never writes")
        return super().loads_typed(data)

    def _loadable(self) -> frozenset[tuple[str, ...]] | None:
        """The (module, name) and (module, name, method) keys that load (None: all of them)."""
        allowed = self._allowed_msgpack_modules
        known = getattr(self, "_loadable_for", None)
        if known is None or known[0] is not allowed:  # a clone widened by `with_allowlist`
            keys = None if allowed is True else frozenset(allowed or ())
            if keys is not None:
                keys |= lg_msgpack.SAFE_MSGPACK_TYPES | lg_msgpack.SAFE_MSGPACK_METHODS
            known = self._loadable_for = (allowed, keys)
        return known[1]

    def _hook(self, refused: list[str]) -> Callable[[int, bytes], Any]:
        numpy = self._unpack_ext_hook
        loadable = self._loadable()

        def ext(code: int, data: bytes) -> Any:
            if _ONE_ARG <= code <= _PYDANTIC_V2:
                tup = ormsgpack.unpackb(data, ext_hook=ext, option=_KEYS)
                try:
                    key = (tup[0], tup[1], tup[3]) if code == _METHOD else (tup[0], tup[1])
                    if loadable is None or key in loadable:
                        return _built(code, tup)
                    refused.append(".".join(map(str, key)))
                except (TypeError, IndexError, KeyError):  # not [module, name, data, ...]
                    refused.append(f"a malformed msgpack extension {code}")
                return None
            if code == _DELTA:
                return _DeltaSnapshot(ormsgpack.unpackb(data, ext_hook=ext, option=_KEYS))
            if code == _NUMPY:  # LangGraph's: an array of numbers (no allowlist), else None
                array = numpy(code, data)
                if array is not None:
                    return array
            refused.append(f"msgpack extension {code}")
            return None

        return ext


_KEYS = ormsgpack.OPT_NON_STR_KEYS


def _built(code: int, tup: list[Any]) -> Any:
    """An allowed type's value, built as LangGraph's extension hook builds it (and falls back)."""
    try:
        if code == _POS_ARGS and tup[0] == "langgraph.types" and tup[1] == "Send":
            return _send_from_args(tup[2])
        # An allowed module is nearly always loaded: a dict lookup (52 ns) before the import
        # machinery (420 ns), for each of the 800 messages of a long thread's read.
        module = sys.modules.get(tup[0]) or importlib.import_module(tup[0])
        found = getattr(module, tup[1])
        if code == _ONE_ARG:
            value = found(tup[2])
        elif code == _POS_ARGS:
            value = found(*tup[2])
        elif code == _METHOD:
            value = getattr(found, tup[3])(tup[2])
        else:
            value = found(**tup[2])
    except Exception:
        if code not in (_PYDANTIC_V1, _PYDANTIC_V2):
            return tup[2]  # LangGraph's fallback: the data it was stored with
        construct = found.construct if code == _PYDANTIC_V1 else found.model_construct
        value = construct(**tup[2])
    return value


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
