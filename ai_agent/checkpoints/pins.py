"""Pinned MCP tool definitions (``agent_tool_pins``): checked at each listing, listed, accepted.

One row per (server, tool's own name): the pinned definition (its canonical JSON and sha256,
`ai_agent.tools.mcp.pins`) and, while a server offers another one, that pending definition
beside it for a person to review. A server seen for the first time has all its tools pinned
(trust on first use); after that a tool whose digest differs, or one the server did not list
before (its row has a pending definition and no pinned one), is withheld until
``ai-agent mcp accept`` makes the pending definition the pin. A tool the server stops listing
keeps its pin.

A row is read as hostile input: a value of the wrong type, a definition that is not a JSON
object or does not match its digest makes a `ToolPin` that carries its ``problem`` instead of
raising, so a listing shows it, and its tool is withheld (never trusted) until accepted anew.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Sequence
from typing import Any, Literal, Protocol, TypedDict

from ai_agent.checkpoints._sql import Session, SqlStore, threaded
from ai_agent.errors import RunError

__all__ = [
    "PINS_DDL",
    "PIN_COLUMNS",
    "PinStore",
    "PinVerdict",
    "PinnedDefinition",
    "ToolPin",
    "tool_pin",
]

PIN_COLUMNS = (
    "server, tool, digest, definition, pending_digest, pending_definition, first_seen, accepted_at"
)

# Additive (``ai_agent.checkpoints.schema._ADDITIVE``), like ``agent_rules``: created when missing
# at any version. An older ai-agent does not read it, and takes definitions as they come.
# ``digest`` is NULL for a tool that is new on a known server (nothing accepted yet).
PINS_DDL = (
    """CREATE TABLE IF NOT EXISTS agent_tool_pins (
        server TEXT NOT NULL,
        tool TEXT NOT NULL,
        digest TEXT,
        definition TEXT,
        pending_digest TEXT,
        pending_definition TEXT,
        first_seen {real} NOT NULL,
        accepted_at {real},
        PRIMARY KEY (server, tool)
    )""",
)

_DIGEST = re.compile(r"[0-9a-f]{64}")

PinVerdict = Literal["changed", "new", "unreadable"]
"""Why a tool is withheld (`ai_agent.tools.mcp.pins.PinState` names the same three)."""


class PinnedDefinition(Protocol):
    """A tool's definition as it is pinned (`ai_agent.tools.mcp.pins.ToolDefinition`)."""

    @property
    def name(self) -> str:
        """The tool's name on its server."""

    @property
    def text(self) -> str:
        """The canonical JSON of its pinned parts."""

    @property
    def digest(self) -> str:
        """The sha256 of ``text``, in hex."""


def _digest(text: str) -> str:
    # As `ai_agent.tools.mcp.pins.definition_digest`; the store does not load the tools.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class ToolPin(TypedDict):
    """One pinned tool as the store reads it.

    ``state``: ``pinned``, ``changed`` (a pending definition differs from the pin) or ``new``
    (pending, nothing pinned yet). ``accepted_at`` is None for a pin made on first use.
    ``problem``: why the row cannot be trusted (its tool stays withheld), or None.
    """

    server: str
    tool: str
    digest: str | None
    definition: str | None
    pending_digest: str | None
    pending_definition: str | None
    first_seen: float
    accepted_at: float | None
    state: Literal["pinned", "changed", "new"]
    problem: str | None


def _definition_problem(digest: Any, text: Any, what: str) -> str | None:
    """What is wrong with a digest and its definition (both None is no definition)."""
    if digest is None and text is None:
        return None
    if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        return f"its {what} digest is not a sha256"
    if not isinstance(text, str):
        return f"its {what} definition is not text"
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        parsed = None
    if not isinstance(parsed, dict):
        return f"its {what} definition is not a JSON object"
    if _digest(text) != digest:
        return f"its {what} definition does not match its digest"
    return None


def tool_pin(row: Sequence[Any]) -> ToolPin:
    """A `ToolPin` from a row of `PIN_COLUMNS`; a row it cannot trust carries the reason.

    Examples:
        >>> pin = tool_pin(("fs", "echo", None, None, None, None, 1.0, None))
        >>> pin["problem"]
        'the pin of tool echo of fs cannot be trusted (it holds no definition)'
        >>> tool_pin(("fs", "echo", "x", "{}", None, None, 1.0, None))["problem"]
        'the pin of tool echo of fs cannot be trusted (its pinned digest is not a sha256)'
    """
    server, tool, digest, text, pending, pending_text, first_seen, accepted_at = row
    pin = ToolPin(
        server=str(server),
        tool=str(tool),
        digest=digest if isinstance(digest, str) else None,
        definition=text if isinstance(text, str) else None,
        pending_digest=pending if isinstance(pending, str) else None,
        pending_definition=pending_text if isinstance(pending_text, str) else None,
        first_seen=float(first_seen) if isinstance(first_seen, int | float) else 0.0,
        accepted_at=float(accepted_at) if isinstance(accepted_at, int | float) else None,
        state="pinned" if pending is None else "new" if digest is None else "changed",
        problem=None,
    )
    why = None
    if not isinstance(server, str) or not server or not isinstance(tool, str) or not tool:
        why = "it names no server or no tool"
    elif digest is None and pending is None:
        why = "it holds no definition"
    else:
        why = _definition_problem(digest, text, "pinned") or _definition_problem(
            pending, pending_text, "pending"
        )
    if why is not None:
        pin["problem"] = (
            f"the pin of tool {pin['tool']} of {pin['server']} cannot be trusted ({why})"
        )
    return pin


class PinStore(SqlStore):
    """The pinned tool definitions part of the run store (see the module docstring)."""

    @threaded
    def check_pins(self, server: str, tools: Sequence[PinnedDefinition]) -> dict[str, PinVerdict]:
        """The tools of ``server`` to withhold, each with why; first use pins them all.

        The pending definition of each withheld tool is stored beside its pin; a tool whose
        definition is its pin again loses a pending one.
        """
        now = time.time()
        with self._tx() as session:
            if session.one("SELECT 1 FROM agent_tool_pins WHERE server = ?", (server,)) is None:
                for tool in tools:  # first use; another process may be pinning them too
                    session.execute(
                        "INSERT INTO agent_tool_pins (server, tool, digest, definition, "
                        "first_seen) VALUES (?, ?, ?, ?, ?) ON CONFLICT (server, tool) DO NOTHING",
                        (server, tool.name, tool.digest, tool.text, now),
                    )
            return {
                tool.name: state
                for tool in tools
                if (state := _checked(session, server, tool, now)) is not None
            }

    @threaded
    def list_pins(self, server: str | None = None) -> list[ToolPin]:
        """The pins, by server and tool (of one server when given)."""
        where, params = (" WHERE server = ?", (server,)) if server else ("", ())
        rows = self._all(
            f"SELECT {PIN_COLUMNS} FROM agent_tool_pins{where} ORDER BY server, tool",  # noqa: S608 - fixed text
            params,
        )
        return [tool_pin(r) for r in rows]

    @threaded
    def accept_pins(self, server: str, tools: Sequence[str] | None = None) -> list[ToolPin]:
        """Make the pending definitions of ``tools`` (None: all pending ones) their pins.

        Returns the rows as they were before, holding the old and the accepted definition.

        Raises:
            RunError: the server has no pins, a tool has none, or nothing is pending for it
                (or what is pending cannot be trusted).
        """
        with self._tx() as session:
            rows = session.all(
                f"SELECT {PIN_COLUMNS} FROM agent_tool_pins WHERE server = ? ORDER BY tool",  # noqa: S608 - fixed text
                (server,),
            )
            pins = {pin["tool"]: pin for pin in map(tool_pin, rows)}
            chosen = _chosen(server, pins, tools)
            now = time.time()
            for pin in chosen:
                session.execute(
                    "UPDATE agent_tool_pins SET digest = pending_digest, definition = "
                    "pending_definition, pending_digest = NULL, pending_definition = NULL, "
                    "accepted_at = ? WHERE server = ? AND tool = ? AND pending_digest = ?",
                    (now, server, pin["tool"], pin["pending_digest"]),
                )
        return chosen


def _chosen(server: str, pins: dict[str, ToolPin], tools: Sequence[str] | None) -> list[ToolPin]:
    """The pins to accept, or RunError saying why none can be."""
    if not pins:
        raise RunError(
            f"MCP server {server!r} has no pinned tools; `ai-agent mcp pins` lists the servers "
            "that have"
        )
    names = (
        [name for name, pin in pins.items() if pin["pending_digest"]] if tools is None else tools
    )
    if not names:
        raise RunError(f"nothing of MCP server {server!r} awaits acceptance")
    chosen = []
    for name in names:
        pin = pins.get(name)
        if pin is None:
            raise RunError(
                f"MCP server {server!r} has no pinned tool {name!r}; `ai-agent mcp pins "
                f"{server}` lists its tools"
            )
        if pin["pending_digest"] is None:
            raise RunError(f"tool {name!r} of MCP server {server!r} awaits no acceptance")
        if _definition_problem(pin["pending_digest"], pin["pending_definition"], "pending"):
            raise RunError(
                f"the pending definition of tool {name!r} of MCP server {server!r} cannot be "
                f"trusted ({pin['problem']}); connect to the server again to record it anew"
            )
        chosen.append(pin)
    return chosen


def _checked(
    session: Session, server: str, tool: PinnedDefinition, now: float
) -> PinVerdict | None:
    """One listed tool against its pin: None to offer it, else why it is withheld."""
    row = session.one(
        f"SELECT {PIN_COLUMNS} FROM agent_tool_pins WHERE server = ? AND tool = ?",  # noqa: S608 - fixed text
        (server, tool.name),
    )
    if row is None:
        session.execute(
            "INSERT INTO agent_tool_pins (server, tool, pending_digest, pending_definition, "
            "first_seen) VALUES (?, ?, ?, ?, ?)",
            (server, tool.name, tool.digest, tool.text, now),
        )
        return "new"
    pin = tool_pin(row)
    if pin["problem"] is None and pin["digest"] == tool.digest:
        if pin["pending_digest"] is not None:  # the server went back to the pinned one
            session.execute(
                "UPDATE agent_tool_pins SET pending_digest = NULL, pending_definition = NULL "
                "WHERE server = ? AND tool = ?",
                (server, tool.name),
            )
        return None
    if pin["pending_digest"] != tool.digest or pin["problem"] is not None:
        session.execute(
            "UPDATE agent_tool_pins SET pending_digest = ?, pending_definition = ? "
            "WHERE server = ? AND tool = ?",
            (tool.digest, tool.text, server, tool.name),
        )
    if pin["problem"] is not None:
        return "unreadable"
    return "new" if pin["digest"] is None else "changed"
