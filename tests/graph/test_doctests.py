"""The examples in the docstrings of the replay and debugging modules run and hold."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "ai_agent.checkpoints.store",
    "ai_agent.checkpoints.versions",
    "ai_agent.graph.divergence",
    "ai_agent.graph.export",
    "ai_agent.graph.history",
    "ai_agent.graph.inspection",
    "ai_agent.graph.recording",
    "ai_agent.graph.replay",
    "ai_agent.graph.summary",
    "ai_agent.graph.worker",
    "ai_agent.models",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0
