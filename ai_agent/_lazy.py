"""Public names of a package imported on first use (PEP 562).

A package lists where each name lives; importing the package then costs nothing until a name is
used, and importing one of its light modules does not load the heavy ones. ``ai_agent``,
``ai_agent.models`` and ``ai_agent.graph`` use it.

Examples:
    >>> import types, sys
    >>> pkg = types.ModuleType("pkg")
    >>> sys.modules["pkg"] = pkg
    >>> pkg.__getattr__, pkg.__dir__ = lazy_names("pkg", {"dumps": "json"})
    >>> pkg.dumps([1]), "dumps" in dir(pkg)
    ('[1]', True)
    >>> del sys.modules["pkg"]
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, homes: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose names live in ``homes``.

    Args:
        package: The package's ``__name__``.
        homes: Each public name and the module it is imported from.
    """
    namespace = vars(sys.modules[package])

    def __getattr__(name: str) -> Any:  # noqa: N807 - the name PEP 562 looks for
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value  # the next access is a plain lookup
        return value

    def __dir__() -> list[str]:  # noqa: N807 - the name PEP 562 looks for
        return sorted({*namespace, *homes})

    return __getattr__, __dir__
