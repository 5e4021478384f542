r"""The pipeline as a LangGraph state machine.

```text
recall -> draft -> decide -> discover -> act -> reflect -> gate -> finalize -> persist
            ^  \        \-- finish ---------------------------/^
            |   \-- model issue -> gate                        |
            +------------------ continue <--------------------+  (gate -> act: settle calls)
```

"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph

from ai_agent.context import RunContext
from ai_agent.graph.pipeline import FIXED_STEPS, STEPS_PER_CYCLE, default_pipeline
from ai_agent.state import RunState

__all__ = ["build_graph", "recursion_limit"]


def recursion_limit(max_iterations: int) -> int:
    """LangGraph's step limit for a run of ``max_iterations`` cycles (see `Pipeline`)."""
    return max_iterations * STEPS_PER_CYCLE + FIXED_STEPS


def build_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> CompiledStateGraph[RunState, RunContext, RunState, RunState]:
    """Build and compile the nine-stage graph (`ai_agent.graph.pipeline` changes it)."""
    return default_pipeline().compile(checkpointer)
