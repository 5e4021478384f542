"""The graph layer: the compiled pipeline, its routes, and the Agent facade over it."""

from ai_agent.graph.agent import Agent
from ai_agent.graph.build import build_graph, recursion_limit
from ai_agent.graph.core import PROFILES, AgentCore
from ai_agent.graph.divergence import DivergenceReport
from ai_agent.graph.export import mermaid
from ai_agent.graph.history import HistoryEntry
from ai_agent.graph.inspection import CostRates
from ai_agent.graph.player import ReplayMode
from ai_agent.graph.prune import PruneReport
from ai_agent.graph.replay import REPLAY_MODES, trace_signature
from ai_agent.graph.result import RunResult
from ai_agent.graph.worker import PlanOutcome, Worker

__all__ = [
    "PROFILES",
    "REPLAY_MODES",
    "Agent",
    "AgentCore",
    "CostRates",
    "DivergenceReport",
    "HistoryEntry",
    "PlanOutcome",
    "PruneReport",
    "ReplayMode",
    "RunResult",
    "Worker",
    "build_graph",
    "mermaid",
    "recursion_limit",
    "trace_signature",
]
