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

from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from ai_agent.context import RunContext
from ai_agent.graph.routes import after_decide, after_draft, after_finalize, after_gate
from ai_agent.nodes import act, decide, discover, draft, finalize, gate, persist, recall, reflect
from ai_agent.state import RunState

__all__ = ["build_graph", "recursion_limit"]

# Steps per cycle on the longest path (draft, decide, discover, act, reflect, gate, and act and
# reflect and gate again after a plan), plus recall/finalize/persist: the recursion limit follows
# from max_iterations instead of being a magic number.
_STEPS_PER_CYCLE = 9
_FIXED_STEPS = 10


def recursion_limit(max_iterations: int) -> int:
    """LangGraph's step limit for a run of ``max_iterations`` cycles."""
    return max_iterations * _STEPS_PER_CYCLE + _FIXED_STEPS


def build_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> CompiledStateGraph[RunState, RunContext, RunState, RunState]:
    """Build and compile the nine-stage graph."""
    builder: StateGraph[RunState, RunContext, RunState, RunState] = StateGraph(
        RunState, context_schema=RunContext
    )
    builder.add_node("recall", recall)
    builder.add_node("draft", draft)
    builder.add_node("decide", decide)
    builder.add_node("discover", discover)
    builder.add_node("act", act)
    builder.add_node("reflect", reflect)
    builder.add_node("gate", gate)
    builder.add_node("finalize", finalize)
    builder.add_node("persist", persist)
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
