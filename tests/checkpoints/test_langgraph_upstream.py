"""LangGraph's own checkpointer tests (``tests/upstream_langgraph``): what runs is what we report.

The vendored tests run with the rest of the suite (the README's and CI's ``uv run pytest``), so a
failure of the delta saver in any of them fails CI by itself. These tests pin the rest: the files
match the installed LangGraph, the number of tests that run against the delta saver is the one
``docs/compatibility.md`` reports, and the folder's README names every test left out.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SUITE = REPO / "tests" / "upstream_langgraph"
VENDORED = SUITE / "vendor"

VENDORED_LANGGRAPH = "1.2.22"
"""The langgraph release the vendored files come from (README.md says how to refresh them)."""
EXPECTED_RUN = 648
"""Tests that run against the delta saver (checkpointer tests x their other parameters)."""
EXPECTED_DESELECTED = 256
"""Tests of the vendored files that take no checkpointer fixture."""

_CHECKPOINTER_FIXTURES = {"sync_checkpointer", "async_checkpointer"}


def _tests_without_a_checkpointer() -> set[str]:
    found: set[str] = set()
    for path in sorted(VENDORED.glob("test_*.py")):
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            if node.name.startswith("test") and not (
                {a.arg for a in node.args.args} & _CHECKPOINTER_FIXTURES
            ):
                found.add(f"{path.name}::{node.name}")
    return found


def _listed_in_readme() -> set[str]:
    listed: set[str] = set()
    current = ""
    for line in (SUITE / "README.md").read_text().splitlines():
        if match := re.fullmatch(r"- `(test_\w+\.py)`", line):
            current = match[1]
        elif current and (match := re.match(r"  - (no saver|their own saver): (.*)", line)):
            listed |= {f"{current}::{name}" for name in re.findall(r"`(\w+)`", match[2])}
    return listed


def test_the_vendored_tests_are_those_of_the_installed_langgraph() -> None:
    assert version("langgraph") == VENDORED_LANGGRAPH, (
        "uv.lock moved langgraph: refresh tests/upstream_langgraph (its README says how)"
    )
    assert (VENDORED / "LICENSE").read_text().startswith("MIT License")


@pytest.mark.timeout(300)
def test_the_count_docs_report_is_what_runs_against_the_delta_saver() -> None:
    options = ["--collect-only", "-q", "--no-cov", "-p", "no:randomly", "-p", "no:cacheprovider"]
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", *options, str(SUITE.relative_to(REPO))],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert collected.returncode == 0, collected.stdout[-2000:] + collected.stderr[-2000:]
    total = EXPECTED_RUN + EXPECTED_DESELECTED
    summary = f"{EXPECTED_RUN}/{total} tests collected ({EXPECTED_DESELECTED} deselected)"
    assert summary in collected.stdout
    node_ids = [line for line in collected.stdout.splitlines() if "::" in line]
    assert len(node_ids) == EXPECTED_RUN
    # Every test that runs runs on the delta saver, sync or async.
    assert all(re.search(r"\[delta(_aio)?[\]-]", n) for n in node_ids)
    compatibility = (REPO / "docs" / "compatibility.md").read_text()
    assert f"**{EXPECTED_RUN} pass, 0 fail, {EXPECTED_DESELECTED} deselected**" in compatibility


def test_the_readme_names_every_deselected_test() -> None:
    assert _listed_in_readme() == _tests_without_a_checkpointer()
