"""ai-agent: a resumable AI-agent workflow engine.

A task runs through nine typed stages on LangGraph; every step is checkpointed to SQLite; the
critical gate pauses for a person's plan and the run resumes later, in any process.

Example:
    >>> from ai_agent import Agent, UserPlan
    >>> UserPlan(instructions="use the backup").allow_continue
    True
"""

from ai_agent.config import AgentSettings
from ai_agent.context import Hooks
from ai_agent.graph import Agent, RunResult
from ai_agent.state import GateReport, ToolResult, UserPlan
from ai_agent.tools.base import BaseTool
from ai_agent.tools.decorator import tool
from ai_agent.tools.registry import make_tool_registry
from ai_agent.tools.spec import ToolCategory, ToolSpec

__all__ = [
    "Agent",
    "AgentSettings",
    "BaseTool",
    "GateReport",
    "Hooks",
    "RunResult",
    "ToolCategory",
    "ToolResult",
    "ToolSpec",
    "UserPlan",
    "make_tool_registry",
    "tool",
]
