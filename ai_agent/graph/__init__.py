"""The graph layer: the compiled pipeline, its routes, the Agent facade, and the run archive.

The public names are imported on first use (PEP 562), as in `ai_agent`: reading stored runs
(`RunArchive`, what ``ai-agent runs``, ``show``, ``history`` and ``export`` use) needs only the
run store and the checkpointer, so importing ``ai_agent.graph`` or one of its archive modules
never pays for the model stack (LangChain's OpenAI client, tiktoken) that the Agent imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ai_agent._lazy import lazy_names

if TYPE_CHECKING:
    from ai_agent.graph.agent import Agent
    from ai_agent.graph.archive import RunArchive
    from ai_agent.graph.build import build_graph, recursion_limit
    from ai_agent.graph.database import RunDatabase, check_thread_id, new_thread_id
    from ai_agent.graph.divergence import DivergenceReport
    from ai_agent.graph.export import mermaid
    from ai_agent.graph.family import RunFamily, family_of, run_tree
    from ai_agent.graph.history import HistoryEntry
    from ai_agent.graph.options import PROFILES
    from ai_agent.graph.pipeline import Pipeline, PipelineBuilder
    from ai_agent.graph.player import ModelIdentity, ReplayMode
    from ai_agent.graph.prune import PruneReport
    from ai_agent.graph.replay import REPLAY_MODES, trace_signature
    from ai_agent.graph.result import RunResult
    from ai_agent.graph.review import open_toolsmaker
    from ai_agent.graph.timeline import TimelineRow
    from ai_agent.graph.tooling import ToolListing
    from ai_agent.graph.usage_report import CostRates
    from ai_agent.graph.worker import PlanOutcome, Worker, WorkerEvent

__all__ = [
    "PROFILES",
    "REPLAY_MODES",
    "Agent",
    "CostRates",
    "DivergenceReport",
    "HistoryEntry",
    "ModelIdentity",
    "Pipeline",
    "PipelineBuilder",
    "PlanOutcome",
    "PruneReport",
    "ReplayMode",
    "RunArchive",
    "RunDatabase",
    "RunFamily",
    "RunResult",
    "TimelineRow",
    "ToolListing",
    "Worker",
    "WorkerEvent",
    "build_graph",
    "check_thread_id",
    "family_of",
    "mermaid",
    "new_thread_id",
    "open_toolsmaker",
    "recursion_limit",
    "rule_allows",
    "run_tree",
    "trace_signature",
]

_HOMES = {
    "PROFILES": "ai_agent.graph.options",
    "REPLAY_MODES": "ai_agent.graph.replay",
    "Agent": "ai_agent.graph.agent",
    "CostRates": "ai_agent.graph.usage_report",
    "DivergenceReport": "ai_agent.graph.divergence",
    "HistoryEntry": "ai_agent.graph.history",
    "PlanOutcome": "ai_agent.graph.worker",
    "Pipeline": "ai_agent.graph.pipeline",
    "PipelineBuilder": "ai_agent.graph.pipeline",
    "PruneReport": "ai_agent.graph.prune",
    "ModelIdentity": "ai_agent.graph.player",
    "ReplayMode": "ai_agent.graph.player",
    "RunArchive": "ai_agent.graph.archive",
    "RunDatabase": "ai_agent.graph.database",
    "RunFamily": "ai_agent.graph.family",
    "RunResult": "ai_agent.graph.result",
    "TimelineRow": "ai_agent.graph.timeline",
    "ToolListing": "ai_agent.graph.tooling",
    "Worker": "ai_agent.graph.worker",
    "WorkerEvent": "ai_agent.graph.worker",
    "build_graph": "ai_agent.graph.build",
    "check_thread_id": "ai_agent.graph.database",
    "family_of": "ai_agent.graph.family",
    "mermaid": "ai_agent.graph.export",
    "new_thread_id": "ai_agent.graph.database",
    "open_toolsmaker": "ai_agent.graph.review",
    "recursion_limit": "ai_agent.graph.build",
    "rule_allows": "ai_agent.graph.rules",
    "run_tree": "ai_agent.graph.family",
    "trace_signature": "ai_agent.graph.replay",
}


__getattr__, __dir__ = lazy_names(__name__, _HOMES)
