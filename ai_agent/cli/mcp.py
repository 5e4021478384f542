"""``ai-agent mcp list``: the configured MCP servers, whether they start, and their tools.

The servers come from the settings (``mcp_servers`` in ``config.yaml`` / ``config.toml``) and
from ``--config FILE`` (an MCP file: ``mcp_servers`` as in docs/mcp.md, or a settings file that
has them). Each server is started, asked for its tools, and stopped again; the exit code is 0
when every enabled server started, 1 otherwise.

Its tools are checked against the pins of the database (``--db``, else the settings'), as a
run's would be, when that database exists: a tool withheld there is said so, with the command
that accepts it. ``mcp pins`` and ``mcp accept`` are in `ai_agent.cli.mcp_pins`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ai_agent.cli._common import EXIT, Parents, UsageError
from ai_agent.cli._printing import format_table, print_json
from ai_agent.cli.mcp_pins import add_pin_commands
from ai_agent.visible import visible

if TYPE_CHECKING:
    from ai_agent.graph import AgentTools, RunDatabase
    from ai_agent.tools.mcp import McpServerStatus

__all__ = ["add_commands"]


def add_commands(sub: Any, parents: Parents) -> None:
    """Add ``mcp list``."""
    mcp = sub.add_parser("mcp", help="MCP servers: list them, their status and their tools")
    commands = mcp.add_subparsers(dest="mcp_command", metavar="COMMAND", required=True)
    listing = commands.add_parser(
        "list",
        parents=[parents.common],
        help="start each configured MCP server, show its status and tools, stop it",
        description="Start each configured MCP server (settings and --config FILE), show its "
        "status and tools, and stop it. Exit code 0 when all started, 1 otherwise.",
    )
    listing.add_argument("--no-tools", action="store_true", help="only the servers, no tools")
    listing.set_defaults(handler=_list)
    add_pin_commands(commands, parents)


def _catalog(args: argparse.Namespace) -> tuple[AgentTools, RunDatabase | None]:
    """The Agent's tools and MCP servers, without the Agent (its model stack is not needed).

    With the database whose pins the tools are checked against; None when there is none yet
    (nothing is pinned, and ``mcp list`` does not make a database).
    """
    from ai_agent.config import AgentSettings, load_mcp_config, load_settings
    from ai_agent.errors import ConfigError
    from ai_agent.graph import RunDatabase, StoredToolPins, tool_catalog

    settings = load_settings()
    servers: list[Any] = []
    if args.config:
        path = Path(args.config)
        try:
            servers = list(load_mcp_config(path))
        except ConfigError as exc:
            if "has no mcp_servers" not in str(exc):
                raise
            # Not an MCP file: a settings file (config.toml...) that may hold mcp_servers.
            settings = AgentSettings.load(path)
    found = RunDatabase.at(args.db, settings)
    database = found if found.exists() else None
    pins = StoredToolPins(database) if database is not None else None
    return tool_catalog(settings, mcp_servers=servers, pins=pins), database


def _list(args: argparse.Namespace) -> int:
    agent, database = _catalog(args)
    if not agent.mcp:
        raise UsageError(
            "no MCP servers are configured: list them under mcp_servers in config.yaml or "
            "config.toml, or pass --config FILE (see docs/mcp.md)"
        )
    import asyncio  # the servers are asked in an event loop: here, not at start-up

    statuses = asyncio.run(_statuses(agent, database))
    if args.json:
        print_json(
            [
                {**status, "tools": _tools(agent, status) if not args.no_tools else None}
                for status in statuses
            ]
        )
    else:
        print(_render(agent, statuses, with_tools=not args.no_tools))
    failed = [s for s in statuses if s["state"] != "running"]
    return EXIT["failed"] if failed else 0


async def _statuses(agent: AgentTools, database: RunDatabase | None) -> list[McpServerStatus]:
    try:
        await agent.mcp.start()
        return agent.mcp.status()
    finally:
        try:
            await agent.aclose()
        finally:
            if database is not None:
                await database.aclose()


def _tools(agent: AgentTools, status: McpServerStatus) -> list[dict[str, Any]]:
    listing = {t["name"]: t for t in agent.listing()}
    return [
        {
            "name": name,
            "wire_name": listing[name]["wire_name"],
            "category": listing[name]["category"],
            "policy": listing[name]["policy"],
            "description": listing[name]["description"],
        }
        for name in status["tools"]
        if name in listing
    ]


def _render(agent: AgentTools, statuses: list[McpServerStatus], *, with_tools: bool) -> str:
    rows = []
    for s in statuses:
        started = f"{s['started_ms']:.0f} ms" if s["started_ms"] is not None else ""
        rows.append(
            (
                s["name"],
                s["transport"],
                s["state"],
                str(s["pid"] or ""),
                str(len(s["tools"])) if s["state"] == "running" else "",
                started,
                s["server"] or "",
            )
        )
    head = ("server", "transport", "status", "pid", "tools", "start", "reports as")
    blocks = [format_table(head, rows)]
    # Names, descriptions and errors come from the servers: a hostile one chooses them.
    for s in statuses:
        lines = [f"{visible(s['name'])}: {visible(s['target'])}"]
        if s["error"]:
            lines.append(f"  error ({s['error_code']}): {visible(s['error'])}")
        for original, why in s.get("left_out", {}).items():
            lines.append(f"  left out {visible(original)}: {visible(why)}")
        withheld = s.get("withheld", {})
        if withheld:
            tools = ", ".join(f"{visible(name)} ({why})" for name, why in withheld.items())
            lines.append(
                f"  {len(withheld)} withheld until accepted: {tools}; `ai-agent mcp pins "
                f"{visible(s['name'])}` shows them, `ai-agent mcp accept` accepts them"
            )
        if with_tools:
            for tool in _tools(agent, s):
                description = str(tool["description"]).split("\n", 1)[0]
                if len(description) > 60:
                    description = description[:59] + "…"
                kind = f"{tool['category']} ({tool['policy']})"
                lines.append(f"  {visible(tool['name']):<32} {kind:<26} {visible(description)}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
