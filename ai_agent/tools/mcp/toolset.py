"""McpToolset: one MCP server as a toolset.

Its tools are the server's (those its configuration selects), as ``<server>.<tool>``
(`ai_agent.tools.mcp.adapt`), made again after every (re)start of the server and every
``tools/list_changed``; each calls the server's live session.

Entering it is a span that needs the server: the server is started unless it is running, and
gets its restart allowance back ("restarted once per run"). It counts its spans and stops the
server when the last one ends. A server that cannot be started leaves a `McpFailure`
(`McpToolset.failure`); for a required server it is also an issue the run's first draft raises
(`McpToolset.issues`: ``AUTH`` for a refused key, ``MISSING_ENV`` for a variable that is not
set, ``TOOL_ERROR`` otherwise), so a person can fix it and resume.

Each listing's tools are checked against their pins first (`ai_agent.tools.mcp.pins`), when
the toolset has pins and the server's ``pin_tools`` is on: a tool whose definition changed since
it was pinned, or that is new on a known server, is withheld (not in the catalog; a call by its
name is told why and what to do, `McpToolset.withheld`).

The MCP client is imported only when the server is first started.

Examples:
    >>> from ai_agent.config import McpServerConfig
    >>> server = McpToolset(McpServerConfig(name="fs", command="npx", args=["-y", "x"]))
    >>> server.name, server.tools(), server.issues()
    ('fs', [], [])
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

from ai_agent.errors import McpServerError, ToolRegistrationError
from ai_agent.issues import KINDS, IssueKind, as_state, kind_of_error
from ai_agent.state import Issue, ToolResult
from ai_agent.tools.mcp.adapt import local_names, mcp_tool_spec, selected
from ai_agent.tools.mcp.pins import PinState, ToolPins, tool_definition, withheld_message
from ai_agent.tools.naming import wire_name
from ai_agent.tools.spec import ToolSpec
from ai_agent.tools.toolsets.base import Toolset

if TYPE_CHECKING:
    from ai_agent.config import McpServerConfig
    from ai_agent.tools.mcp.connection import McpConnection

__all__ = ["McpFailure", "McpToolset"]

# The timeout of an MCP tool in the registry: the server's own timeout is applied inside the call
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

    def issue(self) -> Issue:
        """The gate issue a run hears before it goes on."""
        return Issue(
            code=as_state(self.code),
            severity=KINDS[self.code].severity,
            message=self.message,
            tool=None,
            call_id=None,
        )


class McpToolset(Toolset):
    """One MCP server's tools and lifecycle (see the module docstring).

    Args:
        config: The server's configuration.
        on_event: Called with a line about each lifecycle step and each tool left out.
        pins: Where its tool definitions are pinned (None: they are taken as they come).
    """

    def __init__(
        self,
        config: McpServerConfig,
        *,
        on_event: Callable[[str], None] | None = None,
        pins: ToolPins | None = None,
    ) -> None:
        self.config = config
        self.name = config.name
        self.failure: McpFailure | None = None
        """Why the last start failed (None: it did not)."""
        self._on_event = on_event
        self._connection: McpConnection | None = None
        self._specs: list[ToolSpec] = []
        self._originals: dict[str, str] = {}
        self.left_out_tools: dict[str, str] = {}  # a listed tool not offered: why
        self.withheld_tools: dict[str, PinState] = {}  # a tool not offered until accepted: why
        self._pins = pins if config.pin_tools else None
        self._refusals: dict[str, str] = {}  # a withheld tool's registry and wire names: why
        self._spans = 0
        self._lock = asyncio.Lock()

    # The toolset -----------------------------------------------------------------------------
    def tools(self) -> Sequence[ToolSpec]:
        """The server's tools as of its last tool list (none before it started)."""
        return list(self._specs)

    def issues(self) -> list[Issue]:
        """The failure of the last start, when the server is required."""
        failure = self.failure
        return [failure.issue()] if failure is not None and failure.required else []

    def withheld(self, name: str) -> str | None:
        """Why a call of ``name`` (a registry or wire name) is refused: its tool is withheld."""
        return self._refusals.get(name)

    def original(self, name: str) -> str:
        """The server's own name of one of its tools (``fs.read_file`` -> ``read_file``)."""
        return self._originals.get(name, name)

    async def __aenter__(self) -> Self:
        async with self._lock:
            self._spans += 1
            try:
                if self._connection is not None:
                    self._connection.reset_restarts()
                self.failure = None
                if self.config.enabled:
                    await self.start()
            except BaseException:
                self._spans -= 1
                raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        async with self._lock:
            self._spans -= 1
            if self._spans == 0:
                await self.stop()

    # The server ------------------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        """Whether a connection was made (the server was started at least once)."""
        return self._connection is not None

    @property
    def connection(self) -> McpConnection:
        """The server's connection (made on first use)."""
        if self._connection is None:
            from ai_agent.tools.mcp.connection import McpConnection

            self._connection = McpConnection(
                self.config, on_tools=self._discovered, on_event=self._on_event
            )
        return self._connection

    async def start(self) -> McpFailure | None:
        """Start the server unless it is running; returns why it could not be (or None).

        A failure is kept in `failure` too. Anything but a server problem is raised.
        """
        try:
            await self.connection.start()
        except McpServerError as exc:
            self.failure = McpFailure(
                server=self.name,
                code=kind_of_error(exc) or IssueKind.TOOL_ERROR,
                message=str(exc),
                required=self.config.required,
            )
            return self.failure
        self.failure = None
        return None

    async def stop(self) -> None:
        """Stop the server (it starts again with the next span or call)."""
        if self._connection is not None:
            await self._connection.stop()

    # Tools -----------------------------------------------------------------------------------
    async def _discovered(self, tools: Sequence[Any]) -> None:
        """The server listed its tools (after a start or a change): offer them anew."""
        config, connection = self.config, self.connection
        kept = [t for t in tools if selected(str(t.name), config.tools, config.exclude_tools)]
        names = local_names(self.name, [str(t.name) for t in kept])
        by_original: dict[str, Any] = {}
        repeated: list[str] = []
        for tool in kept:
            # A name listed twice: the first listing is offered. Taking the last (as a dict
            # comprehension would) gave the first's name another listing's description,
            # schema and category.
            if str(tool.name) in by_original:
                repeated.append(str(tool.name))
            else:
                by_original[str(tool.name)] = tool

        withheld = await self._check_pins(list(by_original.values()))

        async def invoke(tool: str, args: dict[str, Any]) -> ToolResult:
            return await connection.call(tool, args)

        specs: list[ToolSpec] = []
        self.left_out_tools = {}
        for original in dict.fromkeys(repeated):
            self.left_out(
                original,
                ToolRegistrationError(
                    f"the server lists a tool named {original!r} more than once; only its "
                    "first listing is offered (the server should give each tool its own name)"
                ),
            )
        self._refusals = {}
        for local, original in names.items():
            if original in withheld:
                why = withheld_message(self.name, original, withheld[original])
                name = f"{self.name}.{local}"
                self._refusals.update({name: why, wire_name(name): why})
                continue
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
            except ToolRegistrationError as exc:
                self.left_out(original, exc)
                continue
            self._originals[spec.name] = original
            specs.append(spec)
        self._specs = specs
        self.changed()

    def left_out(self, original: str, error: ToolRegistrationError) -> None:
        """Say that one of the server's tools is not in the catalog, and why."""
        self.left_out_tools[original] = str(error)
        if self._on_event is not None:
            self._on_event(f"MCP server {self.name!r}: tool {original!r} left out: {error}")

    async def _check_pins(self, tools: Sequence[Any]) -> dict[str, PinState]:
        """The tools to withhold (their pins say so), said once in a notice with the command."""
        self.withheld_tools = {}
        if self._pins is None:
            return {}
        try:
            withheld = await self._pins.check(self.name, [tool_definition(t) for t in tools])
        except Exception as exc:  # any failure withholds: pins are a defence
            # Pins that cannot be read prove nothing: offering the tools would trust the server.
            if self._on_event is not None:
                self._on_event(
                    f"MCP server {self.name!r}: its tools are withheld: their pins could not be "
                    f"checked ({type(exc).__name__}: {exc})"
                )
            self.withheld_tools = {str(t.name): "unreadable" for t in tools}
            return dict(self.withheld_tools)
        self.withheld_tools = dict(withheld)
        if withheld and self._on_event is not None:
            listed = ", ".join(f"{name!r} ({state})" for name, state in withheld.items())
            self._on_event(
                f"MCP server {self.name!r}: {len(withheld)} tool(s) withheld until a person "
                f"accepts them: {listed}; review and accept with `ai-agent mcp accept "
                f"{self.name} TOOL...` (`ai-agent mcp pins {self.name}` lists them)"
            )
        return dict(withheld)
