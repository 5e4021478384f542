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
    from ai_agent.graph.cases import export_case, import_case, read_case, write_case
    from ai_agent.graph.catalog import tool_catalog
    from ai_agent.graph.channels import UnreadChannels, own_fields
    from ai_agent.graph.database import RunDatabase, check_thread_id, new_thread_id
    from ai_agent.graph.divergence import DivergenceReport
    from ai_agent.graph.export import mermaid
    from ai_agent.graph.family import RunFamily, family_of, run_tree
    from ai_agent.graph.history import HistoryEntry
    from ai_agent.graph.options import PROFILES
    from ai_agent.graph.pipeline import Pipeline, PipelineBuilder
    from ai_agent.graph.player import ModelIdentity, ReplayMode
    from ai_agent.graph.prune import PruneReport
    from ai_agent.graph.regression import CaseResult, check_case, replay_case
    from ai_agent.graph.replay import REPLAY_MODES, trace_signature
    from ai_agent.graph.result import RunResult
    from ai_agent.graph.review import open_toolsmaker
    from ai_agent.graph.testfile import AgentRecipe, case_file_names, regression_test_text
    from ai_agent.graph.timeline import TimelineRow
    from ai_agent.graph.tool_pins import StoredToolPins
    from ai_agent.graph.tooling import AgentTools, ToolListing
    from ai_agent.graph.usage_report import CostRates
    from ai_agent.graph.worker import PlanOutcome, Worker, WorkerEvent

__all__ = [
    "PROFILES",
    "REPLAY_MODES",
    "Agent",
    "AgentRecipe",
    "AgentTools",
    "CaseResult",
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
    "StoredToolPins",
    "TimelineRow",
    "ToolListing",
    "UnreadChannels",
    "Worker",
    "WorkerEvent",
    "build_graph",
    "case_file_names",
    "check_case",
    "check_thread_id",
    "export_case",
    "family_of",
    "import_case",
    "mermaid",
    "new_thread_id",
    "open_toolsmaker",
    "own_fields",
    "read_case",
    "recursion_limit",
    "regression_test_text",
    "replay_case",
    "rule_allows",
    "run_tree",
    "tool_catalog",
    "trace_signature",
    "write_case",
]

_HOMES = {
    "PROFILES": "ai_agent.graph.options",
    "REPLAY_MODES": "ai_agent.graph.replay",
    "Agent": "ai_agent.graph.agent",
    "AgentRecipe": "ai_agent.graph.testfile",
    "CaseResult": "ai_agent.graph.regression",
    "AgentTools": "ai_agent.graph.tooling",
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
    "StoredToolPins": "ai_agent.graph.tool_pins",
    "TimelineRow": "ai_agent.graph.timeline",
    "ToolListing": "ai_agent.graph.tooling",
    "UnreadChannels": "ai_agent.graph.channels",
    "Worker": "ai_agent.graph.worker",
    "WorkerEvent": "ai_agent.graph.worker",
    "build_graph": "ai_agent.graph.build",
    "case_file_names": "ai_agent.graph.testfile",
    "check_case": "ai_agent.graph.regression",
    "check_thread_id": "ai_agent.graph.database",
    "export_case": "ai_agent.graph.cases",
    "family_of": "ai_agent.graph.family",
    "import_case": "ai_agent.graph.cases",
    "mermaid": "ai_agent.graph.export",
    "new_thread_id": "ai_agent.graph.database",
    "open_toolsmaker": "ai_agent.graph.review",
    "read_case": "ai_agent.graph.cases",
    "own_fields": "ai_agent.graph.channels",
    "recursion_limit": "ai_agent.graph.build",
    "regression_test_text": "ai_agent.graph.testfile",
    "replay_case": "ai_agent.graph.regression",
    "rule_allows": "ai_agent.graph.rules",
    "run_tree": "ai_agent.graph.family",
    "tool_catalog": "ai_agent.graph.catalog",
    "trace_signature": "ai_agent.graph.replay",
    "write_case": "ai_agent.graph.cases",
}


__getattr__, __dir__ = lazy_names(__name__, _HOMES)
