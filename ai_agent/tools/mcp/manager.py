"""Many MCP servers at once: start them together, keep their tools in the registry, stop them.

`McpManager` owns one `McpConnection` per configured
server. It starts them concurrently, registers each server's tools in the tool registry as
``<server>.<tool>`` (and again after a restart or a ``tools/list_changed``, removing tools that
went away), and routes every call of those tools to the server's live session.

Scope: `McpManager.use` marks a span that needs the servers (a run, a resume, a direct
call). The first use starts them; when the last use ends, they are stopped, unless the manager is
`held <McpManager.hold>` (an ``async with Agent(...)`` block), in which case they stay open
until `McpManager.aclose`. Each use that begins gives every server its restart allowance
again ("restarted once per run").

The MCP client (``mcp``, ``httpx``, ``langchain-mcp-adapters``) is imported only when a server is
started, so the engine imports without it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ai_agent.config import McpServerConfig, load_mcp_config
from ai_agent.errors import ConfigError, McpServerError, ToolRegistrationError
from ai_agent.issues import IssueKind, kind_of_error
from ai_agent.state import ToolResult
from ai_agent.tools.mcp.adapt import local_names, mcp_tool_spec, selected
from ai_agent.tools.mcp.status import McpServerStatus
from ai_agent.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from ai_agent.tools.mcp.connection import McpConnection

__all__ = ["McpFailure", "McpManager", "gather_servers"]

# The registry's timeout for an MCP tool: the server's own timeout is applied inside the call
# (with a typed result); this outer one only bounds a restart that happens before the call.
_OUTER_MARGIN = 5.0


@dataclass(frozen=True)
class McpFailure:
    """A server that could not be started.

    Attributes:
        server: Its name.
        code: The kind of gate issue it is: ``AUTH``, ``MISSING_ENV`` or ``TOOL_ERROR``.
        message: What went wrong and what to do (names the server, never a key).
        required: Whether a run needs it (``required: true`` in its configuration).
    """

    server: str
    code: IssueKind
    message: str
    required: bool


class McpManager:
    """The MCP servers of an Agent (see the module docstring).

    Args:
        servers: Server configurations (names must be unique).
        registry: Where their tools are registered.
        on_activate: Called with the names of newly registered tools of ``active`` servers
            (the Agent adds them to the tools new runs start with).
        on_event: Called with a line about each lifecycle step.

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
    ) -> None:
        self.registry = registry
        self._on_activate = on_activate
        self._on_event = on_event
        self._configs: dict[str, McpServerConfig] = {}
        self._connections: dict[str, McpConnection] = {}
        self._owned: dict[str, list[str]] = {}
        self._users = 0
        self._held = False
        self._lock = asyncio.Lock()
        for config in servers:
            self.add(config)

    # Configuration ---------------------------------------------------------------------------
    @property
    def servers(self) -> list[McpServerConfig]:
        """The configured servers, in order."""
        return list(self._configs.values())

    def __bool__(self) -> bool:
        return bool(self._configs)

    def add(self, config: McpServerConfig | Mapping[str, Any]) -> McpServerConfig:
        """Add a server; it starts with the next use (or `start`).

        Raises:
            ConfigError: the configuration is invalid or the name is taken.
        """
        config = _validated(config)
        if config.name in self._configs:
            raise ConfigError(f"an MCP server named {config.name!r} is already configured")
        self._configs[config.name] = config
        return config

    async def remove(self, name: str) -> None:
        """Stop a server and take its tools out of the registry."""
        self._config(name)
        connection = self._connections.pop(name, None)
        if connection is not None:
            await connection.stop()
        for tool in self._owned.pop(name, []):
            if tool in self.registry:
                self.registry.unregister(tool)
        del self._configs[name]

    def _config(self, name: str) -> McpServerConfig:
        try:
            return self._configs[name]
        except KeyError:
            known = ", ".join(self._configs) or "none"
            raise ConfigError(f"no MCP server named {name!r}; configured: {known}") from None

    def connection(self, name: str) -> McpConnection:
        """The connection of a server (made on first use)."""
        config = self._config(name)
        if name not in self._connections:
            from ai_agent.tools.mcp.connection import McpConnection

            self._connections[name] = McpConnection(
                config,
                on_tools=lambda tools: self._register(name, tools),
                on_event=self._on_event,
            )
        return self._connections[name]

    def secret_values(self) -> list[str]:
        """The secret values of every server connected so far (its headers, auth and keys)."""
        return [value for c in self._connections.values() for value in c.secrets]

    # Lifecycle -------------------------------------------------------------------------------
    async def start(self, names: Sequence[str] | None = None) -> list[McpFailure]:
        """Start the servers that are not running (all enabled ones by default), concurrently.

        Returns:
            The servers that could not be started, with what went wrong. Their tools stay out
            of the registry (or keep their last registration, whose calls then fail clearly).
        """
        wanted = (
            list(names)
            if names is not None
            else [c.name for c in self._configs.values() if c.enabled]
        )
        connections = [self.connection(name) for name in wanted]
        outcomes = await asyncio.gather(*(c.start() for c in connections), return_exceptions=True)
        failures = []
        for connection, outcome in zip(connections, outcomes, strict=True):
            if isinstance(outcome, McpServerError):
                failures.append(
                    McpFailure(
                        server=connection.name,
                        code=kind_of_error(outcome) or IssueKind.TOOL_ERROR,
                        message=str(outcome),
                        required=connection.config.required,
                    )
                )
            elif isinstance(outcome, BaseException):
                raise outcome
        return failures

    async def stop(self) -> None:
        """Stop every server (they start again with the next use)."""
        await asyncio.gather(*(c.stop() for c in self._connections.values()))

    def hold(self) -> None:
        """Keep the servers open between uses until `aclose` (an ``async with`` block)."""
        self._held = True

    async def aclose(self) -> None:
        """Stop every server and stop holding them."""
        self._held = False
        await self.stop()

    @asynccontextmanager
    async def use(self) -> AsyncIterator[list[McpFailure]]:
        """A span that needs the servers (a run).

        They are started, and stopped after the last span ends unless held. Yields the servers
        that could not be started.
        """
        if not self._configs:
            yield []
            return
        async with self._lock:
            self._users += 1
            try:
                for connection in self._connections.values():
                    connection.reset_restarts()
                failures = await self.start()
            except BaseException:
                self._users -= 1
                raise
        try:
            yield failures
        finally:
            async with self._lock:
                self._users -= 1
                if self._users == 0 and not self._held:
                    await self.stop()

    # Status ----------------------------------------------------------------------------------
    def status(self) -> list[McpServerStatus]:
        """Every configured server: state, pid, tools, restarts, last error."""
        out = []
        for name, config in self._configs.items():
            if name in self._connections:
                status = self._connections[name].status()
                status["tools"] = list(self._owned.get(name, []))
                out.append(status)
            else:
                out.append(_idle_status(config))
        return out

    async def health(self) -> dict[str, float | None]:
        """Ping every running server: milliseconds to answer, or None (not running, no answer)."""
        names = list(self._connections)
        answers = await asyncio.gather(*(self._connections[n].ping() for n in names))
        return {**dict.fromkeys(self._configs), **dict(zip(names, answers, strict=True))}

    # Tools -----------------------------------------------------------------------------------
    def tool_names(self, server: str) -> list[str]:
        """The registry names of a server's tools (after it was started)."""
        return list(self._owned.get(server, []))

    def _register(self, server: str, tools: Sequence[Any]) -> None:
        """(Re)register a server's tools after discovery; called by its connection."""
        config = self._configs[server]
        connection = self._connections[server]
        kept = [t for t in tools if selected(str(t.name), config.tools, config.exclude_tools)]
        names = local_names(server, [str(t.name) for t in kept])
        by_original = {str(t.name): t for t in kept}
        previous = set(self._owned.get(server, []))
        registered: list[str] = []

        async def invoke(tool: str, args: dict[str, Any]) -> ToolResult:
            return await connection.call(tool, args)

        for local, original in names.items():
            try:
                spec = mcp_tool_spec(
                    config,
                    by_original[original],
                    local,
                    invoke,
                    secret_env=connection.secret_env,
                    target=connection.target,
                    timeout=config.timeout + config.startup_timeout + _OUTER_MARGIN,
                )
                self.registry.register(spec, replace=spec.name in previous)
            except ToolRegistrationError as exc:
                self._event(f"MCP server {server!r}: tool {original!r} left out: {exc}")
                continue
            registered.append(spec.name)
        for gone in previous - set(registered):
            if gone in self.registry:
                self.registry.unregister(gone)
        self._owned[server] = registered
        new = [n for n in registered if n not in previous]
        if config.active and new and self._on_activate is not None:
            self._on_activate(new)

    def _event(self, text: str) -> None:
        if self._on_event is not None:
            self._on_event(text)


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
