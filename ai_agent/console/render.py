r"""The console's pages: Jinja2 templates shipped in the package, every value escaped.

Autoescaping is on for every template, so markup in a task, an answer, a command or a tool's
output is shown as text. The ``shown`` filter also makes hidden characters visible
(`ai_agent.visible.visible`: an ESC reads ``\x1b``, a right-to-left override ``\u202e``), so
what a person approves in the page is what would run. Nothing is marked safe: no filter or
template here returns markup built from stored text.
"""

from __future__ import annotations

import json
import time
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from ai_agent.visible import visible

__all__ = ["age", "duration", "pages", "shown"]


def shown(value: Any, mode: str = "line") -> str:
    r"""Untrusted text (or any value, as JSON) with its hidden characters as escapes.

    Examples:
        >>> shown("rm\x1b[2K\rls")
        'rm\\x1b[2K\\rls'
        >>> shown({"path": "a.txt"})
        '{"path": "a.txt"}'
    """
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return visible(text, "lines" if mode == "lines" else "text" if mode == "text" else "line")


def duration(seconds: float | None) -> str:
    """A short duration: ``850 ms``, ``12.3 s``, ``4 min``, ``2.5 h``.

    Examples:
        >>> duration(0.85), duration(12.34), duration(240), duration(9000), duration(None)
        ('850 ms', '12.3 s', '4 min', '2.5 h', '')
    """
    if seconds is None:
        return ""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def age(timestamp: float | None, now: float | None = None) -> str:
    """How long ago ``timestamp`` was, as `duration` says it, with "ago" (None: unknown).

    Examples:
        >>> age(100.0, now=130.0), age(None)
        ('30.0 s ago', 'unknown')
    """
    if timestamp is None:  # a time a damaged row does not hold; the row's error says why
        return "unknown"
    return f"{duration(max(0.0, (time.time() if now is None else now) - timestamp))} ago"


def pages() -> Environment:
    """The template environment: package templates, autoescape everywhere, strict names."""
    env = Environment(
        loader=PackageLoader("ai_agent.console", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(shown=shown, duration=duration, age=age)
    return env
