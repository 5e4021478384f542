"""MCP servers as tools: configuration, connections kept open for a run, tools in the registry.

A server is configured with `McpServerConfig` (in code, in ``config.yaml`` /
``config.toml`` under ``mcp_servers``, or in a file read by `load_mcp_config`); the Agent
owns an `McpManager` whose servers are each a toolset (`McpToolset`) in its registry: started
when a run needs them, their tools in the catalog as ``<server>.<tool>`` with categories from
their annotations, a server that crashes restarted (once per run), and all of them stopped when
the run or the Agent closes. See docs/mcp.md.

Importing this package does not import the MCP client: it is loaded when a server starts.

Examples:
    >>> from ai_agent.tools.mcp import McpServerConfig, category_for
    >>> McpServerConfig(name="fs", command="npx", args=["-y", "pkg", "/data"]).transport
    'stdio'
    >>> category_for({"readOnlyHint": True}, "read_file").value
    'read_only'
"""

from ai_agent.config import McpAuthConfig, McpServerConfig, load_mcp_config
from ai_agent.tools.mcp.adapt import category_for, convert_result, local_names
from ai_agent.tools.mcp.manager import McpManager
from ai_agent.tools.mcp.resolve import Resolved, resolve
from ai_agent.tools.mcp.status import McpServerStatus
from ai_agent.tools.mcp.toolset import McpFailure, McpToolset

__all__ = [
    "McpAuthConfig",
    "McpFailure",
    "McpManager",
    "McpServerConfig",
    "McpServerStatus",
    "McpToolset",
    "Resolved",
    "category_for",
    "convert_result",
    "load_mcp_config",
    "local_names",
    "resolve",
]
