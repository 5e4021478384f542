"""Imported once by the fork server of ``forked.py``: the engine, warmed by one throwaway run.

A run imports more than ``import ai_agent`` does (the token counter's tables, JSON schema
checks...); doing one here means every forked process starts with all of it loaded. Every
thread and file of that run is closed again before the server forks anything.
"""

from __future__ import annotations

import contextlib
import io
import tempfile

from tests.graph import proc_agent


def _warm() -> None:
    with tempfile.TemporaryDirectory() as work, contextlib.redirect_stdout(io.StringIO()):
        proc_agent.main([f"{work}/c.sqlite", work, "run", "warm"])


_warm()
