"""Toolsets: the sources of tools, each with one interface (see `ai_agent.tools.toolsets.base`).

The built-in tools (`BuiltinToolset`), the user's functions and ToolSpecs
(`FunctionToolset`), a child agent offered as a tool (`ChildToolset`), each MCP server
(``ai_agent.tools.mcp.McpToolset``) and the generated tools
(``ai_agent.tools.maker.GeneratedToolset``) are toolsets; the registry composes them.
"""

from ai_agent.tools.toolsets.base import ChangeListener, Toolset
from ai_agent.tools.toolsets.builtin import BuiltinToolset
from ai_agent.tools.toolsets.child import ChildToolset
from ai_agent.tools.toolsets.functions import FunctionToolset
from ai_agent.tools.toolsets.spans import ToolsetSpans

__all__ = [
    "BuiltinToolset",
    "ChangeListener",
    "ChildToolset",
    "FunctionToolset",
    "Toolset",
    "ToolsetSpans",
]
