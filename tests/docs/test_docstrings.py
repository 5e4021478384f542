"""Every docstring example in the package runs, not only those of the modules listed elsewhere.

``tests/test_doctests.py`` keeps a list, which also insists that each listed module *has*
examples; this test runs the examples of every other module, so a new example cannot rot
unseen. A ``__main__`` module is skipped: importing it runs the command line.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import ai_agent
from tests import test_doctests

COVERED_ELSEWHERE = set(test_doctests.MODULES)


# The toolsmaker's sandbox runner is a script for the sandbox (its socket's descriptor comes from
# its command line): importing it here would read this process's arguments.
NOT_IMPORTABLE = {"ai_agent.tools.maker._child"}


def _modules() -> list[str]:
    names = [m.name for m in pkgutil.walk_packages(ai_agent.__path__, "ai_agent.")]
    skip = COVERED_ELSEWHERE | NOT_IMPORTABLE
    return sorted(n for n in names if not n.endswith("__main__") and n not in skip)


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_the_walk_finds_the_package() -> None:
    names = _modules()
    assert "ai_agent.graph.agent" in names and "ai_agent.config" in names
