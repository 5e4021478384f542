"""Whether a checkpoint's values have the shape of `RunState`, checked before the engine reads them.

Serialization decides which types a checkpoint may hold; it cannot say that ``messages`` is a
list of messages. A database edited by hand (or by another program) can hold values that
decode fine and have the wrong shape: ``messages`` the number 5, a message that is text,
``status`` a number. Read as they are, they stop ``show``, ``history`` and ``export`` with
"internal error: TypeError ..." and fail a resume inside a stage, rewriting the run's row. Each
place the engine reads a run's state from a checkpoint asks `check_values` first, and a value
of the wrong shape is a `CorruptRunError` that names the thread, the checkpoint and the channel,
as `ai_agent.checkpoints._reads.corrupt_checkpoint` words every damaged checkpoint.

The shape is worked out once from `RunState`'s own type hints, so it follows the state as it
changes: a TypedDict is an object with its required keys (keys it does not name are let through,
as LangGraph does), ``list[X]`` a list, ``dict[str, X]`` an object, ``X | None`` either,
``Literal[...]`` one of its values, ``float`` any number, ``int`` a whole number (``bool`` is
neither), ``Any`` anything. The walk follows the type, which nests a few levels and never
recurses into itself, so a value nested deeper than its type is not walked at all.

Examples:
    >>> shape_problem({"messages": 5})
    'the channel messages holds a whole number, not a list'
    >>> shape_problem({"messages": [{"role": "user", "content": [1]}]})
    'the channel messages, at [0].content, holds a list, not text'
    >>> shape_problem({"messages": [{"role": "user", "content": "hi"}], "status": "paused"})
"""

from __future__ import annotations

import contextlib
import functools
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from itertools import chain, repeat
from typing import (
    Annotated,
    Any,
    Literal,
    NotRequired,
    Required,
    Union,
    get_args,
    get_origin,
    get_type_hints,
)

from typing_extensions import is_typeddict

from ai_agent.checkpoints._reads import corrupt_checkpoint
from ai_agent.checkpoints.versions import STATE_VERSION, state_version, upgrade_state
from ai_agent.errors import CorruptRunError
from ai_agent.state import RunState

__all__ = ["StateShapeError", "check_values", "shape_problem"]


class StateShapeError(ValueError):
    """A channel's value that decodes but is not of the type `RunState` gives the channel."""


# A problem: the path to the value (innermost first, built only on the way out of a failure)
# and what is wrong with it.
Problem = tuple[list[str], str]


@dataclass(frozen=True, slots=True)
class _List:
    item: Spec

    def problem(self, value: Any) -> Problem | None:
        if not isinstance(value, list | tuple):
            return [], f"{_kind(value)}, not a list"
        if _fits(list(value), self.item):
            return None
        for index, item in enumerate(value):
            if (found := _problem(item, self.item)) is not None:
                found[0].append(f"[{index}]")
                return found
        return None

    def fits(self, values: list[Any], kinds: set[type]) -> bool:
        return kinds <= _SEQUENCES and _fits(list(chain.from_iterable(values)), self.item)


@dataclass(frozen=True, slots=True)
class _Dict:
    value: Spec

    def problem(self, value: Any) -> Problem | None:
        if type(value) is not dict:
            return [], f"{_kind(value)}, not an object"
        for key, item in value.items():
            if type(key) is not str:
                return [], f"an object with the key {key!r}, not text"
            if (found := _problem(item, self.value)) is not None:
                found[0].append(f"[{key!r}]")
                return found
        return None

    def fits(self, values: list[Any], kinds: set[type]) -> bool:
        if not kinds <= _DICTS or not set(map(type, chain.from_iterable(values))) <= _TEXT:
            return False
        return _fits(list(chain.from_iterable(map(dict.values, values))), self.value)


@dataclass(frozen=True, slots=True)
class _Record:
    fields: Mapping[str, Spec]
    required: frozenset[str]
    # For `fits`: each field's key, spec and whether it is required; a scalar's types with the
    # marker of an absent key (`_ABSENT`) among them when it may be absent.
    columns: tuple[tuple[str, Spec, bool], ...] = ()

    def problem(self, value: Any) -> Problem | None:
        if type(value) is not dict:
            return [], f"{_kind(value)}, not an object"
        if not self.required <= value.keys():
            return [], f"an object without its {sorted(self.required - value.keys())[0]!r}"
        fields = self.fields
        for key, item in value.items():
            field = fields.get(key)
            if field is None or (type(field) is frozenset and type(item) in field):
                continue  # a key the type does not name, or a scalar of the type: the common case
            if (found := _problem(item, field)) is not None:
                found[0].append(f".{key}")
                return found
        return None

    def fits(self, values: list[Any], kinds: set[type]) -> bool:
        if not kinds <= _DICTS:
            return False
        for key, field, required in self.columns:
            if field is None:
                if required and not all(map(dict.__contains__, values, repeat(key))):
                    return False
                continue
            # An absent required key is `_ABSENT` in the column, which fits no spec.
            column = map(dict.get, values, repeat(key), repeat(_ABSENT))
            if isinstance(field, frozenset):  # the common case: one set of the column's types
                if not set(map(type, column)) <= field:
                    return False
            elif not _fits(list(column if required else filter(_present, column)), field):
                return False
        return True


@dataclass(frozen=True, slots=True)
class _Literal:
    values: frozenset[Any]
    types: frozenset[type]

    def problem(self, value: Any) -> Problem | None:
        if type(value) in self.types and value in self.values:
            return None
        shown = repr(value) if isinstance(value, str | int | float) else _kind(value)
        return [], f"{shown[:60]}, not {_wanted(self)}"

    def fits(self, values: list[Any], kinds: set[type]) -> bool:
        return kinds <= self.types and set(values) <= self.values


@dataclass(frozen=True, slots=True)
class _Union:
    options: tuple[Spec, ...]

    def problem(self, value: Any) -> Problem | None:
        if any(_problem(value, option) is None for option in self.options):
            return None
        return [], f"{_kind(value)}, not {_wanted(self)}"

    def fits(self, values: list[Any], kinds: set[type]) -> bool:
        return all(self.problem(value) is None for value in values)


# None: anything (``Any``). A frozenset of types: a scalar of one of them (the common case,
# checked inline by ``type(value) in spec``).
Spec = None | frozenset[type] | _List | _Dict | _Record | _Literal | _Union

_ABSENT = object()  # a key a TypedDict's value does not have (`_fits`)
_ABSENT_KIND = frozenset({object})

_SCALARS: dict[Any, frozenset[type]] = {
    str: frozenset({str}),
    int: frozenset({int}),
    float: frozenset({float, int}),  # PEP 484's numeric tower: 0 is a fine score
    bool: frozenset({bool}),
    type(None): frozenset({type(None)}),
}


def _spec(hint: Any) -> Spec:
    """The shape of one type hint (``Annotated``, ``Required`` and ``NotRequired`` are gone)."""
    if hint is Any:
        return None
    if hint in _SCALARS:
        return _SCALARS[hint]
    if isinstance(hint, type) and issubclass(hint, Enum):
        return frozenset({hint, *(base for base in (str, int) if issubclass(hint, base))})
    if is_typeddict(hint):
        return _record(hint)
    make = _GENERICS.get(get_origin(hint))
    if make is None:
        raise TypeError(f"RunState names a type the shape check does not know: {hint!r}")
    return make(get_args(hint))


def _record(hint: Any) -> _Record:
    fields = {key: _spec(field) for key, field in get_type_hints(hint).items()}
    required = _required(hint)
    columns = tuple(
        (
            key,
            field | _ABSENT_KIND if isinstance(field, frozenset) and key not in required else field,
            key in required,
        )
        for key, field in fields.items()
    )
    return _Record(fields, required, columns)


def _union(options: list[Spec]) -> Spec:
    """One set of types for the scalars among ``options`` (``str | None``), or a `_Union`."""
    if None in options:
        return None
    merged = frozenset[type]().union(*(o for o in options if isinstance(o, frozenset)))
    others = tuple(o for o in options if not isinstance(o, frozenset))
    if not others:
        return merged
    return _Union((merged, *others) if merged else others)


_GENERICS: dict[Any, Callable[[tuple[Any, ...]], Spec]] = {
    list: lambda args: _List(_spec(args[0])),
    dict: lambda args: _Dict(_spec(args[1])),
    Literal: lambda args: _Literal(frozenset(args), frozenset(type(arg) for arg in args)),
    Union: lambda args: _union([_spec(arg) for arg in args]),
    types.UnionType: lambda args: _union([_spec(arg) for arg in args]),
}


def _required(record: Any) -> frozenset[str]:
    """A TypedDict's required keys, read from its hints.

    Not ``__required_keys__``: under ``from __future__ import annotations`` the class is made
    from strings, and ``Required[...]`` in a ``total=False`` class goes unseen (it says none).
    """
    required = set()
    for key, hint in get_type_hints(record, include_extras=True).items():
        inner = hint
        while get_origin(inner) is Annotated:
            inner = get_args(inner)[0]
        marked = get_origin(inner)
        if marked is Required or (marked is not NotRequired and record.__total__):
            required.add(key)
    return frozenset(required)


@functools.cache
def _channels() -> dict[str, Spec]:
    # Worked out on the first check, not on import: `from ai_agent import Agent` (which imports
    # this module through the fork) paid it before any state was read (8.4 ms against 3.9).
    return {key: _spec(hint) for key, hint in get_type_hints(RunState).items()}


_NONE_TYPE = type(None)
_SEQUENCES = frozenset({list, tuple})
_DICTS = frozenset({dict})
_TEXT = frozenset({str})


_KINDS: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (str, "text"),
    (int, "a whole number"),
    (float, "a number"),
    ((list, tuple), "a list"),
    (dict, "an object"),
    ((bytes, bytearray), "bytes"),
)


def _kind(value: Any) -> str:
    """What a value is, in a person's words."""
    if type(value) is bool or value is None:
        return "null" if value is None else str(value).lower()
    words = (words for kinds, words in _KINDS if isinstance(value, kinds))
    return next(words, f"a {type(value).__name__}")


def _wanted(spec: Spec) -> str:
    if isinstance(spec, frozenset):
        names = {str: "text", int: "a whole number", float: "a number", bool: "true or false"}
        words = [names.get(t, "null" if t is _NONE_TYPE else t.__name__) for t in spec]
        if float in spec:
            words.remove("a whole number")
        return " or ".join(sorted(words))
    if isinstance(spec, _List):
        return "a list"
    if isinstance(spec, _Dict | _Record):
        return "an object"
    if isinstance(spec, _Literal):
        return "one of " + ", ".join(sorted(repr(v) for v in spec.values))
    return " or ".join(_wanted(option) for option in spec.options) if spec else "anything"


def _scalar_fits(value: Any, allowed: frozenset[type]) -> bool:
    """A subclass counts (a StrEnum member is text), except a bool where numbers are wanted."""
    if type(value) is bool:
        return bool in allowed
    return isinstance(value, tuple(allowed))


def _problem(value: Any, spec: Spec) -> Problem | None:
    """How ``value`` differs from ``spec``; None when it fits.

    Recursive over the spec, not the value: `RunState`'s types nest a few levels at most.
    """
    if spec is None:
        return None
    if isinstance(spec, frozenset):
        if type(value) in spec or _scalar_fits(value, spec):
            return None
        return [], f"{_kind(value)}, not {_wanted(spec)}"
    return spec.problem(value)


def _fits(values: list[Any], spec: Spec) -> bool:
    """Whether every one of ``values`` fits ``spec``, checked a column at a time.

    The fast path, for long lists: each field of a list of TypedDicts is gathered across the
    list and its types (its values, for a Literal) collected as a set, by C loops (``map``,
    ``set``) instead of a Python loop per value: about three times faster on an 800-cycle
    state. False means "not sure": the value-by-value walk (`_problem`) then says what is
    wrong, or that nothing is (a StrEnum member where text is wanted, say).
    """
    if spec is None or not values:
        return True
    kinds = set(map(type, values))
    if isinstance(spec, frozenset):
        return kinds <= spec
    return spec.fits(values, kinds)


def _present(value: Any) -> bool:
    return value is not _ABSENT


def shape_problem(values: Mapping[str, Any]) -> str | None:
    """The first channel of ``values`` whose value is not of `RunState`'s type for it, in words.

    Channels `RunState` does not name are not checked (LangGraph's own, ``branch:to:...``).
    """
    channels = _channels()
    for channel, value in values.items():
        spec = channels.get(channel, None)
        if spec is None or (type(spec) is frozenset and type(value) in spec):
            continue
        found = _problem(value, spec)
        if found is not None:
            path, what = found
            if not path:
                return f"the channel {channel} holds {what}"
            where = "".join(reversed(path)).lstrip(".")
            return f"the channel {channel}, at {where}, holds {what}"
    return None


def check_values(
    values: Mapping[str, Any],
    config: Mapping[str, Any],
    parent: Mapping[str, Any] | None,
    metadata: Mapping[str, Any] | None,
) -> None:
    """Refuse a checkpoint's values that are not of `RunState`'s shape.

    ``config``, ``parent`` and ``metadata`` are the checkpoint's (a snapshot's ``config``,
    ``parent_config`` and ``metadata``): the error names the checkpoint and how to fork from
    the one before it, and the state version says how old values are brought up to date.

    Raises:
        CorruptRunError: a channel holds a value of the wrong shape.
    """
    problem = shape_problem(values)
    if problem is None:
        return
    version = state_version(metadata)
    if version < STATE_VERSION:
        # An older state's values have the shape of their version (a grant of version 1 lacks
        # its binding): they are judged as the engine reads them, once migrated.
        # A migration that cannot read them (TypeError...): the first problem stands.
        with contextlib.suppress(TypeError, KeyError, ValueError, AttributeError):
            problem = shape_problem(upgrade_state(values, version))
        if problem is None:
            return
    conf = config.get("configurable", {})
    parent_id = (parent or {}).get("configurable", {}).get("checkpoint_id")
    error: CorruptRunError = corrupt_checkpoint(
        str(conf.get("thread_id", "")),
        str(conf.get("checkpoint_id", "")),
        parent_id,
        StateShapeError(problem),
    )
    raise error
