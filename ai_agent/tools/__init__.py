"""Tools: the ToolSpec contract, the registry, call screening, and the built-in tools."""

from ai_agent.tools.registry import ToolRegistry, make_tool_registry
from ai_agent.tools.spec import ToolCategory, ToolFn, ToolSpec

__all__ = ["ToolCategory", "ToolFn", "ToolRegistry", "ToolSpec", "make_tool_registry"]
