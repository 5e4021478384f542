"""The typed events of streams and listeners.

`Agent.astream` and `Agent.stream` yield them, and listeners (`Agent.add_listener`) receive
them. They are defined in ``ai_agent.graph.events``.

Examples:
    >>> from ai_agent.events import FinalDelta
    >>> FinalDelta("Hello").text
    'Hello'
"""

from ai_agent.graph.events import (
    Compacted,
    FinalDelta,
    GatePaused,
    GateResumed,
    LifecycleEvent,
    ModelDelta,
    ModelRetry,
    RunFinished,
    RunStarted,
    StageFinished,
    StageStarted,
    StreamEvent,
    ToolFinished,
    ToolOutput,
    ToolStarted,
)

__all__ = [
    "Compacted",
    "FinalDelta",
    "GatePaused",
    "GateResumed",
    "LifecycleEvent",
    "ModelDelta",
    "ModelRetry",
    "RunFinished",
    "RunStarted",
    "StageFinished",
    "StageStarted",
    "StreamEvent",
    "ToolFinished",
    "ToolOutput",
    "ToolStarted",
]
