"""The typed events that `Agent.astream` and `Agent.stream` yield (from ai_agent.graph.events).

Example:
    >>> from ai_agent.events import FinalDelta
    >>> FinalDelta("Hello").text
    'Hello'
"""

from ai_agent.graph.events import (
    FinalDelta,
    GatePaused,
    ModelDelta,
    ModelRetry,
    RunFinished,
    StageFinished,
    StageStarted,
    StreamEvent,
    ToolFinished,
    ToolOutput,
    ToolStarted,
)

__all__ = [
    "FinalDelta",
    "GatePaused",
    "ModelDelta",
    "ModelRetry",
    "RunFinished",
    "StageFinished",
    "StageStarted",
    "StreamEvent",
    "ToolFinished",
    "ToolOutput",
    "ToolStarted",
]
