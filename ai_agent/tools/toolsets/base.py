"""Toolset: one source of tools, with one interface whatever the source.

A toolset offers tools (`Toolset.tools`: the ToolSpecs it has now, each with its own
function), has an ``async with`` lifecycle that the Agent enters for every span that may call
its tools (a run, a resume, a replay, a plan served, a direct call), and reports the problems
it met on entering that a run must hear at the gate before it goes on (`Toolset.issues`: an MCP
server that refused its key is an ``AUTH`` issue).

The built-in tools, the user's functions and ToolSpecs, each MCP server and the generated tools
are each one toolset; `ai_agent.tools.registry.ToolRegistry` composes them into the one catalog
runs see. A toolset whose tools change (a server restarted, a tool added) says so with
`Toolset.changed`, and every registry it is mounted in takes the change.

Adding a source of tools is one subclass and its registration
(``Agent(tools=[my_toolset])``, or ``registry.mount(my_toolset)``).

Examples:
    >>> from ai_agent.tools import ToolRegistry, ToolSpec
    >>> class Greetings(Toolset):
    ...     name = "greetings"
    ...     def tools(self):
    ...         return [ToolSpec("hello", lambda args, ctx: "hello", description="Say hello.")]
    >>> registry = ToolRegistry()
    >>> registry.mount(Greetings()).added
    ['hello']
    >>> registry.owner("hello").name
    'greetings'
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable, Sequence
from typing import Self

from ai_agent.state import Issue
from ai_agent.tools.spec import ToolSpec

__all__ = ["ChangeListener", "Toolset"]

# Called with the toolset that changed and the names it takes over from other toolsets.
ChangeListener = Callable[["Toolset", frozenset[str]], None]


class Toolset(abc.ABC):
    """A source of tools (see the module docstring).

    Subclasses implement `tools`; the lifecycle and `issues` default to nothing. A subclass
    need not call ``__init__``.

    Attributes:
        name: What the toolset is called in messages (an MCP toolset: its server's name).
        schemas_checked: Whether its tools' JSON schemas are known to be valid already, so the
            registry need not check them against the metaschema when it mounts them.
    """

    name: str = "toolset"
    schemas_checked: bool = False

    @abc.abstractmethod
    def tools(self) -> Sequence[ToolSpec]:
        """The tools this source offers now.

        Return the same ToolSpec objects while they do not change: the registry takes a new
        object for a changed tool.
        """

    async def __aenter__(self) -> Self:
        """A span that may call the tools begins (start what they need)."""
        return self

    async def __aexit__(self, *exc: object) -> None:  # noqa: B027 - nothing by default
        """The span ends (stop what was started for it)."""

    def issues(self) -> list[Issue]:
        """Problems met on entering that a run must hear before it goes on (gate issues)."""
        return []

    def withheld(self, name: str) -> str | None:
        """Why a call of ``name``, a tool this source holds back, is refused (None: it is not).

        A withheld tool is in no catalog (an MCP tool whose pinned definition changed): the
        call is refused with this reason instead of "no such tool".
        """
        return None

    def discard(self, name: str) -> None:  # noqa: B027 - nothing by default
        """The registry took this toolset's tool ``name`` out of the catalog.

        It was unregistered, or a tool of another source replaced it. A toolset that keeps its
        tools in a list drops it there; one that asks elsewhere (a server) may ignore this.
        """

    # Changes ---------------------------------------------------------------------------------
    def changed(self, *, takeover: Iterable[str] = ()) -> None:
        """Tell every registry this toolset is mounted in that its tools changed.

        Args:
            takeover: Names this toolset's tools may take from another toolset (a tool
                registered with ``replace=True``); any other taken name is refused.

        Raises:
            ToolRegistrationError: a registry refused a tool (when the mount lets it raise).
        """
        names = frozenset(takeover)
        for listener in list(self._listeners()):
            listener(self, names)

    def watch(self, listener: ChangeListener) -> None:
        """Call ``listener`` at every `changed` (a registry mounting the toolset does)."""
        self._listeners().append(listener)

    def unwatch(self, listener: ChangeListener) -> None:
        """Stop calling ``listener``."""
        listeners = self._listeners()
        if listener in listeners:
            listeners.remove(listener)

    def _listeners(self) -> list[ChangeListener]:
        # Kept in the instance's dict so that subclasses need not call an __init__ of ours.
        listeners: list[ChangeListener] = vars(self).setdefault("_toolset_listeners", [])
        return listeners
