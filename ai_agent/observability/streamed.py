r"""Secrets in a streamed HTTP body: masked however the stream's events cut them.

A model streams its text a few characters per event (``{"delta": {"content": "sk-c"}}``, then
``"anar"``...), so a key it repeats never stands whole in the response body, and the body's log
line (`ai_agent.observability.httplog`, ``include_response_body``) showed it piece by piece,
which no text mask can see. `masked_across_events` reads the strings at one place of the events
(a choice's content, a tool call's arguments) as one text, finds the secrets in it, and masks
each event's share of them.

Examples:
    >>> from ai_agent.observability.redaction import SecretValues
    >>> body = 'data: {"c": "key sk-ca"}\n\ndata: {"c": "nary-1234."}\n'
    >>> print(masked_across_events(body, SecretValues(["sk-canary-1234"])))
    data: {"c": "key ***"}
    <BLANKLINE>
    data: {"c": "***."}
    <BLANKLINE>
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from ai_agent.observability.redaction import MASK, SecretValues

__all__ = ["masked_across_events"]

# A line of a streamed body that holds one event: server-sent events (``data: {...}``) or JSON
# lines (Ollama's own API).
_EVENT_LINE = re.compile(r"^(data: ?)?(\{.*\})\s*$")
# Where a string sits in an event: the keys and list indices leading to it.
Where = tuple[str | int, ...]
# One event's string at one place: the event's line, where in the event, the string.
Piece = tuple[int, Where, str]


def masked_across_events(text: str, secrets: SecretValues) -> str:
    """``text`` (a streamed body, or its start) with every secret masked across its events.

    Events that hold no part of a secret stay as they are, byte for byte; those that do are
    written again as JSON, with their share of the secret as ``***``. A line that is not an
    event (or is cut at the end of what was kept) is left to the caller's redaction.
    """
    if "\n" not in text or not secrets:
        return text
    lines = text.split("\n")
    events: dict[int, tuple[str, Any]] = {}
    streams: dict[Where, list[Piece]] = {}
    for number, line in enumerate(lines):
        match = _EVENT_LINE.match(line)
        if match is None:
            continue
        try:
            event = json.loads(match[2])
        except ValueError:  # not JSON after all, or cut at the end of what was kept
            continue
        events[number] = (match[1] or "", event)
        for where, piece in _strings(event, ()):
            streams.setdefault(where, []).append((number, where, piece))
    changed: set[int] = set()
    for pieces in streams.values():
        changed |= _mask_pieces(pieces, secrets, events)
    for number in changed:
        prefix, event = events[number]
        lines[number] = prefix + json.dumps(event, ensure_ascii=False)
    return "\n".join(lines)


def _strings(value: Any, where: Where) -> Iterator[tuple[Where, str]]:
    """Every string in a JSON value, with where it sits."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, (*where, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, (*where, index))


def _mask_pieces(
    pieces: list[Piece], secrets: SecretValues, events: dict[int, tuple[str, Any]]
) -> set[int]:
    """Mask each piece's share of the secrets in the pieces' joined text; the lines changed."""
    spans = secrets.spans("".join(piece for _, _, piece in pieces))
    changed: set[int] = set()
    at = 0
    first = 0  # the first span that may reach into this piece or a later one
    for number, where, piece in pieces:
        start, end = at, at + len(piece)
        at = end
        # The spans are sorted and apart, and so are the pieces: walk both once (a reply of
        # many events repeating a key took events x keys steps, on the event loop).
        while first < len(spans) and spans[first][1] <= start:
            first += 1
        inside = []
        index = first
        while index < len(spans) and spans[index][0] < end:
            a, b = spans[index]
            # The part of the secret that falls in this piece, relative to its start.
            inside.append((max(a, start) - start, min(b, end) - start))
            index += 1
        if inside:
            _put(events[number][1], where, _masked(piece, inside))
            changed.add(number)
    return changed


def _masked(piece: str, spans: list[tuple[int, int]]) -> str:
    """``piece`` with each of its spans (sorted, apart) as the mask."""
    out, at = [], 0
    for start, end in spans:
        out += [piece[at:start], MASK]
        at = end
    out.append(piece[at:])
    return "".join(out)


def _put(value: Any, where: Where, new: str) -> None:
    """Replace the string at ``where`` in a parsed event (a fresh one, never shared)."""
    for step in where[:-1]:
        value = value[step]
    value[where[-1]] = new
