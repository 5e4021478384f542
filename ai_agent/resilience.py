"""Retries by level and a circuit breaker: an import path kept for `ai_agent.models.resilience`.

The module moved into the ``models`` package (it is how model calls survive flaky backends, and
the tool retries share its policy); the names stay importable from here, unchanged.
"""

from __future__ import annotations

from ai_agent.models.resilience import (
    NEVER_RETRIED_STATUSES,
    BreakerState,
    CircuitBreaker,
    RetryPolicy,
    error_names,
    parse_retry_after,
    retry_tool,
    tool_error_names,
    with_kinds,
)

__all__ = [
    "NEVER_RETRIED_STATUSES",
    "BreakerState",
    "CircuitBreaker",
    "RetryPolicy",
    "error_names",
    "parse_retry_after",
    "retry_tool",
    "tool_error_names",
    "with_kinds",
]
