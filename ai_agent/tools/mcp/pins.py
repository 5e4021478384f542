"""Pinned MCP tool definitions: what is pinned, and the seam to where pins are kept.

A server chooses its tools' descriptions (which the model reads), input schemas and annotations
(which decide a tool's category, and so whether a call needs a person). A server that changes
one after a person came to trust it could slip instructions to the model or make a destructive
tool look read-only. So each tool's definition is pinned when its server is first seen (trust
on first use), and a later definition that differs, or a tool the server did not list then, is
withheld until a person accepts it (``ai-agent mcp accept``).

What is pinned (`tool_definition`): the canonical JSON (sorted keys, no whitespace) of the parts
the engine uses, ``name``, ``title``, ``description``, ``inputSchema``, ``outputSchema`` and
``annotations``, whichever the tool has, and its sha256 digest. The tools reach here already
scrubbed of the server's secrets (`ai_agent.tools.mcp.session.scrub_tools`), so no pin holds one.

Where pins are kept is not this layer's business: `ToolPins` is what the toolset asks, and the
Agent gives it one over its run store (``ai_agent.graph.tool_pins``).

Examples:
    >>> from types import SimpleNamespace as NS
    >>> d = tool_definition(NS(name="echo", description="Echo.", inputSchema={"type": "object"}))
    >>> d.text
    '{"description":"Echo.","inputSchema":{"type":"object"},"name":"echo"}'
    >>> withheld_message("fs", "echo", "changed").split(";")[0]
    "MCP server 'fs' changed the definition of its tool 'echo' since it was pinned"
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

__all__ = [
    "PINNED_PARTS",
    "PinState",
    "ToolDefinition",
    "ToolPins",
    "accept_command",
    "definition_digest",
    "tool_definition",
    "withheld_message",
]

PINNED_PARTS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")

PinState = Literal["changed", "new", "unreadable"]
"""Why a tool is withheld: its definition differs from its pin, it was not there when its
server was first pinned, or its pin cannot be read (a row changed behind the engine's back)."""


@dataclass(frozen=True)
class ToolDefinition:
    """One tool's definition as it is pinned.

    Attributes:
        name: The tool's name on its server.
        text: The canonical JSON of its pinned parts.
        digest: The sha256 of ``text``, in hex.
    """

    name: str
    text: str
    digest: str


class ToolPins(Protocol):
    """Where a server's tool definitions are pinned and checked."""

    async def check(self, server: str, tools: Sequence[ToolDefinition]) -> dict[str, PinState]:
        """The tools not to offer, each with why; first use of ``server`` pins them all.

        A withheld tool's definition is kept beside its pin for a person to review.
        """
        ...


def definition_digest(text: str) -> str:
    """The sha256 of a canonical definition, in hex."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _part(tool: Any, key: str) -> Any:
    value = getattr(tool, key, None)
    dump = getattr(value, "model_dump", None)
    if callable(dump):  # the annotations: a pydantic model of the MCP types
        return dump(by_alias=True, exclude_none=True, mode="json")
    return value


def tool_definition(tool: Any) -> ToolDefinition:
    """The pinned form of an MCP tool (read by its attributes: ``mcp`` need not be loaded)."""
    parts = {key: _part(tool, key) for key in PINNED_PARTS}
    present = {key: value for key, value in parts.items() if value is not None}
    text = json.dumps(
        present, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    return ToolDefinition(name=str(tool.name), text=text, digest=definition_digest(text))


def accept_command(server: str, tool: str) -> str:
    """The command that shows a withheld tool's new definition and accepts it."""
    return f"ai-agent mcp accept {shlex.quote(server)} {shlex.quote(tool)}"


_WHY = {
    "changed": "changed the definition of its tool {tool!r} since it was pinned",
    "new": "lists a tool {tool!r} that it did not list when it was first pinned",
    "unreadable": "has a tool {tool!r} whose pin cannot be read (`ai-agent mcp pins` says why)",
}


def withheld_message(server: str, tool: str, state: PinState) -> str:
    """What a call of a withheld tool is told, and a person with it: why, and what to do."""
    why = _WHY[state].format(tool=tool)
    return (
        f"MCP server {server!r} {why}; the tool is withheld until a person reviews and "
        f"accepts it: `{accept_command(server, tool)}`"
    )
