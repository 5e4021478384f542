"""The documentation site builds with warnings as errors (``mkdocs build --strict``).

The build is what CI would run on its own: a subprocess, the repository's ``mkdocs.yml``, a
temporary output directory. A broken link, a docstring mkdocstrings cannot parse, a page missing
from the navigation or a reference to a name that no longer exists fails it. Nothing is fetched:
the theme, search and API pages are all built from installed packages.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.timeout(600)


def test_the_site_builds_strict(tmp_path: Path) -> None:
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # mkdocs-material's banner, not a warning
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "WARNING" not in done.stderr, done.stderr[-4000:]
    assert (site / "index.html").is_file()
    assert (site / "reference" / "ai_agent" / "index.html").is_file()
