r"""The pipeline as a LangGraph state machine.

```text
recall -> draft -> decide -> discover -> act -> reflect -> gate -> finalize -> persist
            ^  \        \-- finish ---------------------------/^
            |   \-- model issue -> gate                        |
            +------------------ continue <--------------------+  (gate -> act: settle calls)
                                        (finalize -> gate: a typed answer that does not fit)
```

"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from ai_agent.context import RunContext
from ai_agent.errors import RunError
from ai_agent.graph.routes import after_decide, after_draft, after_finalize, after_gate
from ai_agent.state import STAGES, RunState

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

__all__ = ["build_graph", "recursion_limit"]


# Steps per cycle on the longest path (draft, decide, discover, act, reflect, gate, and act and
# reflect and gate again after a plan), plus recall/finalize/persist: the recursion limit follows
# from max_iterations instead of being a magic number.
STEPS_PER_CYCLE = 9
FIXED_STEPS = 10


def recursion_limit(max_iterations: int) -> int:
    """LangGraph's step limit for a run of ``max_iterations`` cycles (see `Pipeline`)."""
    return max_iterations * STEPS_PER_CYCLE + FIXED_STEPS


def build_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None, *, reading: bool = False
) -> CompiledStateGraph[RunState, RunContext, RunState, RunState]:
    """Build and compile the nine-stage graph.

    Args:
        checkpointer: Where the graph's checkpoints are kept.
        reading: A graph that only reads checkpoints (a run's state, its history, its
            picture): the same stages, edges and channels, so LangGraph reads every checkpoint
            as the running graph does, but its stages refuse to run. The stages, and the tools
            they import, are then not imported: ``ai-agent show`` and ``history`` need neither.
    """
    stages = _refusing() if reading else _stages()
    builder: StateGraph[RunState, RunContext, RunState, RunState] = StateGraph(
        RunState, context_schema=RunContext
    )
    for name in STAGES:
        builder.add_node(name, stages[name])
    builder.add_edge(START, "recall")
    builder.add_edge("recall", "draft")
    builder.add_conditional_edges("draft", after_draft)
    builder.add_conditional_edges("decide", after_decide)
    builder.add_edge("discover", "act")
    builder.add_edge("act", "reflect")
    builder.add_edge("reflect", "gate")
    builder.add_conditional_edges("gate", after_gate)
    builder.add_conditional_edges("finalize", after_finalize)
    builder.add_edge("persist", END)
    return builder.compile(checkpointer=checkpointer)


def _stages() -> dict[str, Callable[..., Any]]:
    from ai_agent import nodes  # the stages, and the tools with them: only for a running graph

    return {name: getattr(nodes, name) for name in STAGES}


def _refusing() -> dict[str, Callable[..., Any]]:
    def refusing(name: str) -> Callable[..., Any]:
        async def stage(state: RunState) -> RunState:
            raise RunError(f"the {name} stage of a graph built for reading cannot run")

        return stage

    return {name: refusing(name) for name in STAGES}
