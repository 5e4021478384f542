"""The tool registry: one catalog of every tool a run may use, composed from toolsets.

Tools come from toolsets (`ai_agent.tools.toolsets`): the built-in tools, the user's tools
(`ToolRegistry.functions`, what `ToolRegistry.register` adds to), each MCP server, the
generated tools, and any toolset of the user's. The registry mounts them in order and keeps
their tools in one catalog, each tool owned by the toolset it came from; a name is held by one
tool, and a toolset's tool whose name (or wire name) another toolset holds is refused unless it
is registered to replace it. When a toolset's tools change, the registry takes the change
(`ToolRegistry.refresh`). It also enters them for the spans that may call them
(`ToolRegistry.session`).

The registry is the Agent's catalog; which tools are *active* is run state (``active_tools``), so a
plan can activate a catalog tool mid-run and a fork keeps its own set. Besides registering and
unregistering, a tool can be disabled without removing it (it leaves the catalog the runs see until
it is enabled again), and tools can be selected together by group (``files``) or namespace
(``fs.*``).

Every change makes a new immutable `ToolSnapshot`. A run does not see
the registry directly but a `TurnView`, which pins one snapshot per cycle (when the draft
asks for the schemas): the model, the decision and the act stage of one cycle see the same tools,
even while the registry changes underneath (the toolsmaker changes it mid-run).
"""

from __future__ import annotations

import contextlib
import fnmatch
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ai_agent.context import CallReview, ToolInfo
from ai_agent.errors import ToolRegistrationError, UnknownToolError
from ai_agent.models.resilience import RetryPolicy
from ai_agent.state import Issue, ToolCall, ToolResult
from ai_agent.tools.naming import check_wire_name
from ai_agent.tools.schema import json_schema_validator
from ai_agent.tools.snapshot import (
    DEFAULT_MAX_RESULT_CHARS,
    DEFAULT_TOOL_TIMEOUT,
    ToolSnapshot,
    missing_env,
)
from ai_agent.tools.spec import ToolSpec
from ai_agent.tools.toolsets.base import Toolset
from ai_agent.tools.toolsets.functions import FunctionToolset
from ai_agent.tools.toolsets.spans import ToolsetSpans

__all__ = [
    "DEFAULT_TOOL_TIMEOUT",
    "Refresh",
    "Refused",
    "ToolRegistry",
    "TurnView",
    "make_tool_registry",
    "missing_env",
]

_GLOB = frozenset("*?[")


@dataclass(frozen=True)
class Refused:
    """A toolset's tool the registry did not take, and why."""

    spec: ToolSpec
    error: ToolRegistrationError


@dataclass(frozen=True)
class Refresh:
    """What a refresh of one toolset changed in the catalog.

    Attributes:
        added: Names the toolset holds now and did not before (in its order).
        refused: Its tools the registry did not take (a name or wire name taken, a bad schema).
    """

    added: list[str] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)


# What a mount does with a refresh (the default raises the first refusal).
RefreshHandler = Callable[[Refresh], None]


@dataclass
class _Mount:
    toolset: Toolset
    handler: RefreshHandler | None
    # The tools taken from the toolset, as they were offered: unchanged ones are not taken again.
    taken: dict[str, ToolSpec] = field(default_factory=dict)


class ToolRegistry(Mapping[str, ToolSpec]):
    """A mapping of tool name to ToolSpec, with registration, selection and execution.

    Args:
        tools: Tools in any supported form (see `as_tool_spec`), registered in `functions`.
        toolsets: Toolsets mounted first, in order (see `mount`).
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
        toolsets: Iterable[Toolset] = (),
        timeout: float = DEFAULT_TOOL_TIMEOUT,
        max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
    ):
        self._specs: dict[str, ToolSpec] = {}
        self._wire: dict[str, str] = {}
        self._owner: dict[str, Toolset] = {}
        self._mounts: dict[int, _Mount] = {}
        self._disabled: set[str] = set()
        self._snapshot: ToolSnapshot | None = None
        self.timeout = timeout
        self.max_result_chars = max_result_chars
        self._retry: RetryPolicy | None = None
        self._spans = ToolsetSpans(self.toolsets)
        for toolset in toolsets:
            self.mount(toolset)
        self.functions = FunctionToolset(name="functions")
        """The user's tools: what `register` adds to."""
        self.mount(self.functions)
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

    # Toolsets --------------------------------------------------------------------------------
    def toolsets(self) -> list[Toolset]:
        """The mounted toolsets, in the order they were mounted."""
        return [mount.toolset for mount in self._mounts.values()]

    def mount(self, toolset: Toolset, *, on_refresh: RefreshHandler | None = None) -> Refresh:
        """Add a toolset: its tools join the catalog now and follow its changes from now on.

        Args:
            toolset: The toolset.
            on_refresh: Called with what each refresh changed (`refresh`); without it, a
                refused tool raises its error to whoever changed the toolset.

        Returns:
            What its tools changed in the catalog.

        Raises:
            ToolRegistrationError: the toolset is mounted already, or (without ``on_refresh``)
                one of its tools was refused; then nothing of it stays mounted.
        """
        if id(toolset) in self._mounts:
            raise ToolRegistrationError(f"toolset {toolset.name!r} is mounted already")
        self._mounts[id(toolset)] = _Mount(toolset, on_refresh)
        toolset.watch(self._on_change)
        try:
            return self.refresh(toolset)
        except ToolRegistrationError:
            self.unmount(toolset)
            raise

    def unmount(self, toolset: Toolset) -> None:
        """Take a toolset and all its tools out of the catalog."""
        mount = self._mounts.pop(id(toolset), None)
        if mount is None:
            return
        toolset.unwatch(self._on_change)
        for name in self.names_of(toolset):
            self._drop(name)

    def owner(self, name: str) -> Toolset | None:
        """The toolset a tool of the catalog came from, or None."""
        return self._owner.get(name)

    def names_of(self, toolset: Toolset) -> list[str]:
        """The names of a toolset's tools in the catalog."""
        return [name for name, owner in self._owner.items() if owner is toolset]

    def _on_change(self, toolset: Toolset, takeover: frozenset[str]) -> None:
        self.refresh(toolset, takeover=takeover)

    def refresh(self, toolset: Toolset, *, takeover: Iterable[str] = ()) -> Refresh:
        """Take what changed in a mounted toolset's tools into the catalog.

        A changed or new tool is taken unless another toolset holds its name (or its wire
        name), except the names in ``takeover``; a tool it no longer offers leaves the catalog.
        The mount's handler gets the outcome (without one, a refusal raises).

        Raises:
            ToolRegistrationError: a refused tool, when the mount has no handler.
        """
        mount = self._mounts[id(toolset)]
        wanted = frozenset(takeover)
        offered = {spec.name: spec for spec in toolset.tools()}
        taken: dict[str, ToolSpec] = {}
        outcome = Refresh()
        for name, spec in offered.items():
            if mount.taken.get(name) is spec:
                taken[name] = spec  # unchanged
                continue
            held = self._owner.get(name) is toolset
            try:
                self._put(spec, toolset, replace=held or name in wanted)
            except ToolRegistrationError as exc:
                outcome.refused.append(Refused(spec, exc))
                continue
            taken[name] = spec
            if not held:
                outcome.added.append(name)
        for name in list(mount.taken):
            if name not in offered and self._owner.get(name) is toolset:
                self._drop(name)
        mount.taken = taken
        if mount.handler is not None:
            mount.handler(outcome)
        elif outcome.refused:
            raise outcome.refused[0].error
        return outcome

    def _put(self, spec: ToolSpec, owner: Toolset, *, replace: bool) -> None:
        """Hold ``spec`` under its name for ``owner``, or raise why not (nothing changes)."""
        wire = check_wire_name(spec.name)
        if spec.validator is None and spec.parameters is not None and not owner.schemas_checked:
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
        previous = self._owner.get(spec.name)
        self._specs[spec.name] = spec
        self._wire[wire] = spec.name
        self._owner[spec.name] = owner
        if previous is not None and previous is not owner:
            self._forget(previous, spec.name)
        self._changed()

    def _drop(self, name: str) -> ToolSpec:
        spec = self._specs.pop(name)
        self._wire = {w: n for w, n in self._wire.items() if n != name}
        self._disabled.discard(name)
        owner = self._owner.pop(name)
        self._forget(owner, name)
        self._changed()
        return spec

    def _forget(self, owner: Toolset, name: str) -> None:
        """``owner`` lost ``name``: it is told, and offers it anew if it ever wants it back."""
        mount = self._mounts.get(id(owner))
        if mount is not None:
            mount.taken.pop(name, None)
        owner.discard(name)

    # Lifecycle -------------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[list[Issue]]:
        """A span that may call the tools: every toolset entered for it (see `ToolsetSpans`).

        Yields the issues the toolsets report (an MCP server that could not start).
        """
        async with self._spans.session() as issues:
            yield issues

    def hold(self) -> None:
        """Keep the toolsets open between sessions until `aclose` (an ``async with`` block)."""
        self._spans.hold()

    async def aclose(self) -> None:
        """Leave what `hold` kept open."""
        await self._spans.aclose()

    # Registration ----------------------------------------------------------------------------
    def register(self, tool: Any, *, replace: bool = False, **options: Any) -> ToolSpec:
        """Add a tool in any supported form to `functions`; returns its spec.

        Args:
            tool: A ToolSpec, ``@tool`` function, BaseTool, pydantic model with ``__call__``,
                LangChain tool or typed function with a docstring.
            replace: Replace a tool of the same name (whichever toolset it came from) instead
                of refusing it.
            **options: ``name``, ``namespace``, ``category``, ``group``, ``description``,
                ``requires_env``, ``timeout`` overrides.

        Raises:
            ToolRegistrationError: an invalid tool, a name taken (without ``replace``), or a
                name whose wire form another tool already has.
        """
        return self.functions.add(tool, replace=replace, **options)

    def unregister(self, name: str) -> ToolSpec:
        """Remove a tool and return it. Runs pinned to an earlier snapshot keep it this cycle.

        Its toolset is told (`Toolset.discard`); one that offers it anew brings it back.
        """
        spec = self[name]  # an unknown name: UnknownToolError listing the known ones
        self._drop(name)
        return spec

    # Groups, namespaces, selection -----------------------------------------------------------
    def groups(self) -> dict[str, list[str]]:
        """Group name -> its tools' names (sorted)."""
        return self._names_by(lambda spec: spec.group)

    def namespaces(self) -> dict[str, list[str]]:
        """Namespace -> its tools' names (``fs`` -> ``["fs.read_file", ...]``)."""
        return self._names_by(lambda spec: spec.namespace)

    def _names_by(self, key: Callable[[ToolSpec], str | None]) -> dict[str, list[str]]:
        """``key(spec)`` -> the names of the tools it gives (sorted); tools without one left out."""
        out: dict[str, list[str]] = {}
        for name in sorted(self._specs):
            value = key(self._specs[name])
            if value:
                out.setdefault(value, []).append(name)
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
    def snapshot(self) -> ToolSnapshot:
        """The enabled tools, immutable (the same ToolSnapshot until the next change)."""
        if self._snapshot is None:
            enabled = {n: s for n, s in self._specs.items() if n not in self._disabled}
            self._snapshot = ToolSnapshot(
                enabled,
                timeout=self.timeout,
                retry=self._retry,
                max_result_chars=self.max_result_chars,
            )
        return self._snapshot

    def withheld(self, name: str) -> str | None:
        """Why a call of ``name`` is refused when a toolset holds that tool back, or None."""
        for toolset in self.toolsets():
            why = toolset.withheld(name)
            if why is not None:
                return why
        return None

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
    def pinned(self) -> ToolSnapshot:
        """The snapshot this cycle uses."""
        return self._pinned

    def schemas(self, names: list[str]) -> list[dict[str, Any]]:
        """Start of a cycle: pin the registry's current tools and return their schemas."""
        self._pinned = self._registry.snapshot()
        return self._pinned.schemas(names)

    def info(self, name: str) -> ToolInfo | None:
        """See `ToolSnapshot.info`."""
        return self._pinned.info(name)

    def withheld(self, name: str) -> str | None:
        """See `ToolRegistry.withheld` (asked now: a withheld tool is in no snapshot)."""
        return self._registry.withheld(name)

    def catalog(self) -> list[ToolInfo]:
        """See `ToolSnapshot.catalog`."""
        return self._pinned.catalog()

    def preview(self, call: ToolCall) -> str:
        """See `ToolSnapshot.preview`."""
        return self._pinned.preview(call)

    def review(self, call: ToolCall) -> CallReview:
        """See `ToolSnapshot.review`."""
        return self._pinned.review(call)

    def format_result(self, name: str, result: ToolResult) -> str:
        """See `ToolSnapshot.format_result`."""
        return self._pinned.format_result(name, result)

    async def execute(self, call: ToolCall, tool_ctx: dict[str, Any]) -> ToolResult:
        """See `ToolSnapshot.execute`."""
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
