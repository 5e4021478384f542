"""The examples in the docstrings run: a public example that rots is worse than none."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "ai_agent.accounting",
    "ai_agent.compaction",
    "ai_agent.compaction.base",
    "ai_agent.compaction.compactor",
    "ai_agent.compaction.strategies",
    "ai_agent.context",
    "ai_agent.events",
    "ai_agent.graph.events",
    "ai_agent.graph.streaming",
    "ai_agent.models",
    "ai_agent.nodes._output",
    "ai_agent.resilience",
    "ai_agent.testing",
    "ai_agent.testing.server",
    "ai_agent.tokens",
    "ai_agent.usage",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert tried > 0, f"{name} has no examples"
    assert failures == 0
