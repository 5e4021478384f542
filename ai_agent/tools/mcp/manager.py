"""Many MCP servers at once: each one a toolset in the registry; started, listed, stopped.

`McpManager` holds one `McpToolset <ai_agent.tools.mcp.toolset.McpToolset>` per configured
server, mounted in the tool registry: each server's tools are in the catalog as
``<server>.<tool>`` (and again after a restart or a ``tools/list_changed``, without the tools
that went away), and every call of those tools goes to the server's live session.

Scope: the Agent enters every toolset of its registry for a span that needs the tools (a run,
a resume, a direct call); each server starts with the first span and stops when the last one
ends, unless the registry holds them (an ``async with Agent(...)`` block). `McpManager.use`
is the same span over this manager's servers alone, with `McpManager.hold` and
`McpManager.aclose`. Each span that begins gives every server its restart allowance again
("restarted once per run").

The MCP client (``mcp``, ``httpx``, ``langchain-mcp-adapters``) is imported only when a server is
started, so the engine imports without it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ai_agent.config import McpServerConfig, load_mcp_config
from ai_agent.errors import ConfigError
from ai_agent.tools.mcp.pins import ToolPins
from ai_agent.tools.mcp.status import McpServerStatus
from ai_agent.tools.mcp.toolset import McpFailure, McpToolset
from ai_agent.tools.registry import Refresh, ToolRegistry
from ai_agent.tools.toolsets.spans import ToolsetSpans

if TYPE_CHECKING:
    from ai_agent.tools.mcp.connection import McpConnection

__all__ = ["McpFailure", "McpManager", "gather_servers"]


class McpManager:
    """The MCP servers of an Agent (see the module docstring).

    Args:
        servers: Server configurations (names must be unique).
        registry: Where their toolsets are mounted.
        on_activate: Called with the names of newly registered tools of ``active`` servers
            (the Agent adds them to the tools new runs start with).
        on_event: Called with a line about each lifecycle step.
        pins: Where the servers' tool definitions are pinned (`ai_agent.tools.mcp.pins`; the
            Agent's are in its run store). None: every definition is taken as it comes.

    Examples:
        >>> from ai_agent.tools import ToolRegistry
        >>> manager = McpManager([McpServerConfig(name="fs", command="npx", args=["-y", "x"])],
        ...                      registry=ToolRegistry())
        >>> [s["name"] + ":" + s["state"] for s in manager.status()]
        ['fs:stopped']
    """

    def __init__(
        self,
        servers: Iterable[McpServerConfig] = (),
        *,
        registry: ToolRegistry,
        on_activate: Callable[[list[str]], None] | None = None,
        on_event: Callable[[str], None] | None = None,
        pins: ToolPins | None = None,
    ) -> None:
        self.registry = registry
        self._pins = pins
        self._on_activate = on_activate
        self._on_event = on_event
        self._toolsets: dict[str, McpToolset] = {}
        self._spans = ToolsetSpans(lambda: list(self._toolsets.values()))
        for config in servers:
            self.add(config)

    # Configuration ---------------------------------------------------------------------------
    @property
    def servers(self) -> list[McpServerConfig]:
        """The configured servers, in order."""
        return [toolset.config for toolset in self._toolsets.values()]

    def __bool__(self) -> bool:
        return bool(self._toolsets)

    def add(self, config: McpServerConfig | Mapping[str, Any]) -> McpServerConfig:
        """Add a server; it starts with the next span (or `start`).

        Raises:
            ConfigError: the configuration is invalid or the name is taken.
        """
        config = _validated(config)
        if config.name in self._toolsets:
            raise ConfigError(f"an MCP server named {config.name!r} is already configured")
        toolset = McpToolset(config, on_event=self._on_event, pins=self._pins)
        self._toolsets[config.name] = toolset
        self.registry.mount(toolset, on_refresh=lambda refresh: self._refreshed(toolset, refresh))
        return config

    async def remove(self, name: str) -> None:
        """Stop a server and take its tools out of the registry."""
        toolset = self.toolset(name)
        await toolset.stop()
        self.registry.unmount(toolset)
        del self._toolsets[name]

    def toolset(self, name: str) -> McpToolset:
        """The toolset of a server.

        Raises:
            ConfigError: no server has this name.
        """
        try:
            return self._toolsets[name]
        except KeyError:
            known = ", ".join(self._toolsets) or "none"
            raise ConfigError(f"no MCP server named {name!r}; configured: {known}") from None

    def connection(self, name: str) -> McpConnection:
        """The connection of a server (made on first use)."""
        return self.toolset(name).connection

    def secret_values(self) -> list[str]:
        """The secret values of every server connected so far (its headers, auth and keys)."""
        return [
            value
            for toolset in self._toolsets.values()
            if toolset.connected
            for value in toolset.connection.secrets
        ]

    # Lifecycle -------------------------------------------------------------------------------
    async def start(self, names: Sequence[str] | None = None) -> list[McpFailure]:
        """Start the servers that are not running (all enabled ones by default), concurrently.

        Returns:
            The servers that could not be started, with what went wrong. Their tools stay out
            of the registry (or keep their last registration, whose calls then fail clearly).
        """
        wanted = (
            [self.toolset(name) for name in names]
            if names is not None
            else [t for t in self._toolsets.values() if t.config.enabled]
        )
        outcomes = await asyncio.gather(*(t.start() for t in wanted), return_exceptions=True)
        failures = []
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
            if outcome is not None:
                failures.append(outcome)
        return failures

    async def stop(self) -> None:
        """Stop every server (they start again with the next span)."""
        await asyncio.gather(*(t.stop() for t in self._toolsets.values()))

    def hold(self) -> None:
        """Keep the servers open between uses until `aclose` (an ``async with`` block)."""
        self._spans.hold()

    async def aclose(self) -> None:
        """Stop every server and stop holding them."""
        await self._spans.aclose()
        await self.stop()

    @asynccontextmanager
    async def use(self) -> AsyncIterator[list[McpFailure]]:
        """A span that needs these servers (the Agent's spans enter its whole registry).

        They are started, and stopped after the last span ends unless held. Yields the servers
        that could not be started.
        """
        async with self._spans.session():
            yield [t.failure for t in self._toolsets.values() if t.failure is not None]

    # Status ----------------------------------------------------------------------------------
    def status(self) -> list[McpServerStatus]:
        """Every configured server: state, pid, tools, restarts, last error."""
        out = []
        for name, toolset in self._toolsets.items():
            if toolset.connected:
                status = toolset.connection.status()
                status["tools"] = self.tool_names(name)
                status["left_out"] = dict(toolset.left_out_tools)
                status["withheld"] = dict(toolset.withheld_tools)
                out.append(status)
            else:
                out.append(_idle_status(toolset.config))
        return out

    async def health(self) -> dict[str, float | None]:
        """Ping every running server: milliseconds to answer, or None (not running, no answer)."""
        connected = [t for t in self._toolsets.values() if t.connected]
        answers = await asyncio.gather(*(t.connection.ping() for t in connected))
        pings = {t.name: answer for t, answer in zip(connected, answers, strict=True)}
        return {**dict.fromkeys(self._toolsets), **pings}

    # Tools -----------------------------------------------------------------------------------
    def tool_names(self, server: str) -> list[str]:
        """The registry names of a server's tools (after it was started)."""
        return self.registry.names_of(self.toolset(server))

    def _refreshed(self, toolset: McpToolset, refresh: Refresh) -> None:
        """A server's tools changed in the registry: report the refused, activate the new."""
        for refused in refresh.refused:
            toolset.left_out(toolset.original(refused.spec.name), refused.error)
        if toolset.config.active and refresh.added and self._on_activate is not None:
            self._on_activate(refresh.added)


def gather_servers(
    settings: Iterable[McpServerConfig] = (),
    files: str | Path | Sequence[str | Path] | None = None,
    servers: Iterable[McpServerConfig | Mapping[str, Any]] | None = None,
) -> list[McpServerConfig]:
    """The servers of an Agent: the settings', then each file's, then ``servers``.

    A server named like an earlier one replaces it, so a file or an argument can redefine a
    server of ``config.yaml``.

    Raises:
        ConfigError: a file cannot be read, or a server is invalid.

    Examples:
        >>> old = McpServerConfig(name="fs", command="old")
        >>> [s.command for s in gather_servers([old], None, [{"name": "fs", "command": "new"}])]
        ['new']
    """
    paths = [files] if isinstance(files, str | Path) else list(files or [])
    groups: list[Iterable[McpServerConfig | Mapping[str, Any]]] = [settings]
    groups += [load_mcp_config(path) for path in paths]
    groups.append(servers or [])
    merged: dict[str, McpServerConfig] = {}
    for group in groups:
        for item in group:
            server = item if isinstance(item, McpServerConfig) else _validated(item)
            merged.pop(server.name, None)
            merged[server.name] = server
    return list(merged.values())


def _validated(item: Mapping[str, Any] | McpServerConfig) -> McpServerConfig:
    if isinstance(item, McpServerConfig):
        return item
    try:
        return McpServerConfig.model_validate(dict(item))
    except ValueError as exc:
        raise ConfigError(_validation_text(exc)) from None


def _idle_status(config: McpServerConfig) -> McpServerStatus:
    return McpServerStatus(
        name=config.name,
        transport=str(config.transport),
        target=config.target,
        state="stopped",
        pid=None,
        server=None,
        tools=[],
        restarts=0,
        started_ms=None,
        error=None,
        error_code=None,
    )


def _validation_text(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    parts = []
    for problem in errors(include_url=False):
        where = ".".join(str(p) for p in problem["loc"])
        message = str(problem["msg"]).removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    return "invalid MCP server: " + "; ".join(parts)
