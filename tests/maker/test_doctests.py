"""The examples in the toolsmaker's docstrings run."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "ai_agent.tools.maker.approvals",
    "ai_agent.tools.maker.audit",
    "ai_agent.tools.maker.builder",
    "ai_agent.tools.maker.loader",
    "ai_agent.tools.maker.policy",
    "ai_agent.tools.maker.registry",
    "ai_agent.tools.maker.storage",
    "ai_agent.tools.maker.validator",
    "ai_agent.graph.toolsmaker_mixin",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0
    assert result.attempted > 0, f"{name} has no examples"
