"""The tool registry: one catalog of every tool a run may use, changeable at run time.

The registry is the Agent's catalog; which tools are *active* is run state (``active_tools``), so a
plan can activate a catalog tool mid-run and a fork keeps its own set. Besides registering and
unregistering, a tool can be disabled without removing it (it leaves the catalog the runs see until
it is enabled again), and tools can be selected together by group (``files``) or namespace
(``fs.*``).

Every change makes a new immutable `ToolSet`. A run does not see
the registry directly but a `TurnView`, which pins one snapshot per cycle (when the draft
asks for the schemas): the model, the decision and the act stage of one cycle see the same tools,
even while the registry changes underneath (the toolsmaker changes it mid-run).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from ai_agent.context import CallReview, ToolInfo
from ai_agent.errors import ToolRegistrationError, UnknownToolError
from ai_agent.models.resilience import RetryPolicy
from ai_agent.state import ToolCall, ToolResult
from ai_agent.tools.adapters import as_tool_spec
from ai_agent.tools.naming import check_wire_name
from ai_agent.tools.schema import json_schema_validator
from ai_agent.tools.spec import ToolSpec
from ai_agent.tools.toolset import (
    DEFAULT_MAX_RESULT_CHARS,
    DEFAULT_TOOL_TIMEOUT,
    ToolSet,
    missing_env,
)

__all__ = [
    "DEFAULT_TOOL_TIMEOUT",
    "ToolRegistry",
    "TurnView",
    "make_tool_registry",
    "missing_env",
]

_GLOB = frozenset("*?[")


class ToolRegistry(Mapping[str, ToolSpec]):
    """A mapping of tool name to ToolSpec, with registration, selection and execution.

    Args:
        tools: Tools in any supported form (see `as_tool_spec`).
        timeout: Seconds a call may take when its tool does not say (30 by default).
        max_result_chars: The largest result a tool may return, in characters of its JSON form;
            a larger one becomes an error result (``OUTPUT_TOO_LARGE``). None: no limit.

    Examples:
        >>> from ai_agent.tools.spec import ToolSpec, ToolCategory
        >>> reg = make_tool_registry([ToolSpec("echo", lambda a, c: {"status": "ok",
        ...     "content": a.get("text")}, description="Echo text.",
        ...     category=ToolCategory.READ_ONLY, group="demo")])
        >>> sorted(reg)
        ['echo']
        >>> reg.disable("demo")
        ['echo']
        >>> reg.snapshot().names, reg.is_enabled("echo")
        ([], False)
    """

    def __init__(
        self,
        tools: Iterable[Any] = (),
        *,
        timeout: float = DEFAULT_TOOL_TIMEOUT,
        max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
    ):
        self._specs: dict[str, ToolSpec] = {}
        self._wire: dict[str, str] = {}
        self._disabled: set[str] = set()
        self._snapshot: ToolSet | None = None
        self.timeout = timeout
        self.max_result_chars = max_result_chars
        self._retry: RetryPolicy | None = None
        for item in tools:
            self.register(item)

    # Mapping protocol ------------------------------------------------------------------------
    def __getitem__(self, name: str) -> ToolSpec:
        try:
            return self._specs[name]
        except KeyError:
            raise UnknownToolError(
                f"no tool named {name!r}; known tools: {', '.join(sorted(self._specs)) or 'none'}"
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __iter__(self) -> Iterator[str]:
        return iter(self._specs)

    def __len__(self) -> int:
        return len(self._specs)

    def _changed(self) -> None:
        self._snapshot = None

    @property
    def retry(self) -> RetryPolicy | None:
        """Retries of retryable failures (``ai_agent.models.resilience``); None: none."""
        return self._retry

    @retry.setter
    def retry(self, policy: RetryPolicy | None) -> None:
        self._retry = policy
        self._changed()

    # Registration ----------------------------------------------------------------------------
    def register(self, tool: Any, *, replace: bool = False, **options: Any) -> ToolSpec:
        """Add a tool in any supported form; returns its spec.

        Args:
            tool: A ToolSpec, ``@tool`` function, BaseTool, pydantic model with ``__call__``,
                LangChain tool or typed function with a docstring.
            replace: Replace a tool of the same name instead of refusing it.
            **options: ``name``, ``namespace``, ``category``, ``group``, ``description``,
                ``requires_env``, ``timeout`` overrides.

        Raises:
            ToolRegistrationError: an invalid tool, a name taken (without ``replace``), or a
                name whose wire form another tool already has.
        """
        spec = as_tool_spec(tool, **options)
        wire = check_wire_name(spec.name)
        if spec.validator is None and spec.parameters is not None:
            # A broken schema is a bug in the tool: say so now, not at its first call.
            json_schema_validator(spec.schema["function"]["parameters"], owner=spec.name)
        if spec.name in self._specs and not replace:
            raise ToolRegistrationError(
                f"a tool named {spec.name!r} is already registered; "
                "unregister it first or pass replace=True"
            )
        holder = self._wire.get(wire)
        if holder is not None and holder != spec.name:
            raise ToolRegistrationError(
                f"tool {spec.name!r} would be called {wire!r} by the model, which is already "
                f"the name of {holder!r}; rename one of them"
            )
        self._specs[spec.name] = spec
        self._wire[wire] = spec.name
        self._changed()
        return spec

    def unregister(self, name: str) -> ToolSpec:
        """Remove a tool and return it. Runs pinned to an earlier snapshot keep it this cycle."""
        spec = self[name]
        del self._specs[name]
        self._wire = {w: n for w, n in self._wire.items() if n != name}
        self._disabled.discard(name)
        self._changed()
        return spec

    # Groups, namespaces, selection -----------------------------------------------------------
    def groups(self) -> dict[str, list[str]]:
        """Group name -> its tools' names (sorted)."""
        out: dict[str, list[str]] = {}
        for name in sorted(self._specs):
            group = self._specs[name].group
            if group:
                out.setdefault(group, []).append(name)
        return out

    def namespaces(self) -> dict[str, list[str]]:
        """Namespace -> its tools' names (``fs`` -> ``["fs.read_file", ...]``)."""
        out: dict[str, list[str]] = {}
        for name in sorted(self._specs):
            namespace = self._specs[name].namespace
            if namespace:
                out.setdefault(namespace, []).append(name)
        return out

    def select(self, selectors: str | Sequence[str]) -> list[str]:
        """Tool names for selectors: a tool name, a group, a namespace, or a glob (``fs.*``).

        A name wins over a group of the same name. Order follows the selectors; no duplicates.

        Raises:
            UnknownToolError: a selector matches nothing; the message lists what exists.
        """
        items = [selectors] if isinstance(selectors, str) else list(selectors)
        out: list[str] = []
        groups, namespaces = self.groups(), self.namespaces()
        for selector in items:
            if selector in self._specs:
                found = [selector]
            elif selector in groups:
                found = groups[selector]
            elif selector in namespaces:
                found = namespaces[selector]
            elif _GLOB & set(selector):
                found = sorted(n for n in self._specs if fnmatch.fnmatchcase(n, selector))
            else:
                found = []
            if not found:
                raise UnknownToolError(self._unknown(selector, groups))
            out += [n for n in found if n not in out]
        return out

    def _unknown(self, selector: str, groups: Mapping[str, list[str]]) -> str:
        names = ", ".join(sorted(self._specs)) or "none"
        group_names = ", ".join(sorted(groups)) or "none"
        return f"unknown tool {selector!r}; tools: {names}; groups: {group_names}"

    # Enable / disable ------------------------------------------------------------------------
    def disable(self, selectors: str | Sequence[str]) -> list[str]:
        """Take tools out of the catalog runs see, without removing them; returns their names."""
        names = self.select(selectors)
        self._disabled.update(names)
        self._changed()
        return names

    def enable(self, selectors: str | Sequence[str]) -> list[str]:
        """Put disabled tools back; returns their names."""
        names = self.select(selectors)
        self._disabled.difference_update(names)
        self._changed()
        return names

    def is_enabled(self, name: str) -> bool:
        """True when the tool exists and is not disabled."""
        return name in self._specs and name not in self._disabled

    # Snapshots -------------------------------------------------------------------------------
    def snapshot(self) -> ToolSet:
        """The enabled tools as an immutable ToolSet (the same object until the next change)."""
        if self._snapshot is None:
            enabled = {n: s for n, s in self._specs.items() if n not in self._disabled}
            self._snapshot = ToolSet(
                enabled,
                timeout=self.timeout,
                retry=self._retry,
                max_result_chars=self.max_result_chars,
            )
        return self._snapshot

    def view(self) -> TurnView:
        """A per-run view that pins one snapshot per cycle (what a RunContext gets)."""
        return TurnView(self)

    # ToolBox protocol (on the current snapshot) ----------------------------------------------
    def info(self, name: str) -> ToolInfo | None:
        """What the stages need to know about an enabled tool, or None."""
        return self.snapshot().info(name)

    def catalog(self) -> list[ToolInfo]:
        """Every enabled tool, sorted by name."""
        return self.snapshot().catalog()

    def schemas(self, names: list[str]) -> list[dict[str, Any]]:
        """OpenAI function schemas (wire names) of the named enabled tools."""
        return self.snapshot().schemas(names)

    def preview(self, call: ToolCall) -> str:
        """A description of what the call would do, for a person deciding on it."""
        return self.snapshot().preview(call)

    def review(self, call: ToolCall) -> CallReview:
        """Schema problems and escalation of a call."""
        return self.snapshot().review(call)

    def format_result(self, name: str, result: ToolResult) -> str:
        """The text the model sees for a result."""
        return self.snapshot().format_result(name, result)

    async def execute(self, call: ToolCall, tool_ctx: dict[str, Any]) -> ToolResult:
        """Run one call on the current snapshot."""
        return await self.snapshot().execute(call, tool_ctx)


class TurnView:
    """The ToolBox a run sees: one registry snapshot per cycle.

    ``schemas`` is what the draft stage calls first in every cycle, so it takes a fresh snapshot;
    every other method answers from that pinned snapshot until the next cycle's ``schemas``. A
    view is made per run (per resume), so concurrent runs pin independently.

    Examples:
        >>> from ai_agent.tools.spec import ToolSpec
        >>> reg = ToolRegistry([ToolSpec("a", lambda x, c: 1, description="A.")])
        >>> view = reg.view()
        >>> _ = view.schemas(["a"])
        >>> _ = reg.unregister("a")
        >>> view.info("a")["name"]  # still there for the rest of this cycle
        'a'
        >>> view.schemas(["a"])  # the next cycle sees the change
        []
    """

    def __init__(self, registry: ToolRegistry) -> None:
        self._registry = registry
        self._pinned = registry.snapshot()

    @property
    def pinned(self) -> ToolSet:
        """The snapshot this cycle uses."""
        return self._pinned

    def schemas(self, names: list[str]) -> list[dict[str, Any]]:
        """Start of a cycle: pin the registry's current tools and return their schemas."""
        self._pinned = self._registry.snapshot()
        return self._pinned.schemas(names)

    def info(self, name: str) -> ToolInfo | None:
        """See `ToolSet.info`."""
        return self._pinned.info(name)

    def catalog(self) -> list[ToolInfo]:
        """See `ToolSet.catalog`."""
        return self._pinned.catalog()

    def preview(self, call: ToolCall) -> str:
        """See `ToolSet.preview`."""
        return self._pinned.preview(call)

    def review(self, call: ToolCall) -> CallReview:
        """See `ToolSet.review`."""
        return self._pinned.review(call)

    def format_result(self, name: str, result: ToolResult) -> str:
        """See `ToolSet.format_result`."""
        return self._pinned.format_result(name, result)

    async def execute(self, call: ToolCall, tool_ctx: dict[str, Any]) -> ToolResult:
        """See `ToolSet.execute`."""
        return await self._pinned.execute(call, tool_ctx)


def make_tool_registry(tools: Iterable[Any]) -> ToolRegistry:
    """Build a registry (a ``{name: ToolSpec}`` mapping) from tools in any supported form.

    Examples:
        >>> from ai_agent.tools.spec import ToolSpec
        >>> reg = make_tool_registry([ToolSpec("t", lambda a, c: {"status": "ok"},
        ...                                    description="A tool.")])
        >>> "t" in reg
        True
    """
    return ToolRegistry(tools)
