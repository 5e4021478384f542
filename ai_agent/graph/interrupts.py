"""A node of the user's pipeline that called ``interrupt()``: where it waits, and its answer.

The gate's interrupt carries a `ai_agent.state.GateReport` and is answered by a plan. A node of
the user's own (`ai_agent.graph.pipeline`) may call LangGraph's ``interrupt(value)`` too: the run
pauses the same way (status ``paused``, the run row says so, ``resume`` continues it), and the
answer given to ``Agent.resume(thread_id, answer)`` is what its ``interrupt`` returns. Which of
the two a paused run waits for is read from the value: a gate report has the report's fields.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ai_agent.datafiles import unstorable_at
from ai_agent.errors import InvalidPlanError

if TYPE_CHECKING:
    from langgraph.types import StateSnapshot

    from ai_agent.graph.stored_state import StoredSnapshot
    from ai_agent.state import UserPlan

    # pydantic (UserPlan's) is not imported to list runs: the alias is for the type checker.
    Answer = UserPlan | Mapping[str, Any] | str | int | float | bool | list[Any] | None

__all__ = ["Answer", "Interrupted", "is_gate_report", "node_answer", "waiting_node"]


_REPORT_FIELDS = frozenset({"iteration", "issues", "severity", "threshold", "intervene", "prompt"})


@dataclass(frozen=True, slots=True)
class Interrupted:
    """Where a run waits when a node of the user's pipeline called ``interrupt(value)``.

    Attributes:
        node: The node (a subgraph's node for an interrupt inside it).
        value: What the node passed to ``interrupt``.
    """

    node: str
    value: Any

    @property
    def prompt(self) -> str:
        """A line for a person: where the run waits, what it asks, how to answer."""
        asked = self.value if isinstance(self.value, str) else json.dumps(self.value, default=str)
        return f"paused in node {self.node}: {asked}"


def is_gate_report(value: Any) -> bool:
    """Whether an interrupt's value is the gate's report (else a user's node asked)."""
    return isinstance(value, Mapping) and set(value) >= _REPORT_FIELDS


def waiting_node(snapshot: StateSnapshot | StoredSnapshot) -> Interrupted | None:
    """The user's node a paused run waits in; None when it waits at the gate, or not at all."""
    if not snapshot.interrupts or is_gate_report(snapshot.interrupts[0].value):
        return None
    value = snapshot.interrupts[0].value
    node = next((task.name for task in snapshot.tasks if task.interrupts), "?")
    return Interrupted(node, value)


def node_answer(thread_id: str, waiting: Interrupted, answer: Any, max_chars: int) -> Any:
    """The value a waiting node's ``interrupt`` returns, from what ``resume`` was given.

    Any JSON value is taken as it is. A `UserPlan` (the command line's ``--plan TEXT``) stands
    for its instructions; a plan that approves, denies or stops something answers a gate, not a
    node, so it is refused.

    Raises:
        InvalidPlanError: no answer, a plan that is more than instructions, a value that is not
            JSON data, or one longer than ``max_chars``.
    """
    if answer is None:
        raise InvalidPlanError(
            f"run {thread_id} is {waiting.prompt}; answer it with Agent.resume(thread_id, "
            "value) or `ai-agent resume THREAD --plan TEXT`"
        )
    from ai_agent.state import UserPlan

    if isinstance(answer, UserPlan):
        if answer.model_dump(exclude_defaults=True).keys() - {"instructions"}:
            raise InvalidPlanError(
                f"run {thread_id} is {waiting.prompt}; it takes an answer, not a plan for the "
                "gate (approve, deny, activate_tools or --deny): give the text alone"
            )
        answer = answer.instructions or ""
    # A whole number past 64 bits is JSON, and failed the checkpoint's write: a queued answer
    # was served again at every poll, keeping every other answer for its run out of the queue.
    found = unstorable_at(answer, texts=False)
    if found is not None:
        where, problem = found
        raise InvalidPlanError(
            f"the answer to node {waiting.node}: {where or 'the answer'} {problem}. The run is "
            "still paused"
        )
    try:
        text = json.dumps(answer, allow_nan=False)
    except (TypeError, ValueError):
        raise InvalidPlanError(
            f"the answer to node {waiting.node} is a {type(answer).__name__}, not JSON data "
            "(text, numbers, booleans, lists and dicts of them)"
        ) from None
    if len(text) > max_chars:
        raise InvalidPlanError(
            f"the answer to node {waiting.node} is {len(text):,} characters; the limit is "
            f"{max_chars:,} (the max_plan_chars setting)"
        )
    return answer
