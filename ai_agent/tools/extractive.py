"""An extractive summary of a long tool output: some of its own lines, chosen the same way.

The summary's header says it is one, how it was made and where the whole output is. A clipped
output (head and tail) hides whatever sits in the middle: the one matching line of a long grep,
the failing test of a long log. This summary keeps the first and the last lines (headers,
totals, errors) and fills the rest of the room with the lines that carry the most words found
in few other lines (a term's weight is its inverse line frequency), in their order, each gap
marked with how many lines it hides. JSON output is read indented, one value per line, so the
choice is per item, not per character. Nothing is written that the output does not hold, and
the same output always gives the same summary (no model, no randomness).
"""

from __future__ import annotations

import contextlib
import json
import math
import re

__all__ = ["HEADER_START", "extractive_summary", "summary_header"]

HEADER_START = "[Extractive summary of a "
_LINE = 240  # the longest line kept (longer ones are cut)
_HEAD, _TAIL = 0.3, 0.15  # the room given to the first and to the last lines
_WORD = re.compile(r"[^\W_]{3,}")


def summary_header(full_chars: int, lines: int, note: str) -> str:
    """The first line of a summary: what it is, of what, and where the whole output is.

    Examples:
        >>> print(summary_header(48210, 900, "the full output is kept as o1"))
        [Extractive summary of a 48,210-character output (900 lines): its first and last lines and the lines richest in rare words, in order; the full output is kept as o1]
        <BLANKLINE>
    """  # noqa: E501 - a doctest's output is one line
    return (
        f"{HEADER_START}{full_chars:,}-character output ({lines:,} lines): its first and last "
        f"lines and the lines richest in rare words, in order; {note}]\n"
    )


def _lines(text: str) -> tuple[list[str], set[int]]:
    """The output's lines (JSON indented, one value a line; a long line in pieces of ``_LINE``)
    and which of them continue the one before (a piece after the first of its line).
    """  # noqa: D205 - two results, one sentence
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        # Not JSON after all, or JSON nested past Python's stack (a hostile page or file):
        # its own lines.
        with contextlib.suppress(ValueError, RecursionError):
            text = json.dumps(json.loads(stripped), indent=1, ensure_ascii=False)
    out: list[str] = []
    continued: set[int] = set()
    for line in text.splitlines():
        for i in range(0, max(len(line), 1), _LINE):
            if i:
                continued.add(len(out))
            out.append(line[i : i + _LINE])
    return out, continued


def _scores(lines: list[str]) -> list[float]:
    """Each line's weight: the inverse line frequency of its distinct words, summed."""
    words = [set(_WORD.findall(line.lower())) for line in lines]
    seen: dict[str, int] = {}
    for found in words:
        for word in found:
            seen[word] = seen.get(word, 0) + 1
    total = len(lines)
    return [sum(math.log(total / seen[w]) for w in found) for found in words]


def _gap(hidden: int) -> str:
    return f"[... {hidden} line{'s' if hidden != 1 else ''} left out ...]"


def _take(lines: list[str], order: list[int], room: int, chosen: set[int]) -> int:
    """Add lines in ``order`` while they fit in ``room`` (a gap marker counted for each)."""
    for i in order:
        cost = len(lines[i]) + 1 + len(_gap(len(lines))) + 1
        if i in chosen or cost > room:
            continue
        chosen.add(i)
        room -= cost
    return room


def _render(lines: list[str], chosen: set[int], continued: set[int]) -> str:
    out: list[str] = []
    last = -1
    for i in sorted(chosen):
        if i > last + 1:
            out.append(_gap(i - last - 1))
        if i == last + 1 and i in continued:
            out[-1] += lines[i]  # the rest of the same line: no break that the output lacks
        else:
            out.append(lines[i])
        last = i
    if last < len(lines) - 1:
        out.append(_gap(len(lines) - 1 - last))
    return "\n".join(out)


def extractive_summary(text: str, limit: int, *, note: str) -> str | None:
    r"""``text`` summarized in at most ``limit`` characters, or None when no summary fits.

    Args:
        text: The output, longer than ``limit``.
        limit: The longest summary (header included).
        note: Where the full output is, for the header.

    Examples:
        >>> log = "\n".join(["start"] + [f"ok test {i}" for i in range(300)] + ["end"])
        >>> log = log.replace("ok test 150", "FAILED test 150: KeyError 'tide'")
        >>> summary = extractive_summary(log, 400, note="see o1")
        >>> print(summary)  # doctest: +ELLIPSIS
        [Extractive summary of a 3,...-character output (302 lines): ...; see o1]
        start
        ...
        FAILED test 150: KeyError 'tide'
        ...
        end
        >>> len(summary) <= 400
        True
    """
    lines, continued = _lines(text)
    header = summary_header(len(text), len(lines), note)
    room = limit - len(header)
    if room < 2 * len(_gap(len(lines))) + 20:
        return None
    chosen: set[int] = set()
    n = len(lines)
    # First the head and the tail, each in its share; then the richest lines in what is left.
    spare = _take(lines, list(range(n)), int(room * _HEAD), chosen)
    spare = _take(lines, list(range(n - 1, -1, -1)), int(room * _TAIL) + spare, chosen)
    rest = room - (int(room * _HEAD) + int(room * _TAIL)) + spare
    scores = _scores(lines)
    _take(lines, sorted(range(n), key=lambda i: (-scores[i], i)), rest, chosen)
    body = _render(lines, chosen, continued)
    while len(header) + len(body) > limit and chosen:
        chosen.discard(max(chosen, key=lambda i: (-scores[i], i)))  # the weakest goes
        body = _render(lines, chosen, continued)
    return header + body if chosen else None
