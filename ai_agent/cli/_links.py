r"""The final answer's sources in a terminal: OSC 8 links where the terminal has them.

A terminal that supports OSC 8 (most do) shows ``ESC ] 8 ; ; URI ESC \\ label ESC ] 8 ; ; ESC \\``
as a clickable ``label``; one that does not shows the label alone. Links are written only to a
terminal (stdout a tty, ``TERM`` not ``dumb``) unless ``--links always`` asks; ``--links never``
or a pipe gives plain paths. Every target is a URI a tool returned and `link_target` accepts
(file or http(s), printable ASCII), and every label is made visible first, so no value can end
the link sequence or write one of its own.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any, Literal, TextIO

from ai_agent.visible import link_target, visible

__all__ = ["LinkMode", "format_sources", "link", "linked_answer", "links_wanted"]

LinkMode = Literal["auto", "always", "never"]
# A marker in an answer as shown: text in brackets, no bracket or line break inside.
_MARKER = re.compile(r"\[([^\[\]\n]+)\]")


def links_wanted(mode: str, stream: TextIO) -> bool:
    """Whether to write OSC 8 links to ``stream``: ``auto`` means a terminal that is not dumb."""
    if mode == "always":
        return True
    if mode == "never":
        return False
    isatty = getattr(stream, "isatty", None)
    terminal = bool(isatty is not None and isatty())
    return terminal and os.environ.get("TERM", "") not in ("", "dumb")


def link(target: str, label: str) -> str:
    r"""``label`` as an OSC 8 link to ``target`` (which `link_target` accepted).

    Examples:
        >>> link("file:///n/tides.md", "tides.md")
        '\x1b]8;;file:///n/tides.md\x1b\\tides.md\x1b]8;;\x1b\\'
    """
    return f"\x1b]8;;{target}\x1b\\{label}\x1b]8;;\x1b\\"


def _where(uri: str) -> str:
    """A plain form of a target: a local file's path, or the URL."""
    if uri.lower().startswith("file://"):
        # Imported here: urllib.request loads http.client, email and ssl, which every command
        # would pay for at start-up (the printing helpers are imported by all of them).
        import urllib.parse
        import urllib.request

        return urllib.request.url2pathname(urllib.parse.urlsplit(uri).path)
    return uri


def format_sources(citations: Sequence[Any], *, links: bool) -> str:
    """The "Sources" block printed under an answer: one chip per cited source.

    Examples:
        >>> cited = [{"id": "n1", "path": "tides.md", "section": "Tides",
        ...           "uri": "file:///notes/tides.md", "claims": ["..."]}]
        >>> print(format_sources(cited, links=False))
        Sources:
          [n1] tides.md #Tides  /notes/tides.md
    """
    lines = ["Sources:"]
    for c in citations:
        label = visible(str(c.get("path", ""))) + (
            f" #{visible(str(c['section']))}" if c.get("section") else ""
        )
        target = link_target(c.get("uri"))
        if target is None:
            chip = label
        elif links:
            chip = link(target, label)
        else:
            chip = f"{label}  {visible(_where(target))}"
        lines.append(f"  [{visible(str(c.get('id', '')))}] {chip}")
    return "\n".join(lines)


def linked_answer(shown: str, citations: Sequence[Any]) -> str:
    r"""The answer as shown (made visible already) with each cited marker a link to its source.

    Examples:
        >>> cited = [{"id": "n1", "path": "t.md", "uri": "file:///t.md"}]
        >>> linked_answer("Twice a day [n1].", cited).count("\x1b]8;;file:///t.md")
        1
    """
    targets: dict[str, str] = {}
    for c in citations:
        target = link_target(c.get("uri"))
        if target is None:
            continue
        for name in (str(c.get("id", "")), str(c.get("path", ""))):
            marker = visible(name)
            if marker:
                targets.setdefault(marker, target)
    if not targets:
        return shown

    # One pass over the answer: a link written for one marker is never searched again, so a
    # target holding another's marker (``https://a.example/[n2]``) is not cut by a second link.
    def linked(match: re.Match[str]) -> str:
        marker = match.group(1)
        target = targets.get(marker)
        return match.group() if target is None else f"[{link(target, marker)}]"

    return _MARKER.sub(linked, shown)
