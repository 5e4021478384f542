"""Tool names on the wire: OpenAI function names must match ``^[a-zA-Z0-9_-]{1,64}$``.

Namespaced tools are named with dots (``fs.read_file``), which the wire does not allow. A dot
is sent as ``__`` (``fs__read_file``). Decoding does not reverse the string: a tool may itself be
named ``a__b``, so the registry keeps an alias map (wire name -> tool name) and refuses, at
registration, a tool whose wire name another tool already uses. Everything inside the engine
(state, grants, plans, the journal) uses the dotted name; only the schemas sent to the model and
the model's own tool calls use the wire name.
"""

from __future__ import annotations

import re

from ai_agent.errors import ToolRegistrationError

__all__ = ["WIRE_NAME", "check_wire_name", "wire_name"]

WIRE_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}\Z")
_SEPARATOR = "__"


def wire_name(name: str) -> str:
    """The name the model sees for a tool.

    Examples:
        >>> wire_name("fs.read_file")
        'fs__read_file'
        >>> wire_name("calculator")
        'calculator'
    """
    return name.replace(".", _SEPARATOR)


def check_wire_name(name: str) -> str:
    """The wire name of ``name``, or ToolRegistrationError when the wire cannot carry it.

    Examples:
        >>> check_wire_name("fs.read_file")
        'fs__read_file'
        >>> check_wire_name("a." + "b" * 70)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ai_agent.errors.ToolRegistrationError: tool name 'a.bbbb...' is 73 characters on the ...
    """
    wire = wire_name(name)
    if not WIRE_NAME.match(wire):
        shown = name if len(name) <= 24 else name[:6] + "..."
        raise ToolRegistrationError(
            f"tool name {shown!r} is {len(wire)} characters on the wire (dots become '__'); "
            "OpenAI allows at most 64: use a shorter name or namespace"
        )
    return wire
