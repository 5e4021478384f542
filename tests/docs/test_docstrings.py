"""Every docstring example in the package runs, not only those of the modules listed elsewhere.

The per-area tests (``tests/test_doctests.py``, ``tests/graph/``, ``tests/tools/``, ``tests/mcp/``,
``tests/observability/``, ``tests/maker/``) keep their lists, which also insist that each listed
module *has* examples; this test runs the examples of every other module, so a new example
cannot rot unseen. A ``__main__`` module is skipped: importing it runs the command line.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import ai_agent
from tests import test_doctests as core_doctests
from tests.graph import test_doctests as graph_doctests
from tests.maker import test_doctests as maker_doctests
from tests.mcp import test_doctests as mcp_doctests
from tests.observability import test_doctests as observability_doctests
from tests.tools import test_doctests as tools_doctests

COVERED_ELSEWHERE = {
    *core_doctests.MODULES,
    *graph_doctests.MODULES,
    *maker_doctests.MODULES,
    *mcp_doctests.MODULES,
    *observability_doctests.MODULES,
    *tools_doctests.MODULES,
}


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
