"""The tool box that wraps another: what the engine's layers of tool boxes are built on.

A module of its own, light on imports: the tool catalog (`ai_agent.graph.tooling`), which
``ai-agent tools`` and ``ai-agent mcp list`` build without an Agent, wraps its tool box in one
(`ai_agent.graph.secrets`), and `ai_agent.graph.recording`, where the other layers live,
imports LangChain and LangGraph's runtime.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ai_agent.context import CallReview, ToolBox, ToolInfo
    from ai_agent.state import ToolCall, ToolResult

__all__ = ["DelegatingToolBox"]


class DelegatingToolBox:
    """A tool box that is another one except for ``execute``, which subclasses wrap.

    Everything but execution (catalog, schemas, previews, rendering) comes from the inner tool
    box, so a changed schema or a removed tool still shows in the requests built from it.
    """

    def __init__(self, inner: ToolBox) -> None:
        self.inner = inner

    def catalog(self) -> list[ToolInfo]:
        """The inner tool box's catalog."""
        return self.inner.catalog()

    def info(self, name: str) -> ToolInfo | None:
        """The inner tool box's entry for ``name``."""
        return self.inner.info(name)

    def withheld(self, name: str) -> str | None:
        """Why the inner tool box refuses a call of ``name`` it holds back, or None."""
        from ai_agent.tools.policy import withheld_reason  # asked only for an unknown tool

        return withheld_reason(self.inner, name)

    def schemas(self, names: list[str]) -> list[dict[str, Any]]:
        """The inner tool box's schemas."""
        return self.inner.schemas(names)

    def preview(self, call: ToolCall) -> str:
        """The inner tool box's preview."""
        return self.inner.preview(call)

    def review(self, call: ToolCall) -> CallReview:
        """The inner tool box's review of a call (schema problems, escalation)."""
        return self.inner.review(call)

    def format_result(self, name: str, result: ToolResult) -> str:
        """The inner tool box's rendering of a result."""
        return self.inner.format_result(name, result)

    async def execute(self, call: ToolCall, tool_ctx: dict[str, Any]) -> ToolResult:
        """Run the call in the inner tool box."""
        return await self.inner.execute(call, tool_ctx)
