"""Edited state for a fork, checked against the run state's types before anything is copied.

A fork's ``update`` comes from a person (``ai-agent fork --update``, the console's fork form,
``Agent.afork``): a value of the wrong type (``{"task": null}``, ``{"iteration": "abc"}``) would
be written into the fork's checkpoint as it is, and the fork would fail later, in a stage, with
a TypeError far from the edit. So each value is checked here first, with pydantic's
``TypeAdapter`` on the key's type in `ai_agent.state.RunState` (strictly: ``"3"`` is not a
number), and a wrong one is refused with a `RunError` that names the key and what it must be.
A whole number past 64 bits, which pydantic takes and no checkpoint can store, is refused too.

A list channel that a reducer appends to or replaces (``messages``, ``issues``) takes either a
list to append or ``{"replace": [...]}``, each checked as a list of its items. Pydantic is
imported on the first check: reading runs never loads it.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ai_agent.errors import RunError
from ai_agent.state import RunState, append_or_replace

if TYPE_CHECKING:
    from pydantic import TypeAdapter

__all__ = ["check_update"]

MAX_PROBLEMS = 5
"""Problems named in one refusal at most (the first ones)."""


def check_update(update: Mapping[str, Any]) -> None:
    """Refuse an edit of the run state that names a key it lacks or a value of the wrong type.

    Examples:
        >>> check_update({"reflection": "try the other file", "iteration": 2})
        >>> try:
        ...     check_update({"iteration": "abc"})
        ... except RunError as exc:
        ...     print(exc)  # doctest: +ELLIPSIS
        cannot apply the update to the fork: iteration must be a valid integer (it is "abc"); ...

    Raises:
        RunError: a key the run state does not have, or a value that does not fit its type.
    """
    unknown = sorted(set(update) - set(RunState.__annotations__))
    if unknown:
        raise RunError(
            f"cannot apply the update to the fork: {', '.join(unknown)} not in the run state "
            f"(its fields: {', '.join(sorted(RunState.__annotations__))})"
        )
    problems = [p for key, value in update.items() for p in _problems(key, value)]
    if problems:
        raise RunError(
            f"cannot apply the update to the fork: {'; '.join(problems[:MAX_PROBLEMS])}; "
            "nothing was forked: fix the value and fork again"
        )


def _problems(key: str, value: Any) -> list[str]:
    """What is wrong with one edited value, each naming where (``messages.0.role``)."""
    from pydantic import ValidationError

    adapter, replaceable = _adapters()[key]
    if replaceable is not None and isinstance(value, dict):
        adapter = replaceable  # {"replace": [...]}; its errors' places start with "replace"
    try:
        adapter.validate_python(value, strict=True)
    except ValidationError as exc:
        return [_problem(key, e) for e in exc.errors(include_url=False)]
    return _too_large(key, value)


_INT64 = range(-(2**63), 2**63)


def _too_large(key: str, value: Any) -> list[str]:
    """Whole numbers a checkpoint cannot store (past 64 bits), each named by its place.

    Pydantic takes any size of integer; the checkpoint's serializer does not, and said only
    "Integer exceeds 64-bit range", naming neither the key nor what to do. A walk with a stack:
    an ``Any`` field (a tool call's arguments) may nest as deep as the person typed.
    """
    found: list[str] = []
    stack: list[tuple[str, Any]] = [(key, value)]
    while stack and len(found) < MAX_PROBLEMS:
        place, item = stack.pop()
        if isinstance(item, int) and not isinstance(item, bool) and item not in _INT64:
            # str() of a number past 4,300 digits raises; its size says enough.
            shown = str(item) if item.bit_length() <= 180 else f"{item.bit_length()} bits long"
            found.append(f"{place} must be a whole number of at most 64 bits (it is {shown})")
        elif isinstance(item, dict):
            stack.extend((f"{place}.{k}", v) for k, v in reversed(item.items()))
        elif isinstance(item, list | tuple):
            stack.extend((f"{place}.{i}", v) for i, v in reversed(list(enumerate(item))))
    return found


def _problem(key: str, error: Any) -> str:
    """One of pydantic's errors as a rule: ``iteration must be a valid integer (it is "abc")``."""
    place = ".".join([key, *map(str, error["loc"])])
    if error["type"] == "missing":
        return f"{place} is missing"
    message = str(error["msg"])
    if message.startswith("Input should be "):
        return f"{place} must be {message.removeprefix('Input should be ')} (it is {_shown(error)})"
    return f"{place} is wrong: {message} (it is {_shown(error)})"


def _shown(error: Any) -> str:
    """The refused value as JSON, clipped (it came from a person, and may be long)."""
    text = json.dumps(error.get("input"), default=str, ensure_ascii=False)
    return text if len(text) <= 60 else f"{text[:57]}..."


@functools.cache
def _adapters() -> dict[str, tuple[TypeAdapter[Any], TypeAdapter[Any] | None]]:
    """Per state key: the adapter of its type, and of ``{"replace": [...]}`` where it has one."""
    from typing import NotRequired, Required, get_args, get_origin

    from pydantic import TypeAdapter
    from typing_extensions import TypedDict, get_type_hints

    adapters: dict[str, tuple[TypeAdapter[Any], TypeAdapter[Any] | None]] = {}
    for key, declared in get_type_hints(RunState, include_extras=True).items():
        wrapper: Any = get_origin(declared)  # NotRequired[X] is X, where it is not a TypedDict
        hint = get_args(declared)[0] if wrapper in (NotRequired, Required) else declared
        replace = None
        if append_or_replace in getattr(hint, "__metadata__", ()):
            items = get_args(hint)[0]  # list[Message]: the whole value of a replace
            replace = TypeAdapter(TypedDict(f"Replace_{key}", {"replace": items}))  # type: ignore[operator]
        adapters[key] = (TypeAdapter(hint), replace)
    return adapters
