"""Context compaction: keep long runs inside their context window (spec 5.7).

Five strategies ship (``sliding_window``, ``summarize_older``, ``selective_pruning``,
``importance_scoring``, ``hybrid``); any object with a ``name`` and an async ``compact(data)`` is a
custom one (`CompactionStrategy`). `Compactor` decides when to compact and makes sure
the result fits; every compaction is recorded in the run's ``compactions`` history.

Examples:
    >>> from ai_agent.compaction import BUILTIN_STRATEGIES, CompactionStrategy
    >>> isinstance(BUILTIN_STRATEGIES["hybrid"](), CompactionStrategy)
    True
"""

from ai_agent.compaction.base import (
    Block,
    CompactionInput,
    CompactionResult,
    CompactionStrategy,
    ModelHelper,
    split_blocks,
)
from ai_agent.compaction.compactor import Compaction, Compactor, ModelCallerHelper, parse_scores
from ai_agent.compaction.strategies import (
    BUILTIN_STRATEGIES,
    Hybrid,
    ImportanceScoring,
    SelectivePruning,
    SlidingWindow,
    SummarizeOlder,
    summary_message,
)

__all__ = [
    "BUILTIN_STRATEGIES",
    "Block",
    "Compaction",
    "CompactionInput",
    "CompactionResult",
    "CompactionStrategy",
    "Compactor",
    "Hybrid",
    "ImportanceScoring",
    "ModelCallerHelper",
    "ModelHelper",
    "SelectivePruning",
    "SlidingWindow",
    "SummarizeOlder",
    "parse_scores",
    "split_blocks",
    "summary_message",
]
