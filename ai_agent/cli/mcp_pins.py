"""``ai-agent mcp pins`` and ``ai-agent mcp accept``: the pinned MCP tool definitions.

Each MCP server's tool definitions are pinned when the server is first seen; a definition that
changes later, or a tool the server adds, is withheld until a person accepts it (docs/mcp.md,
"Pinned tool definitions"). ``mcp pins [SERVER]`` lists the pins of one database (``--db``) and
what awaits acceptance; ``mcp accept SERVER TOOL...`` (or ``--all``) shows how each definition
changed, as a unified diff of its JSON, and makes the new one the pin.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
from collections.abc import Mapping
from typing import Any

from ai_agent.cli._common import Parents, UsageError, archive_of, run_closing, run_listing
from ai_agent.cli._printing import format_table, print_json, stored_minute
from ai_agent.visible import visible

__all__ = ["add_pin_commands"]

_DIGEST_CHARS = 12


def add_pin_commands(commands: Any, parents: Parents) -> None:
    """Add ``mcp pins`` and ``mcp accept`` to the ``mcp`` command's subcommands."""
    pins = commands.add_parser(
        "pins",
        parents=[parents.common],
        help="list the pinned MCP tool definitions and those awaiting acceptance",
        description="The MCP tool definitions pinned in one database (--db): each server's "
        "tools are pinned when it is first seen; a changed or new tool is withheld until "
        "`ai-agent mcp accept` accepts it.",
    )
    pins.add_argument("server", nargs="?", help="only this server's tools")
    pins.set_defaults(handler=_list)
    accept = commands.add_parser(
        "accept",
        parents=[parents.common],
        help="show how a withheld MCP tool's definition changed, and accept it",
        description="Print a unified diff of each tool's pinned and new definition, and make "
        "the new one its pin: the tool is offered again from the next connection.",
    )
    accept.add_argument("server", help="the MCP server's name")
    accept.add_argument("tools", nargs="*", metavar="TOOL", help="the server's name of a tool")
    accept.add_argument("--all", action="store_true", help="every tool of SERVER awaiting it")
    accept.set_defaults(handler=_accept)


def _state(pin: Mapping[str, Any]) -> str:
    if pin["problem"] is not None:  # never trusted: its tool stays withheld
        return f"NOT TRUSTED: {pin['problem']}"
    if pin["state"] == "pinned":
        return "pinned"
    return f"{pin['state']}, awaiting acceptance"


def _short(digest: str | None) -> str:
    return digest[:_DIGEST_CHARS] if digest else ""


def _list(args: argparse.Namespace) -> int:
    archive = archive_of(args, listing=True)
    pins = run_listing(archive, lambda: archive.store.list_pins(args.server))
    if args.json:
        print_json(pins)
        return 0
    if not pins:
        print("no pinned MCP tools" + (f" of server {visible(args.server)}" if args.server else ""))
        return 0
    rows = [
        (
            p["server"],
            p["tool"],
            _short(p["digest"]),
            _short(p["pending_digest"]),
            _state(p),
            stored_minute(p["first_seen"]),
            "first use"
            if p["accepted_at"] is None and p["digest"]
            else stored_minute(p["accepted_at"]),
        )
        for p in pins
    ]
    head = ("server", "tool", "digest", "pending", "state", "first seen", "accepted at")
    print(format_table(head, rows))
    if any(p["pending_digest"] or p["problem"] for p in pins):
        print("\nreview and accept a withheld tool with `ai-agent mcp accept SERVER TOOL`")
    return 0


def _pretty(text: str | None) -> list[str]:
    """A stored definition as indented JSON lines (none for no definition)."""
    if text is None:
        return []
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text.splitlines()
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


def _diff(pin: Mapping[str, Any]) -> list[str]:
    """The unified diff from a tool's pinned definition to its pending one."""
    where = f"{pin['server']}/{pin['tool']}"
    return list(
        difflib.unified_diff(
            _pretty(pin["definition"]),
            _pretty(pin["pending_definition"]),
            fromfile=f"{where} (pinned {_short(pin['digest']) or 'nothing'})",
            tofile=f"{where} (new {_short(pin['pending_digest'])})",
            lineterm="",
        )
    )


def _accept(args: argparse.Namespace) -> int:
    from ai_agent.errors import RunError

    if args.all == bool(args.tools):
        raise UsageError("name the tools to accept, or pass --all for every one awaiting it")
    archive = archive_of(args, listing=True)
    wanted = None if args.all else list(dict.fromkeys(args.tools))
    try:
        # A write: not through `run_listing`, which may run its read a second time.
        accepted = run_closing(
            contextlib.aclosing(archive), archive.store.accept_pins(args.server, wanted)
        )
    except RunError as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        print_json([{**pin, "diff": _diff(pin)} for pin in accepted])
        return 0
    for pin in accepted:
        # The definitions are the server's words: every line escaped like any listing.
        for line in _diff(pin):
            print(visible(line))
        print(f"accepted {visible(pin['tool'])} of MCP server {visible(pin['server'])}\n")
    print("the accepted tools are offered from the next connection to their server")
    return 0
