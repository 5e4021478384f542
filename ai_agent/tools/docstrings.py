"""A small Google-style docstring reader: the description and the per-argument text of a tool.

Only what a tool schema needs is read: the text before the first section (the description the
model sees) and the ``Args:`` section (each parameter's description). Other sections (Returns,
Raises, Example...) are skipped, so examples never leak into the prompt.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

__all__ = ["Docstring", "parse_docstring"]

_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Returns?|Yields?|"
    r"Raises|Examples?|Notes?|Attributes|See Also|Warnings?|Todo|References)\s*:\s*$"
)
_ARG_SECTIONS = frozenset(("Args", "Arguments", "Parameters", "Params"))
# "name (type): text", "name: text", "*args: text"
_ARG = re.compile(r"^\*{0,2}([A-Za-z_]\w*)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


@dataclass(frozen=True, slots=True)
class Docstring:
    """What a docstring says about a tool.

    Attributes:
        description: The text before the first section, paragraphs joined by blank lines.
        args: Parameter name -> its description (continuation lines joined with spaces).
    """

    description: str = ""
    args: dict[str, str] = field(default_factory=dict)


def _flush(args: dict[str, str], name: str | None, parts: list[str]) -> None:
    if name is not None:
        args[name] = " ".join(p for p in parts if p).strip()


def _read_args(lines: list[str]) -> dict[str, str]:
    args: dict[str, str] = {}
    name: str | None = None
    parts: list[str] = []
    base: int | None = None
    for raw in lines:
        if not raw.strip():
            continue
        indent = len(raw) - len(raw.lstrip())
        base = indent if base is None else base
        match = _ARG.match(raw.strip()) if indent <= base else None
        if match:
            _flush(args, name, parts)
            name, parts = match.group(1), [match.group(2).strip()]
        else:
            parts.append(raw.strip())
    _flush(args, name, parts)
    return args


def parse_docstring(doc: str | None) -> Docstring:
    """Read the description and the ``Args:`` of a Google-style docstring.

    Examples:
        >>> d = parse_docstring('''Add two numbers.
        ...
        ...     Args:
        ...         a: The first.
        ...         b (int): The second,
        ...             which may be negative.
        ...
        ...     Returns:
        ...         The sum.
        ...     ''')
        >>> d.description
        'Add two numbers.'
        >>> d.args
        {'a': 'The first.', 'b': 'The second, which may be negative.'}
    """
    if not doc:
        return Docstring()
    lines = inspect.cleandoc(doc).splitlines()
    head: list[str] = []
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines:
        match = _SECTION.match(line.strip()) if not line.startswith((" ", "\t")) else None
        if match:
            current = sections.setdefault(match.group(1), [])
        elif current is None:
            head.append(line)
        else:
            current.append(line)
    paragraphs = "\n".join(head).strip().split("\n\n")
    description = "\n\n".join(" ".join(p.split()) for p in paragraphs if p.strip())
    args: dict[str, str] = {}
    for name, body in sections.items():
        if name in _ARG_SECTIONS:
            args.update(_read_args(body))
    return Docstring(description=description, args=args)
