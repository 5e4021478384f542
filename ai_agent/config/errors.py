"""Validation errors of settings and MCP files, told as one readable line per problem.

Each problem names the field by its dotted path (``mcp_servers[1].timeout``), what is wrong, what
is allowed (from the field's type and bounds) and what was given, never the value of a secret, of
a whole section or of an unknown key. Where the value came from is the caller's part: it passes a
`Origin` that describes it (`ai_agent.config.sources.Origins` for settings).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Annotated, Literal, Protocol, get_args, get_origin

import annotated_types
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from ai_agent.url_passwords import mask_url_passwords

__all__ = ["MAX_SHOWN_VALUE", "Origin", "closest_hint", "explain_problems", "shorten"]

MAX_SHOWN_VALUE = 80


class Origin(Protocol):
    """Tells where a field was set, or how to set it."""

    def describe(self, field_path: Sequence[str]) -> str:
        """One line for the field at ``field_path`` (top-level field first)."""


def shorten(text: str) -> str:
    """``text`` cut to `MAX_SHOWN_VALUE` characters, ``...`` marking the cut.

    Examples:
        >>> len(shorten("x" * 200)), shorten("short")
        (80, 'short')
    """
    return text if len(text) <= MAX_SHOWN_VALUE else text[: MAX_SHOWN_VALUE - 3] + "..."


def explain_problems(
    title: str,
    problems: Sequence[ErrorDetails],
    model_cls: type[BaseModel],
    origin: Origin | None = None,
) -> str:
    """``title (N problems):`` then each problem: where, what is wrong, allowed, given, origin.

    ``problems`` are a ``ValidationError``'s ``errors()``; the caller drops the error itself
    before raising its own, since its context would still hold the raw inputs.
    """
    count = len(problems)
    lines = [f"{title} ({count} problem{'s' if count != 1 else ''}):"]
    for problem in problems:
        target = _resolve_loc(model_cls, problem["loc"])
        lines += _describe_problem(problem, target)
        if origin is not None:
            lines.append(f"    {origin.describe(target.field_path)}")
    return "\n".join(lines)


def _describe_problem(problem: ErrorDetails, target: _Target) -> list[str]:
    message = str(problem["msg"]).removeprefix("Value error, ")
    details = []
    if problem["type"] == "extra_forbidden":
        message = closest_hint(str(problem["loc"][-1]), target.parent_fields)
        details.append(f"known here: {', '.join(target.parent_fields)}")
    else:
        allowed = _allowed(target.annotation, target.metadata)
        if problem["type"] == "literal_error" and allowed and allowed.startswith("one of"):
            message = "not one of the allowed choices"  # they follow under "allowed"
        if allowed:
            details.append(f"allowed: {allowed}")
        details.append(_given(problem.get("input"), target))
    return [f"  {target.dotted}: {message}", f"    {'; '.join(details)}"]


def closest_hint(name: str, known: Sequence[str]) -> str:
    """``did you mean 'x'?`` for the known name closest to ``name``, or a plain "unknown".

    Examples:
        >>> closest_hint("max_iteratons", ["max_iterations", "tools"])
        "unknown setting; did you mean 'max_iterations'?"
        >>> closest_hint("zzz", ["tools"])
        'unknown setting'
    """
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f"unknown setting; did you mean {close[0]!r}?" if close else "unknown setting"


@dataclass
class _Target:
    """Where a validation error points: the dotted path and the field behind it."""

    dotted: str = ""
    field_path: list[str] = dataclass_field(default_factory=list)
    # The type the error is about: a field's, or a list item's / dict key's or value's inside it.
    annotation: object = None
    metadata: list[object] = dataclass_field(default_factory=list)
    container: object = None  # the dict type last stepped into, for a following "[key]"
    parent_fields: list[str] = dataclass_field(default_factory=list)
    # False when the error is about a whole section or an unknown key: its input is not shown,
    # since a section may hold a secret and a misspelt key may be a misspelt api_key.
    is_leaf: bool = True
    is_secret: bool = False


def _resolve_loc(settings_cls: type[BaseModel], loc: Sequence[int | str]) -> _Target:
    target = _Target()
    model: type[BaseModel] | None = settings_cls
    parts: list[str] = []
    # Inside a list or dict item (mcp_servers[1].timeout) the source sets the whole list, so the
    # origin is looked up for the list's field.
    in_item = False
    for item in loc:
        if model is not None and isinstance(item, str):
            target.parent_fields = list(model.model_fields)
            field = model.model_fields.get(item)
            parts.append(f".{item}" if parts else item)
            if not in_item:
                target.field_path.append(item)
            if field is None:  # an unknown key (extra_forbidden): keep it to find who set it
                target.is_leaf = False
                model = None
                continue
            target.annotation, target.metadata = field.annotation, list(field.metadata)
            target.is_secret = _mentions(field.annotation, SecretStr)
            model = _section_model(_without_none(field.annotation))
            target.is_leaf = model is None
        else:
            _step_into_item(target, item, parts)
            # A list or dict of sections (mcp_servers[1]): the next name is one of its fields.
            model = _section_model(_without_none(target.annotation))
            target.is_leaf = model is None
            in_item = True
    target.dotted = "".join(parts)
    return target


def _step_into_item(target: _Target, item: int | str, parts: list[str]) -> None:
    """Follow a list index or dict key in an error location into the item's type."""
    if item == "[key]":  # pydantic's marker: the error is about the key just named
        target.annotation = get_args(target.container)[0]
        return
    parts.append(f"[{item!r}]" if isinstance(item, str) else f"[{item}]")
    target.container = _without_none(target.annotation)
    args = get_args(target.container)
    target.annotation = args[-1] if args else None  # list[X] -> X, dict[K, V] -> V
    target.metadata = []


def _section_model(annotation: object) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _mentions(annotation: object, wanted: type) -> bool:
    if annotation is wanted:
        return True
    return any(_mentions(arg, wanted) for arg in get_args(annotation))


def _without_none(annotation: object) -> object:
    """``float | None`` -> ``float``; anything else unchanged."""
    args = get_args(annotation)
    if get_origin(annotation) is not Literal and len(args) == 2 and type(None) in args:
        return next(arg for arg in args if arg is not type(None))
    return annotation


_KIND_NAMES: dict[object, str] = {
    bool: "true or false",
    int: "an integer",
    float: "a finite number",
    str: "text",
    SecretStr: "text without spaces",
    Path: "a file path",
    list: "a list",
    dict: "a mapping",
}


def _allowed(annotation: object, metadata: Sequence[object]) -> str | None:
    """A short description of the values a type takes, from the type and its constraints."""
    annotation = _without_none(annotation)
    if get_origin(annotation) is Annotated:
        base, *extra = get_args(annotation)
        more = [m for e in extra for m in (e.metadata if isinstance(e, FieldInfo) else [e])]
        return _allowed(base, [*metadata, *more])
    if get_origin(annotation) is Literal:
        return "one of " + ", ".join(repr(choice) for choice in get_args(annotation))
    kind = _KIND_NAMES.get(get_origin(annotation) or annotation)
    if kind is None:
        return None
    return " ".join([kind, *_bounds(metadata)])


_BOUNDS = (
    (annotated_types.Gt, "gt", ">"),
    (annotated_types.Ge, "ge", ">="),
    (annotated_types.Lt, "lt", "<"),
    (annotated_types.Le, "le", "<="),
)


def _bounds(metadata: Sequence[object]) -> list[str]:
    bounds = [
        f"{symbol} {getattr(item, attribute)}"
        for item in metadata
        for kind, attribute, symbol in _BOUNDS
        if isinstance(item, kind)
    ]
    return [" and ".join(bounds)] if bounds else []


def _given(value: object, target: _Target) -> str:
    if target.is_secret:
        return "given: (secret, hidden)"
    if not target.is_leaf or isinstance(value, (dict, list, tuple)):
        return "given: (a structured value, not shown)"
    shown = mask_url_passwords(repr(value), "***")
    return f"given: {shorten(shown)}"
