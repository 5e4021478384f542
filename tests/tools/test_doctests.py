"""The examples in the tools' docstrings run, and say what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
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
    "ai_agent.tools.toolset",
    "ai_agent.tools.builtin",
    "ai_agent.tools.builtin.bash",
    "ai_agent.tools.builtin.files",
    "ai_agent.tools.builtin.notes",
    "ai_agent.tools.builtin.notes_index",
    "ai_agent.tools.builtin.notes_rank",
    "ai_agent.tools.builtin.patterns",
    "ai_agent.tools.builtin.sandbox",
    "ai_agent.tools.builtin.search",
    "ai_agent.tools.builtin.shellparse",
    "ai_agent.tools.builtin.web_search",
    "ai_agent.graph.tools_mixin",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0
    assert result.attempted > 0, f"{name} has no examples"
