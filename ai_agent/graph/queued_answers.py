"""Queued answers to a node of the user's pipeline that called ``interrupt()``.

The plan queue (`ai_agent.graph.worker`) serves the gate's plans; a run that waits in a node of
its own pipeline (`ai_agent.graph.interrupts`) takes an answer instead, as ``Agent.resume``
does. ``submit_plan`` checks the answer as a resume would (any JSON value, or a plan of
instructions alone, within ``max_plan_chars``, secrets masked) and queues it as
``{"node", "answer", "interrupt_id"}``.

The interrupt's id plays the gate token's part: LangGraph derives it from the paused
checkpoint, so it is read there by ``submit_plan``, and a worker answers only the interrupt the
run still waits at with it. A row without it (not queued by ``submit_plan``), for an earlier
interrupt, or a gate's plan while the run waits in a node (or the other way round) is refused,
and the run stays paused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ai_agent.errors import PlanRefusedError
from ai_agent.graph.interrupts import Interrupted, waiting_node

if TYPE_CHECKING:
    from langgraph.types import Command, StateSnapshot

    from ai_agent.checkpoints.plans import PlanRecord
    from ai_agent.graph.driving import Runner
    from ai_agent.graph.interrupts import Answer

__all__ = ["answer_input", "is_node_answer", "queued_answer"]

_KEYS = frozenset({"node", "answer", "interrupt_id"})


def is_node_answer(row: Any) -> bool:
    """Whether a queued row is a node's answer (the shape `queued_answer` gives).

    Examples:
        >>> is_node_answer({"node": "confirm", "answer": "yes", "interrupt_id": "ab"})
        True
        >>> is_node_answer({"approve": ["*"]}), is_node_answer(["yes"])
        (False, False)
    """
    return isinstance(row, Mapping) and set(row) == _KEYS


async def queued_answer(
    runner: Runner, thread_id: str, snapshot: StateSnapshot, waiting: Interrupted, answer: Answer
) -> dict[str, Any]:
    """The row that queues ``answer`` for the node ``waiting``, checked as a resume checks it.

    Raises:
        InvalidPlanError: no answer, a plan that is more than instructions, a value that is not
            JSON data, or one longer than ``max_plan_chars``.
    """
    command = await runner.resume_input(thread_id, snapshot, answer)
    return {
        "node": waiting.node,
        # What the node's interrupt() will return: checked, and masked of secrets.
        "answer": None if command is None else command.resume,
        "interrupt_id": snapshot.interrupts[0].id,
    }


async def answer_input(
    runner: Runner, plan: PlanRecord, snapshot: StateSnapshot
) -> Command[Any] | None:
    """The graph input that answers the node a run waits in with a queued row.

    Raises:
        PlanRefusedError: the row is not an answer for the interrupt the run waits at now.
        InvalidPlanError: the answer does not pass a resume's checks.
    """
    row, thread_id = plan["plan"], plan["thread_id"]
    waiting = waiting_node(snapshot)
    if waiting is None:
        raise PlanRefusedError(
            f"plan {plan['id']} answers node {row.get('node')} of run {thread_id}, which no "
            "longer waits there; queue a plan for where it waits now (ai-agent show "
            f"{thread_id})"
        )
    if not is_node_answer(row):
        raise PlanRefusedError(
            f"run {thread_id} is {waiting.prompt}; plan {plan['id']} is a plan for the gate, "
            "not an answer queued for that node: queue the answer with submit_plan (ai-agent "
            f"resume {thread_id} --plan TEXT --queue)"
        )
    if row["interrupt_id"] != snapshot.interrupts[0].id:
        raise PlanRefusedError(
            f"plan {plan['id']} was not queued for the interrupt run {thread_id} waits at now "
            f"in node {waiting.node} (an earlier one, or not queued by submit_plan); queue an "
            "answer for this one"
        )
    return await runner.resume_input(thread_id, snapshot, row["answer"])
