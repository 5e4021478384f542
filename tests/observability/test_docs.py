"""The examples of docs/observability.md run."""

from __future__ import annotations

import doctest
from pathlib import Path

from ai_agent.observability import unconfigure_logging

DOC = Path(__file__).resolve().parents[2] / "docs" / "observability.md"


def test_the_observability_guide_examples_run() -> None:
    try:
        failures, tried = doctest.testfile(
            str(DOC), module_relative=False, optionflags=doctest.ELLIPSIS
        )
    finally:
        unconfigure_logging()
    assert tried > 10 and failures == 0
