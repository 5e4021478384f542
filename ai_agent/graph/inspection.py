"""Where a run stands and what it said: the views of a run's state the inspection helpers give.

Every helper of the archive takes an optional ``thread_id``: None means the run the Agent worked
on last (``run``, ``resume`` or ``replay``), so on a live agent ``await agent.get_token_usage()``
needs no argument; any stored run can be inspected by passing its id, from any process. They read
the latest checkpoint (every step is committed before the next starts) and the recorded calls,
so they may also be called while a run is in progress, from another task.

Tokens and costs are shaped in `ai_agent.graph.usage_report`, the timeline in
`ai_agent.graph.timeline`; this module shapes the rest, as pure functions of what was read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from ai_agent.state import GateReport, Grant, Message, PendingCall, RunState

if TYPE_CHECKING:
    from langgraph.types import StateSnapshot

    from ai_agent.checkpoints import ModelRequest, RunRecord
    from ai_agent.graph.stored_state import StoredSnapshot

__all__ = ["AgentStateView", "agent_state_view", "message_view", "recorded_system_prompt"]


class AgentStateView(TypedDict):
    """Where a run stands: its status, what runs next, and what it waits for."""

    thread_id: str
    checkpoint_id: str | None
    status: str
    next: list[str]
    iteration: int
    waiting_for_plan: bool
    gate: GateReport | None
    pending: list[PendingCall]
    stop_reason: str | None
    final_text: str | None
    active_tools: list[str]
    grants: list[Grant]
    error: str | None


def agent_state_view(
    thread_id: str,
    state: RunState,
    snapshot: StateSnapshot | StoredSnapshot,
    record: RunRecord | None,
) -> AgentStateView:
    """Where the run stands: status, next stage, what it waits for."""
    gate = snapshot.interrupts[0].value if snapshot.interrupts else None
    status = "paused" if gate else str(state.get("status", "running"))
    if record and record["status"] == "failed" and not gate:
        status = "failed"
    return AgentStateView(
        thread_id=thread_id,
        checkpoint_id=(snapshot.config or {}).get("configurable", {}).get("checkpoint_id"),
        status=status,
        next=list(snapshot.next),
        iteration=int(state.get("iteration", 0)),
        waiting_for_plan=gate is not None,
        gate=gate,
        pending=list(state.get("pending", [])),
        stop_reason=state.get("stop_reason"),
        final_text=state.get("final_text"),
        active_tools=list(state.get("active_tools", [])),
        grants=list(state.get("grants", [])),
        error=record["error"] if record else None,
    )


def recorded_system_prompt(request: ModelRequest) -> str:
    """The system prompt a recorded request sent ('' when it sent none).

    The prompt is never stored in state (it comes from the Agent on every draft), so for a
    stored run the recorded request is the witness of what the model was told.

    Examples:
        >>> recorded_system_prompt({"messages": [{"role": "system", "content": "Be brief."}],
        ...                         "tools": [], "params": {}})
        'Be brief.'
    """
    first = request["messages"][0] if request["messages"] else None
    return first["content"] if first and first["role"] == "system" else ""


def message_view(
    messages: Sequence[Message],
    system_prompt: str | None,
    *,
    roles: Sequence[str] | None = None,
    last: int | None = None,
) -> list[Message]:
    """The conversation, oldest first: the system prompt first when given, filtered by role.

    Examples:
        >>> said = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
        >>> [m["content"] for m in message_view(said, "Be brief.", roles=["system", "user"])]
        ['Be brief.', 'hi']
    """
    out: list[Any] = list(messages)
    if system_prompt is not None:
        from ai_agent.nodes.draft import compose_messages  # the stages: only with a prompt

        out = compose_messages(system_prompt, out)
    if roles is not None:
        out = [m for m in out if m["role"] in roles]
    return out[-last:] if last else out
