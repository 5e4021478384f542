"""LangGraph's own checkpointer conformance suite (``langgraph-checkpoint-conformance``), run here.

The package is pinned in the dev group, so CI runs the same tests every time. It runs every base
capability (put, put_writes, get_tuple, list, delete_thread) and every extended one the saver
implements (delete_for_runs, copy_thread, prune) against a fresh delta saver on a SQLite file.
``docs/compatibility.md`` reports the count this test asserts: when a new pin adds tests, update
both.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.initializer import RegisteredCheckpointer

from ai_agent.checkpoints import DeltaSaver

EXPECTED_TESTS = 81
"""Tests the pinned suite runs against the delta saver (all eight capabilities)."""


def _registered(directory: Path) -> RegisteredCheckpointer:
    files = iter(range(1_000))

    @checkpointer_test(name="DeltaSaver")
    async def delta() -> AsyncIterator[DeltaSaver]:
        async with DeltaSaver(directory / f"c{next(files)}.sqlite") as saver:
            yield saver

    return delta


@pytest.mark.timeout(600)
async def test_the_delta_saver_passes_langgraphs_conformance_suite(tmp_path: Path) -> None:
    report = await validate(_registered(tmp_path))
    results = report.results
    failures = {name: r.failures for name, r in results.items() if r.failures}
    assert failures == {}
    assert {name for name, r in results.items() if r.detected} == {
        "put",
        "put_writes",
        "get_tuple",
        "list",
        "delete_thread",
        "delete_for_runs",
        "copy_thread",
        "prune",
    }
    assert report.conformance_level() == "FULL"
    assert sum(r.tests_passed for r in results.values()) == EXPECTED_TESTS
    assert sum(r.tests_skipped for r in results.values()) == 0
