"""The graph layer: the compiled pipeline, its routes, and the Agent facade over it."""

from ai_agent.graph.agent import Agent
from ai_agent.graph.build import build_graph, recursion_limit
from ai_agent.graph.core import PROFILES, AgentCore
from ai_agent.graph.result import RunResult

__all__ = ["PROFILES", "Agent", "AgentCore", "RunResult", "build_graph", "recursion_limit"]
