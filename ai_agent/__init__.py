"""ai-agent: a resumable AI-agent workflow engine.

A task runs through nine typed stages on LangGraph; every step is checkpointed to SQLite; the
critical gate pauses for a person's plan and the run resumes later, in any process.

The public names are imported on first use (PEP 562), so ``import ai_agent`` and the command
line's ``--help`` do not pay for LangGraph, LangChain and pydantic-settings until they are needed.

Examples:
    >>> from ai_agent import Agent, UserPlan
    >>> UserPlan(instructions="use the backup").allow_continue
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ai_agent._lazy import lazy_names

if TYPE_CHECKING:
    from ai_agent.config import AgentSettings
    from ai_agent.context import Hooks
    from ai_agent.graph import Agent, Pipeline, PipelineBuilder, RunResult
    from ai_agent.state import Citation, GateReport, ToolResult, UserPlan
    from ai_agent.tools.base import BaseTool
    from ai_agent.tools.decorator import tool
    from ai_agent.tools.registry import make_tool_registry
    from ai_agent.tools.spec import ToolCategory, ToolSpec

__all__ = [
    "Agent",
    "AgentSettings",
    "BaseTool",
    "Citation",
    "GateReport",
    "Hooks",
    "Pipeline",
    "PipelineBuilder",
    "RunResult",
    "ToolCategory",
    "ToolResult",
    "ToolSpec",
    "UserPlan",
    "make_tool_registry",
    "tool",
]

_HOMES = {
    "Agent": "ai_agent.graph",
    "AgentSettings": "ai_agent.config",
    "BaseTool": "ai_agent.tools.base",
    "Citation": "ai_agent.state",
    "GateReport": "ai_agent.state",
    "Hooks": "ai_agent.context",
    "Pipeline": "ai_agent.graph",
    "PipelineBuilder": "ai_agent.graph",
    "RunResult": "ai_agent.graph",
    "ToolCategory": "ai_agent.tools.spec",
    "ToolResult": "ai_agent.state",
    "ToolSpec": "ai_agent.tools.spec",
    "UserPlan": "ai_agent.state",
    "make_tool_registry": "ai_agent.tools.registry",
    "tool": "ai_agent.tools.decorator",
}


__getattr__, __dir__ = lazy_names(__name__, _HOMES)
