"""FunctionToolset: tools given as objects, kept in a list that can change.

Every supported form becomes a ToolSpec here (`ai_agent.tools.adapters.as_tool_spec`):
ToolSpecs, ``@tool`` functions, BaseTools, pydantic models with ``__call__``, LangChain tools
and typed functions with a docstring. The registry keeps the user's tools in one
(``ToolRegistry.functions``: what ``register`` adds to), and the built-in tools are one too
(`ai_agent.tools.toolsets.builtin.BuiltinToolset`).

Examples:
    >>> from ai_agent.tools import ToolRegistry, tool
    >>> @tool(category="read_only")
    ... def shout(text: str) -> str:
    ...     '''Upper-case a text.'''
    ...     return text.upper()
    >>> mine = FunctionToolset([shout], name="mine")
    >>> registry = ToolRegistry(toolsets=[mine])
    >>> mine.add(shout, name="yell").name in registry
    True
    >>> sorted(registry.names_of(mine))
    ['shout', 'yell']
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ai_agent.errors import ToolRegistrationError, UnknownToolError
from ai_agent.tools.adapters import as_tool_spec
from ai_agent.tools.spec import ToolSpec
from ai_agent.tools.toolsets.base import Toolset

__all__ = ["FunctionToolset"]


class FunctionToolset(Toolset):
    """Tools in any supported form, added and removed at will.

    Args:
        tools: The tools to start with.
        name: The toolset's name in messages.
    """

    def __init__(self, tools: Iterable[Any] = (), *, name: str = "functions") -> None:
        self.name = name
        self._specs: dict[str, ToolSpec] = {}
        for item in tools:
            self.add(item)

    def tools(self) -> Sequence[ToolSpec]:
        """The tools, in the order they were added."""
        return list(self._specs.values())

    def add(self, tool: Any, *, replace: bool = False, **options: Any) -> ToolSpec:
        """Add a tool in any supported form; returns its spec.

        Args:
            tool: The tool.
            replace: Replace a tool of the same name, in this toolset or (when mounted) in
                another toolset of the registry.
            **options: ``as_tool_spec``'s overrides (``name``, ``namespace``, ``category``...).

        Raises:
            ToolRegistrationError: an invalid tool, or its name taken (without ``replace``).
                Nothing changes.
        """
        spec = as_tool_spec(tool, **options)
        previous = self._specs.get(spec.name)
        if previous is not None and not replace:
            raise ToolRegistrationError(
                f"a tool named {spec.name!r} is already registered; "
                "unregister it first or pass replace=True"
            )
        self._specs[spec.name] = spec
        try:
            self.changed(takeover=[spec.name] if replace else [])
        except BaseException:
            # A registry refused it: this toolset must not offer what the catalog lacks.
            if previous is None:
                del self._specs[spec.name]
            else:
                self._specs[spec.name] = previous
            raise
        return spec

    def remove(self, name: str) -> ToolSpec:
        """Remove a tool and return it.

        Raises:
            UnknownToolError: no tool of this toolset has that name.
        """
        try:
            spec = self._specs.pop(name)
        except KeyError:
            raise UnknownToolError(f"toolset {self.name!r} has no tool named {name!r}") from None
        self.changed()
        return spec

    def discard(self, name: str) -> None:
        """The registry took the tool out (unregistered or replaced): forget it, quietly."""
        self._specs.pop(name, None)
