"""Observed collaborators: the run context's model caller and tool box, inside a scope each.

``RunContexts.context`` wraps the (recording) ModelCaller in `ObservedModel` and the
(recording) ToolBox in `ObservedToolBox`. Each call then gets its id, its span, its
duration metric and its log lines (see `ai_agent.observability.scopes`), and a model call's
HTTP request carries the call's ``X-Request-ID`` and trace context: the live caller reads them
from the scope (`ai_agent.observability.scopes.request_headers`).

The recording happens inside the scope, so a log line and the recorded call share the thread,
LangGraph step and stage; the draft's trace line also carries the call's ``request_id``.
"""

from __future__ import annotations

from typing import Any

from ai_agent.context import CallerBase, ModelCall, ModelCaller, ModelReply, ToolBox
from ai_agent.graph.toolboxes import DelegatingToolBox
from ai_agent.observability.scopes import model_call_scope, tool_call_scope
from ai_agent.state import ToolCall, ToolResult

__all__ = ["ObservedModel", "ObservedToolBox"]


class ObservedModel(CallerBase):
    """A ModelCaller whose every call is observed (id, span, metric, logs).

    Args:
        inner: The caller that does the work.
        model_name: The model named in spans and logs.
    """

    def __init__(self, inner: ModelCaller, model_name: str) -> None:
        self.inner = inner
        self.model_name = model_name

    async def answer(self, call: ModelCall) -> ModelReply:
        """Call the inner caller inside a model-call scope; the reply names the request id."""
        with model_call_scope(self.model_name) as scope:
            reply = await call.to(self.inner)
            scope.finish(reply)
        if scope.request_id:
            reply = ModelReply(**reply)
            reply["request_id"] = scope.request_id
        return reply


class ObservedToolBox(DelegatingToolBox):
    """A ToolBox whose every execution is observed.

    Each call gets an id, a span, a metric and log lines with the telemetry items: chars read,
    K, retrieved items, attempts.
    """

    def __init__(self, inner: ToolBox) -> None:
        super().__init__(inner)

    async def execute(self, call: ToolCall, tool_ctx: dict[str, Any]) -> ToolResult:
        """Execute through the inner tool box inside a tool-call scope."""
        iteration = tool_ctx.get("iteration")
        with tool_call_scope(
            call, iteration=iteration if isinstance(iteration, int) else None
        ) as scope:
            result = await self.inner.execute(call, tool_ctx)
            scope.finish(call, result)
        return result
