"""Tools: one registry composed from toolsets, the approval policy, and the built-in tools.

Examples:
    >>> from ai_agent.tools import ToolRegistry, tool
    >>> @tool(category="read_only")
    ... def add(a: int, b: int) -> int:
    ...     '''Add two integers.'''
    ...     return a + b
    >>> "add" in ToolRegistry([add])
    True
"""

from ai_agent.tools.adapters import as_tool_spec
from ai_agent.tools.base import BaseTool
from ai_agent.tools.decorator import tool
from ai_agent.tools.registry import ToolRegistry, TurnView, make_tool_registry
from ai_agent.tools.snapshot import DEFAULT_TOOL_TIMEOUT, ToolSet, ToolSnapshot
from ai_agent.tools.spec import ToolCategory, ToolFn, ToolSpec
from ai_agent.tools.toolsets import BuiltinToolset, FunctionToolset, Toolset

__all__ = [
    "DEFAULT_TOOL_TIMEOUT",
    "BaseTool",
    "BuiltinToolset",
    "FunctionToolset",
    "ToolCategory",
    "ToolFn",
    "ToolRegistry",
    "ToolSet",
    "ToolSnapshot",
    "ToolSpec",
    "Toolset",
    "TurnView",
    "as_tool_spec",
    "make_tool_registry",
    "tool",
]
