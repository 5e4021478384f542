"""The tool catalog of an Agent built from settings alone, without building the Agent.

``ai-agent tools`` lists the catalog and ``ai-agent mcp list`` starts its MCP servers; both used
to build a whole `Agent` for it, which imports the model stack, LangChain and LangGraph's
runtime: over a second, where issue 20 gives them a quarter of one. `tool_catalog` builds the
same `AgentTools` the Agent builds for ``Agent(settings=..., memory_path=None,
mcp_servers=...)`` on no database (the command line's ``checkpoint_path=os.devnull``): the same
functions, called with the same arguments (`ai_agent.graph.options`, `toolsmaker_paths`,
`settings_secrets`, `gather_servers`). ``tests/cli/test_cli_tools.py`` holds its listing equal
to the Agent's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ai_agent.graph.events import rendering
from ai_agent.graph.options import engine_state, memory_sqlite_path, run_policy
from ai_agent.graph.secrets import settings_secrets
from ai_agent.graph.tooling import AgentTools, toolsmaker_paths
from ai_agent.tools.mcp.manager import gather_servers

if TYPE_CHECKING:
    from ai_agent.config import AgentSettings, McpServerConfig
    from ai_agent.tools.mcp.pins import ToolPins

__all__ = ["tool_catalog"]


def tool_catalog(
    settings: AgentSettings,
    *,
    mcp_servers: Sequence[McpServerConfig | Mapping[str, Any]] | None = None,
    pins: ToolPins | None = None,
) -> AgentTools:
    """The tools of an Agent on no database, without its memory (none started yet).

    The Agent is ``Agent(checkpoint_path=os.devnull, settings=settings, memory_path=None,
    mcp_servers=mcp_servers)``: its catalog, its policy and its MCP servers. ``pins``: where
    its servers' tool definitions are pinned (``ai-agent mcp list`` passes the database's).
    """
    database = Path(os.devnull)
    secrets = settings_secrets(settings)
    servers = gather_servers(settings.mcp_servers, None, mcp_servers)
    memory_db = memory_sqlite_path(None, database) if settings.memory_sqlite else None
    toolsmaker_dir, audit_path = toolsmaker_paths(settings)
    protected = engine_state(
        settings,
        database,
        workdir=".",
        memory=None,
        memory_sqlite=memory_db,
        toolsmaker_dir=toolsmaker_dir,
        audit_log=audit_path,
    )
    policy = run_policy(settings, memory=None, workdir=".")
    return AgentTools(
        settings.tools,
        settings=settings,
        policy=policy,
        secrets=secrets,
        workdir=".",
        protected=protected,
        servers=servers,
        toolsmaker_dir=toolsmaker_dir,
        toolsmaker_audit_path=audit_path,
        on_event=rendering(None),
        pins=pins,
    )
