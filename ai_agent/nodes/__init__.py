"""The nine stages, one module each: ``async def <stage>(state, runtime) -> <Stage>Update``."""

from ai_agent.nodes.act import act
from ai_agent.nodes.decide import decide
from ai_agent.nodes.discover import discover
from ai_agent.nodes.draft import draft
from ai_agent.nodes.finalize import finalize
from ai_agent.nodes.gate import gate
from ai_agent.nodes.persist import persist
from ai_agent.nodes.recall import recall
from ai_agent.nodes.reflect import reflect
from ai_agent.state import STAGES

__all__ = [
    "STAGES",
    "act",
    "decide",
    "discover",
    "draft",
    "finalize",
    "gate",
    "persist",
    "recall",
    "reflect",
]
