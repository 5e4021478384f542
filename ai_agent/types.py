"""The tool contract's types in one place, as the pipeline spec imports them.

``from ai_agent.types import ToolSpec`` is how the spec's "Add a tool" example begins; the names
here are the ones a tool's author needs: `ToolSpec` (a tool), `ToolFn` (its
``fn(args, ctx)``), `ToolResult` (what it returns), `ToolCategory` (how much oversight it
needs) and `ToolCall` (a call of it). Each is the same object as in its home module.

Examples:
    >>> from ai_agent.types import ToolSpec
    >>> def tool_fetch_users(args, ctx):
    ...     return {"status": "error", "error": "not wired", "meta": {"code": "NOT_WIRED"}}
    >>> ToolSpec(name="fetch_users", fn=tool_fetch_users, requires_env=["MY_API_KEY"]).category
    <ToolCategory.EXTERNAL: 'external'>
"""

from ai_agent.state import ToolCall, ToolResult
from ai_agent.tools.spec import ToolCategory, ToolFn, ToolSpec

__all__ = ["ToolCall", "ToolCategory", "ToolFn", "ToolResult", "ToolSpec"]
