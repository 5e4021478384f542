"""Every code example in the documentation runs: README.md and every page under docs/.

How each kind of block is run is in ``tests/docs/runner.py``. Examples use the scripted model,
the function model or the mock server, so they are deterministic and need no network; the test's
working directory, HOME and ``MAMBA_*`` environment are private (tests/conftest.py), and any model
call that slips through goes to a closed port.

Pages with a test of their own are left to it, so nothing runs twice.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ai_agent.observability import unconfigure_logging
from tests.docs.runner import PageRunner, blocks

REPO = Path(__file__).resolve().parents[2]

# page -> the test that runs it (with set-up this runner does not do: real MCP servers, doctest)
OWN_TESTS = {
    "docs/mcp.md": "tests/mcp/test_docs.py",
    "docs/observability.md": "tests/observability/test_docs.py",
    "docs/toolsmaker.md": "tests/maker/test_docs.py",
}

pytestmark = pytest.mark.timeout(300)


def pages() -> list[str]:
    found = ["README.md", *(str(p.relative_to(REPO)) for p in (REPO / "docs").rglob("*.md"))]
    return sorted(p for p in found if p not in OWN_TESTS)


@pytest.mark.parametrize("page", pages())
def test_page_examples_run(
    page: str, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A reader's environment: the default retries (the suite's conftest turns them off).
    monkeypatch.delenv("MAMBA_MODEL_BACKEND__MAX_RETRIES")
    try:
        report = PageRunner(REPO / page, name=page).run()
    finally:
        unconfigure_logging()  # a page may switch the engine's logging on
    # An example that quietly needs a real model server "runs" into a failed run: catch it.
    unreachable = [r.getMessage() for r in caplog.records if "cannot reach" in r.getMessage()]
    assert not unreachable, f"{page}: an example needs a model server: {unreachable[0]}"
    code = [b for b in blocks((REPO / page).read_text()) if b.lang in ("python", "bash")]
    # A page that shows code runs some of it; opting out is for a few blocks, not a page.
    if code:
        assert report.python + report.shell_run + report.shell_parsed > 0, report
    assert len(report.skipped) <= 2, report.skipped


def test_pages_with_their_own_test_have_it() -> None:
    for page, test in OWN_TESTS.items():
        assert (REPO / page).is_file(), page
        assert (REPO / test).is_file(), test


def test_every_page_is_collected() -> None:
    collected = pages()
    assert "README.md" in collected
    assert "docs/tools.md" in collected
    assert not set(OWN_TESTS) & set(collected)
