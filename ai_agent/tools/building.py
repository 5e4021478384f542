"""The Agent's tool set: the built-in catalog plus the user's tools, and the ones active at start.

``Agent(tools=[...])`` takes any mix of

- names of catalog tools (``"read_file"``), groups (``"files"``), namespaces (``"fs"``) or globs
  (``"fs.*"``): activated from the catalog;
- tools in any supported form (ToolSpec, ``@tool`` function, BaseTool, pydantic model,
  LangChain tool): registered and activated. A tool named like a built-in replaces it (this is
  how a notes tool with an embedding function, or a differently configured ``run_bash``, is
  swapped in);
- toolsets (`ai_agent.tools.toolsets.Toolset`, a source of tools of the user's): mounted,
  and every tool they offer, now or later, activated;
- or a mapping ``{name: tool}``, which names (or renames) each tool.

The registry is composed of the built-in toolset and the user's (`ToolRegistry.functions`),
then the user's toolsets in order. Every other built-in stays in the catalog, inactive, for a
plan to activate.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ai_agent.config import ToolConfig, split_tool_names
from ai_agent.errors import ConfigError, UnknownToolError
from ai_agent.tools.adapters import as_tool_spec, is_tool
from ai_agent.tools.builtin import BUILTIN_NAMES
from ai_agent.tools.builtin.notes_rank import Embed
from ai_agent.tools.builtin.protected import ProtectedPaths
from ai_agent.tools.registry import Refresh, ToolRegistry
from ai_agent.tools.toolsets import BuiltinToolset, Toolset

__all__ = ["build_tool_set"]


def _items(tools: Any) -> Iterable[tuple[str | None, Any]]:
    if isinstance(tools, Mapping):
        return [(str(k), v) for k, v in tools.items()]
    if isinstance(tools, str):
        return [(None, name) for name in split_tool_names(tools)]
    return [(None, t) for t in tools]


def build_tool_set(
    tools: Any,
    *,
    config: ToolConfig | None = None,
    workdir: str | os.PathLike[str] = ".",
    embed: Embed | None = None,
    protected: ProtectedPaths | None = None,
    prepare: Callable[[ToolRegistry], None] | None = None,
) -> tuple[ToolRegistry, list[str]]:
    """The registry (built-ins plus the user's tools) and the names active at the start.

    ``protected`` is the engine's own state, out of reach of the built-in tools. ``prepare``
    gets the registry before the tools are selected, to mount what names may select (the
    Agent's generated tools), so that ``"word_count"`` names a generated tool like any other.

    Raises:
        ConfigError: an unknown name, or an object that is not a tool.
        ToolRegistrationError: a tool that is invalid (no description, bad name...).

    Examples:
        >>> registry, active = build_tool_set(["calculator", "search"])
        >>> active
        ['calculator', 'glob_search', 'grep_search']
    """
    config = config or ToolConfig()
    registry = ToolRegistry(
        toolsets=[BuiltinToolset(config, workdir=workdir, embed=embed, protected=protected)],
        timeout=config.timeout,
        max_result_chars=config.max_result_chars,
    )
    if prepare is not None:
        prepare(registry)
    active: list[str] = []
    for key, item in _items(tools if tools is not None else ()):
        if isinstance(item, str):
            try:
                names = registry.select(item)
            except UnknownToolError as exc:
                raise ConfigError(str(exc)) from None
        elif isinstance(item, Toolset):
            names = registry.mount(item, on_refresh=_activating(active)).added
        else:
            if not is_tool(item):
                raise ConfigError(
                    f"cannot use {item!r} as a tool: pass a catalog name, a ToolSpec, a @tool "
                    "function, a BaseTool, a pydantic model with __call__ or a LangChain tool"
                )
            spec = as_tool_spec(item, name=key)
            registry.register(spec, replace=spec.name in BUILTIN_NAMES)
            names = [spec.name]
        active += [n for n in names if n not in active]
    return registry, active


def _activating(active: list[str]) -> Callable[[Refresh], None]:
    """A user's toolset's mount: tools it adds later are active too; a refused one raises."""

    def handle(refresh: Refresh) -> None:
        if refresh.refused:
            raise refresh.refused[0].error
        active.extend(n for n in refresh.added if n not in active)

    return handle
