"""The Agent's MCP tool pins, kept in its run store (`ai_agent.checkpoints.pins`).

The MCP toolsets ask `ai_agent.tools.mcp.pins.ToolPins` which of a server's tools to withhold;
this answers from the run store of the Agent's database, opened when first asked (a server
that connects before any run opens it). An Agent whose database is in memory keeps its pins
there, for as long as the process lives.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ai_agent.tools.mcp.pins import PinState, ToolDefinition

if TYPE_CHECKING:
    from ai_agent.graph.database import RunDatabase

__all__ = ["StoredToolPins"]


class StoredToolPins:
    """`ToolPins <ai_agent.tools.mcp.pins.ToolPins>` over a run database's store."""

    def __init__(self, database: RunDatabase) -> None:
        self._database = database

    async def check(self, server: str, tools: Sequence[ToolDefinition]) -> dict[str, PinState]:
        """The tools of ``server`` to withhold, each with why; first use pins them all."""
        verdicts = await self._database.store.check_pins(server, tools)
        return dict(verdicts)
