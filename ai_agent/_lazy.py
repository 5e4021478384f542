"""Public names a package imports on first use (PEP 562): ``ai_agent`` and ``ai_agent.graph``.

A package lists where each public name lives; importing the package imports none of them, so a
command that needs one part (reading stored runs, ``--help``) does not pay for the others.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, homes: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of a package whose names load on first use.

    Args:
        package: The package's name (for the error of an unknown name).
        homes: Each public name and the module it is imported from.
        namespace: The package's globals; a name, once imported, is kept there (the next
            access is a plain lookup), and its ``__all__`` is listed by ``__dir__``.

    Examples:
        >>> space = {"__all__": ["sqrt"]}
        >>> getattr_, dir_ = lazy_names("demo", {"sqrt": "math"}, space)
        >>> getattr_("sqrt")(9.0), "sqrt" in space, dir_()
        (3.0, True, ['__all__', 'sqrt'])
    """

    def load(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    def listing() -> list[str]:
        return sorted({*namespace, *namespace["__all__"]})

    return load, listing
