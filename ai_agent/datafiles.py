"""Reading structured data from outside the engine: sizes, encodings and nesting, bounded.

Plans, config files and the JSON that comes back from the run store are read through these few
functions, so every reader refuses the same things the same way: a file larger than its limit
(checked before it is read), bytes that are not UTF-8 text (a binary file given by mistake), and
values nested deeper than `MAX_DEPTH` (which would otherwise end in a ``RecursionError`` in the
parser, or later in whatever walks the value). Each refusal is one error of the engine's tree
(the caller chooses which) that names the source, what is wrong and what to do.

Examples:
    >>> loads_json('{"a": [1, 2]}', what="the plan")
    {'a': [1, 2]}
    >>> loads_json("[" * 500 + "]" * 500, what="the plan")
    Traceback (most recent call last):
    ...
    ai_agent.errors.ConfigError: the plan is nested more than 100 levels deep; ...
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

from ai_agent.errors import AgentError, ConfigError

__all__ = [
    "MAX_DEPTH",
    "check_depth",
    "describe_size",
    "finite_number",
    "half_character_at",
    "loads_json",
    "nested_past",
    "not_a_number",
    "parse_nested",
    "read_text",
    "strict_loads",
    "unique_keys",
    "unstorable_at",
    "valid_data",
    "valid_text",
]

T = TypeVar("T")

MAX_DEPTH = 100
"""How deep lists and mappings may nest. Well below Python's recursion limit (1000), so neither
a parser nor the code that walks a value (validation, serialization) can run out of stack; far
above what any plan, config file or stored record of the engine needs."""


def read_text(
    path: str | Path,
    *,
    what: str,
    max_bytes: int,
    error: type[AgentError] = ConfigError,
    limit_hint: str = "make it smaller",
) -> str:
    """The UTF-8 text of a file no larger than ``max_bytes``.

    Args:
        path: The file.
        what: How messages name it ("the plan file plan.json").
        max_bytes: The largest size accepted; a larger file is refused before it is read.
        error: The error raised.
        limit_hint: What to do about a file that is too large (which setting raises the limit).

    Raises:
        AgentError: (``error``) the file cannot be read, is too large, or is not UTF-8 text.
    """
    try:
        with Path(path).open("rb") as handle:
            # One byte more than allowed tells "too large" apart without reading the whole file
            # (a FIFO or /dev/zero has no size to ask for first).
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise error(f"cannot read {what}: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise error(f"{what} is larger than {describe_size(max_bytes)}; {limit_hint}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(
            f"{what} is not UTF-8 text (byte {exc.start} is 0x{data[exc.start]:02x}); "
            "is it a binary file? Give a text file"
        ) from None


def loads_json(
    text: str | bytes,
    *,
    what: str,
    max_depth: int = MAX_DEPTH,
    max_chars: int | None = None,
    error: type[AgentError] = ConfigError,
    limit_hint: str = "make it smaller",
) -> Any:
    """Parse JSON text, refusing text past ``max_chars`` or values deeper than ``max_depth``.

    What Python's parser accepts beyond JSON, or reads silently as something else, is refused
    too: a key given twice in one object (`unique_keys`), NaN and Infinity, and a number too
    large to be finite (`finite_number`).

    Args:
        text: The JSON text.
        what: How messages name it.
        max_depth: How deep lists and objects may nest.
        max_chars: The longest text accepted (None: any length).
        error: The error raised.
        limit_hint: What to do about a text that is too long.

    Raises:
        AgentError: (``error``) the text is too long, not JSON, or nested too deep.
    """
    if max_chars is not None and len(text) > max_chars:
        raise error(f"{what} is longer than {max_chars:,} characters; {limit_hint}")
    try:
        return parse_nested(strict_loads, text, what=what, max_depth=max_depth, error=error)
    except UnicodeDecodeError:
        raise error(f"{what} is not UTF-8 text; give JSON text") from None
    except ValueError as exc:  # not JSON (JSONDecodeError), or a key given twice
        raise error(f"{what} is not valid JSON: {exc}") from None


def unique_keys(pairs: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's pairs as a dict, or a ValueError naming a key given twice.

    The ``object_pairs_hook`` of `json.loads`: by itself the parser keeps the last value of a
    repeated key and drops the other without a word, so ``{"allow_continue": true,
    "allow_continue": false}`` in a plan file, or a setting written twice in a config file,
    would quietly mean one of the two.

    Examples:
        >>> json.loads('{"a": 1, "a": 2}', object_pairs_hook=unique_keys)
        Traceback (most recent call last):
        ...
        ValueError: the key 'a' is given twice in one object; keep one
    """
    mapping: dict[str, Any] = {}
    for key, value in pairs:
        if key in mapping:
            shown = key if len(key) <= 60 else key[:57] + "..."
            raise ValueError(f"the key {shown!r} is given twice in one object; keep one")
        mapping[key] = value
    return mapping


def finite_number(text: str) -> float:
    """A JSON number as a float, or a ValueError for one too large to be finite (``1e999``).

    The ``parse_float`` of `json.loads`, which reads ``1e999`` as infinity: a limit or an
    argument of infinity is not what anyone wrote.
    """
    value = float(text)
    if math.isinf(value):
        shown = text if len(text) <= 30 else text[:27] + "..."
        raise ValueError(f"the number {shown} is too large; write a finite number")
    return value


def not_a_number(name: str) -> float:
    """The ``parse_constant`` of `json.loads`: NaN and Infinity are not JSON, only Python's."""
    raise ValueError(f"{name} is not a JSON number; write a finite number")


strict_loads = functools.partial(
    json.loads,
    object_pairs_hook=unique_keys,
    parse_float=finite_number,
    parse_constant=not_a_number,
)
"""``json.loads`` refusing, with a ValueError, what JSON has not or what it would read silently
as something else: a key given twice, NaN and Infinity, a number too large to be finite."""


def parse_nested(
    parse: Callable[[T], Any],
    text: T,
    *,
    what: str,
    max_depth: int = MAX_DEPTH,
    error: type[AgentError] = ConfigError,
) -> Any:
    """``parse(text)``, refusing a value nested deeper than ``max_depth``.

    For any parser (JSON, TOML, YAML): one that runs out of stack on a deep value raises
    ``RecursionError``, which becomes the same error as a value that parsed but is too deep.
    The parser's own errors pass through.

    Examples:
        >>> import tomllib
        >>> parse_nested(tomllib.loads, "a = [[1]]", what="x")
        {'a': [[1]]}
    """
    try:
        value = parse(text)
    except RecursionError:  # deeper than the parser's stack: certainly past max_depth
        raise error(_too_deep(what, max_depth)) from None
    check_depth(value, what=what, max_depth=max_depth, error=error)
    return value


def check_depth(
    value: object,
    *,
    what: str,
    max_depth: int = MAX_DEPTH,
    error: type[AgentError] = ConfigError,
) -> None:
    """Raise ``error`` when lists, tuples and mappings in ``value`` nest past ``max_depth``.

    Iterative, so it cannot itself run out of stack on the values it is there to refuse.

    Examples:
        >>> check_depth({"a": [[1]]}, what="x", max_depth=3)
        >>> check_depth({"a": [[1]]}, what="x", max_depth=2)
        Traceback (most recent call last):
        ...
        ai_agent.errors.ConfigError: x is nested more than 2 levels deep; ...
    """
    if nested_past(value, max_depth):
        raise error(_too_deep(what, max_depth))


_HALF_TEXT = (
    "holds half of a character (a lone surrogate, such as JSON's \\ud800 written alone), "
    "which no text can store; write the whole character"
)
# The whole numbers a checkpoint keeps (msgpack's): past them its write fails ("Integer exceeds
# 64-bit range"), and json.dumps fails past 4,300 digits.
_STORABLE_INTS = range(-(2**63), 2**64)


def unstorable_at(value: object, *, texts: bool = True) -> tuple[str, str] | None:
    r"""Where in ``value`` (a dotted path) the first value no store keeps is, and what it is.

    NaN and Infinity (no JSON number: what reads them back refuses them, and a guard such as
    ``amount > limit`` is false for NaN), a whole number past 64 bits, and with ``texts`` a
    lone surrogate in a text or a key. A walk with a stack: values may nest as deep as their
    author wrote.

    Examples:
        >>> unstorable_at({"edit_args": {"c1.1": {"n": float("nan")}}})
        ('edit_args.c1.1.n', 'is NaN, which is not a JSON number; write a finite number')
        >>> unstorable_at(["ok", 2**64 - 1, -(2**63), 0.5, "\ud800"], texts=False) is None
        True
    """
    stack: list[tuple[str, object]] = [("", value)]
    while stack:
        where, item = stack.pop()
        problem = _unstorable(item, texts)
        if problem is not None:
            return where, problem
        items: list[tuple[object, object]] = []
        if isinstance(item, Mapping):
            items = list(item.items())
        elif isinstance(item, list | tuple):
            items = list(enumerate(item))
        for key, inner in reversed(items):
            # The path is printed: a half character in a key is shown as its escape.
            shown = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", str(key))
            place = f"{where}.{shown}" if where else shown
            if texts and shown != str(key):
                return place, _HALF_TEXT
            stack.append((place, inner))
    return None


def _unstorable(value: object, texts: bool) -> str | None:
    """What makes one value unstorable, or None (containers are walked by the caller)."""
    if isinstance(value, str):
        return _HALF_TEXT if texts and _SURROGATE.search(value) else None
    if isinstance(value, float) and not math.isfinite(value):
        named = "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
        return f"is {named}, which is not a JSON number; write a finite number"
    if isinstance(value, int) and not isinstance(value, bool) and value not in _STORABLE_INTS:
        # str() of a number past 4,300 digits raises; its size says enough.
        size = str(value) if value.bit_length() <= 180 else f"{value.bit_length()} bits long"
        return f"must be a whole number of at most 64 bits (it is {size})"
    return None


def nested_past(value: object, max_depth: int) -> bool:
    """Whether lists, tuples and mappings in ``value`` nest more than ``max_depth`` levels.

    Iterative, so it cannot itself run out of stack on the values it is there to refuse; a
    scalar is at depth 0.

    Examples:
        >>> nested_past({"a": [1, [2]]}, 3), nested_past({"a": [1, [2]]}, 2), nested_past("x", 0)
        (False, True, False)
    """
    stack: list[tuple[object, int]] = [(value, 1)]
    # The depth each container was walked at: YAML anchors share one object between many places
    # (a "billion laughs" file would take forever to walk place by place), and may even make a
    # cycle, which is reached deeper each time round until it passes the limit.
    walked: dict[int, int] = {}
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > max_depth:
            return True
        if walked.get(id(item), 0) >= depth:
            continue
        walked[id(item)] = depth
        stack.extend((child, depth + 1) for child in children)
    return False


def _too_deep(what: str, max_depth: int) -> str:
    return f"{what} is nested more than {max_depth} levels deep; flatten it"


_SURROGATE = re.compile("[\ud800-\udfff]")


def half_character_at(text: str) -> int | None:
    r"""Where the first lone surrogate of ``text`` is (half of a character no text can store).

    Examples:
        >>> half_character_at("sum \ud800 invoices"), half_character_at("\U0001f600 ok")
        (4, None)
    """
    found = _SURROGATE.search(text)
    return None if found is None else found.start()


def valid_text(text: str) -> str:
    r"""``text`` with any lone surrogate replaced by U+FFFD (the replacement character).

    JSON may escape one (``"\ud800"``) and Python decodes it, but no encoding can write it:
    a model's reply or a tool's output holding one crashed the run where it was first stored.
    A pair that makes a character is kept.

    Examples:
        >>> valid_text("a\ud800b") == "a\ufffdb", valid_text("\ud83d\ude00") == "\U0001f600"
        (True, True)
    """
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def valid_data(value: T) -> T:
    r"""JSON data (a call's arguments, a tool's result) with `valid_text` applied to every string.

    Nothing is copied until a string changes: the same object comes back in the usual case, so
    the walk over every tool result allocates nothing (as `SecretValues.scrub` does).

    Examples:
        >>> data = {"a": ["x", 1]}
        >>> valid_data(data) is data, valid_data({"a\ud800": ["\udc00"]}) == {"a\ufffd": ["\ufffd"]}
        (True, True)
    """
    if isinstance(value, str):
        return cast(T, valid_text(value))
    if isinstance(value, dict):
        out: dict[Any, Any] | None = None
        for index, (key, item) in enumerate(value.items()):
            new_key, new_item = valid_data(key), valid_data(item)
            if out is None and (new_key is not key or new_item is not item):
                out = dict(list(value.items())[:index])
            if out is not None:
                out[new_key] = new_item
        return value if out is None else cast(T, out)
    if isinstance(value, list | tuple):
        items: list[Any] | None = None
        for index, item in enumerate(value):
            new = valid_data(item)
            if items is None and new is not item:
                items = list(value[:index])
            if items is not None:
                items.append(new)
        return value if items is None else cast(T, type(value)(items))
    return value


def describe_size(n: int) -> str:
    """``n`` bytes as people read it: whole MiB or KiB, else the exact count.

    Examples:
        >>> describe_size(10 * 1024 * 1024), describe_size(2048), describe_size(6000)
        ('10 MiB', '2 KiB', '6,000 bytes')
    """
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n:,} bytes"
