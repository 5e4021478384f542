"""Where an MCP server stands: the types a connection reports and the manager lists.

Below both `ai_agent.tools.mcp.connection` (which fills them in) and
`ai_agent.tools.mcp.manager` (which gathers them), so neither imports the other for them.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

__all__ = ["McpServerStatus", "ServerState"]

ServerState = Literal["stopped", "starting", "running", "failed"]


class McpServerStatus(TypedDict):
    """One server as `McpManager.status` and ``ai-agent mcp list`` show it.

    ``tools`` are the registry names of its tools; ``started_ms`` how long its last start took
    (process, initialize, tool list); ``error`` / ``error_code`` why it is not running;
    ``left_out`` the tools it lists that are not offered, each with the reason; ``withheld``
    those held back until a person accepts their definitions (``changed``, ``new`` or
    ``unreadable``: see `ai_agent.tools.mcp.pins`).
    """

    name: str
    transport: str
    target: str
    state: ServerState
    pid: int | None
    server: str | None
    tools: list[str]
    restarts: int
    started_ms: float | None
    error: str | None
    error_code: str | None
    left_out: NotRequired[dict[str, str]]
    withheld: NotRequired[dict[str, str]]
