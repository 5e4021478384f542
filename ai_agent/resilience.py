"""Retries by level and a circuit breaker: an import path kept for `ai_agent.models.resilience`.

The module moved into the ``models`` package (it is how model calls survive flaky backends, and
the tool retries share its policy); the names stay importable from here, unchanged. The star
import follows that module's ``__all__``, so the two cannot drift apart.
"""

from __future__ import annotations

from ai_agent.models.resilience import *  # noqa: F403
from ai_agent.models.resilience import __all__  # noqa: F401  (re-exported: the same names)
