"""A child run's usage rolled up into its parent's (a subagent's tool result).

A subagent's tool result carries the child's usage totals in ``meta.child_usage``
(``ai_agent.graph.subagents``). act adds them to the parent's totals (``usage``) and keeps one
usage record for the call (``purpose="subagent"``), so the parent's token and cost figures,
and the budget checked before each of its model calls, cover its whole tree.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from ai_agent.state import ToolResult, UsageRecord

__all__ = ["child_usage"]

_TOKENS = ("prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens")


def _count(value: object) -> int:
    """A count from a child's totals: anything but a non-negative number counts as 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return 0
    return int(value)


def child_usage(
    result: ToolResult, total: Mapping[str, Any] | None, iteration: int
) -> tuple[dict[str, Any], UsageRecord] | None:
    """The parent's totals with a child's usage added, and the record of it; None without one.

    Examples:
        >>> result = {"status": "ok", "meta": {"child_usage": {"prompt_tokens": 7,
        ...           "completion_tokens": 3, "total_tokens": 10, "requests": 2, "cost": 0.5}}}
        >>> totals, record = child_usage(result, {"total_tokens": 5, "requests": 1}, 2)
        >>> totals["total_tokens"], totals["requests"], record["purpose"]
        (15, 3, 'subagent')
    """
    usage = (result.get("meta") or {}).get("child_usage")
    if not isinstance(usage, Mapping) or not usage:
        return None
    out = dict(total or {})
    record = UsageRecord(
        iteration=iteration,
        at=time.time(),
        prompt_tokens=_count(usage.get("prompt_tokens")),
        completion_tokens=_count(usage.get("completion_tokens")),
        total_tokens=_count(usage.get("total_tokens")),
        purpose="subagent",
    )
    for key in _TOKENS:
        out[key] = out.get(key, 0) + _count(usage.get(key))
    out["requests"] = out.get("requests", 0) + _count(usage.get("requests"))
    cost = usage.get("cost")
    if isinstance(cost, int | float) and not isinstance(cost, bool) and cost > 0:
        record["cost"] = float(cost)
        out["cost"] = round(out.get("cost", 0.0) + float(cost), 9)
    return out, record
