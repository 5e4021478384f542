"""Routers of the conditional edges. Their return types name every edge of the graph.

They are coroutines although they only read the state: LangGraph runs a plain function that
routes an async graph on a thread of its executor, a thread hand-off per route (three a cycle)
that cost more than the route itself (bench/pipeline.py). A coroutine runs on the event loop.
"""

from __future__ import annotations

from typing import Literal

from ai_agent.state import RunState

__all__ = ["after_decide", "after_draft", "after_finalize", "after_gate"]


async def after_draft(state: RunState) -> Literal["decide", "gate"]:
    """A model failure the gate can help with goes straight to the gate."""
    return "gate" if state.get("issues") else "decide"


async def after_decide(state: RunState) -> Literal["discover", "finalize"]:
    """Tool calls go on through discover and act; a final answer goes to finalize."""
    decision = state.get("decision")
    return "discover" if decision and decision["action"] == "tool" else "finalize"


async def after_gate(state: RunState) -> Literal["draft", "act", "finalize"]:
    """Cancelled or out of iterations: finalize. Calls settled by a plan: act. Else: next cycle."""
    if state.get("status") == "cancelled" or state.get("stop_reason"):
        return "finalize"
    if state.get("pending"):
        return "act"
    return "draft"


async def after_finalize(state: RunState) -> Literal["persist", "gate"]:
    """A typed answer that does not fit (or could not be asked for) goes to the gate."""
    return "gate" if state.get("issues") else "persist"
