"""The examples in the observability docstrings run."""

from __future__ import annotations

import doctest
import importlib

import pytest

from ai_agent.observability import unconfigure_logging

MODULES = [
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
    "ai_agent.graph.events",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    try:
        failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    finally:
        unconfigure_logging()
    assert tried > 0, f"{name} has no examples"
    assert failures == 0
