"""The examples in the docstrings run: a public example that rots is worse than none.

Each module listed must have examples, so one that loses them fails here instead of dropping out.
"""

from __future__ import annotations

import doctest
import importlib

import pytest

from ai_agent.observability import unconfigure_logging

MODULES = [
    # core: accounting, compaction, context, events, models, tokens
    "ai_agent._loopless",
    "ai_agent.accounting",
    "ai_agent.compaction",
    "ai_agent.compaction.base",
    "ai_agent.compaction.compactor",
    "ai_agent.compaction.strategies",
    "ai_agent.context",
    "ai_agent.datafiles",
    "ai_agent.events",
    "ai_agent.issues",
    "ai_agent.graph.events",
    "ai_agent.graph.streaming",
    "ai_agent.models",
    "ai_agent.models.resilience",
    "ai_agent.models.resolve",
    "ai_agent.nodes._output",
    "ai_agent.nodes._rollup",
    "ai_agent.testing",
    "ai_agent.testing.server",
    "ai_agent.tokens",
    "ai_agent.media_tokens",
    "ai_agent.usage",
    "ai_agent.visible",
    # replay, debugging, checkpoints
    "ai_agent.checkpoints.backends",
    "ai_agent.checkpoints.store",
    "ai_agent.checkpoints.versions",
    "ai_agent.graph.archive",
    "ai_agent.graph.archive_plans",
    "ai_agent.graph.database",
    "ai_agent.graph.divergence",
    "ai_agent.graph.export",
    "ai_agent.graph.family",
    "ai_agent.graph.history",
    "ai_agent.graph.inspection",
    "ai_agent.graph.recording",
    "ai_agent.graph.replay",
    "ai_agent.graph.state_edits",
    "ai_agent.graph.subagents",
    "ai_agent.graph.summary",
    "ai_agent.graph.tooling",
    "ai_agent.graph.usage_report",
    "ai_agent.graph.worker",
    # tools
    "ai_agent.tools",
    "ai_agent.tools.adapters",
    "ai_agent.tools.base",
    "ai_agent.tools.building",
    "ai_agent.tools.decorator",
    "ai_agent.tools.docstrings",
    "ai_agent.tools.naming",
    "ai_agent.tools.registry",
    "ai_agent.tools.results",
    "ai_agent.tools.schema",
    "ai_agent.tools.spec",
    "ai_agent.tools.snapshot",
    "ai_agent.tools.toolsets.base",
    "ai_agent.tools.toolsets.child",
    "ai_agent.tools.toolsets.functions",
    "ai_agent.tools.toolsets.builtin",
    "ai_agent.tools.toolsets.spans",
    "ai_agent.tools.builtin",
    "ai_agent.tools.builtin.bash",
    "ai_agent.tools.builtin.files",
    "ai_agent.tools.builtin.notes",
    "ai_agent.tools.builtin.notes_index",
    "ai_agent.tools.builtin.notes_rank",
    "ai_agent.tools.builtin.notes_terms",
    "ai_agent.tools.builtin.patterns",
    "ai_agent.tools.builtin.sandbox",
    "ai_agent.tools.builtin.search",
    "ai_agent.tools.builtin.shellparse",
    "ai_agent.tools.builtin.typed",
    "ai_agent.tools.builtin.web_search",
    # the toolsmaker
    "ai_agent.tools.maker.approvals",
    "ai_agent.tools.maker.audit",
    "ai_agent.tools.maker.builder",
    "ai_agent.tools.maker.loader",
    "ai_agent.tools.maker.allowlists",
    "ai_agent.tools.maker.registry",
    "ai_agent.tools.maker.storage",
    "ai_agent.tools.maker.toolset",
    "ai_agent.tools.maker.validator",
    # MCP
    "ai_agent.tools.mcp",
    "ai_agent.tools.mcp.adapt",
    "ai_agent.tools.mcp.manager",
    "ai_agent.tools.mcp.resolve",
    "ai_agent.tools.mcp.toolset",
    # observability
    "ai_agent.observability",
    "ai_agent.observability._scope",
    "ai_agent.observability.hooks",
    "ai_agent.observability.httplog",
    "ai_agent.observability.ids",
    "ai_agent.observability.logs",
    "ai_agent.observability.metrics",
    "ai_agent.observability.redaction",
    "ai_agent.observability.telemetry",
    "ai_agent.observability.tooldata",
    "ai_agent.observability.tracing",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    try:
        failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    finally:
        unconfigure_logging()  # the observability examples configure logging
    assert tried > 0, f"{name} has no examples"
    assert failures == 0
