"""Usage a tool result carries, rolled up into the run's: a subagent's, a summary call's.

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

__all__ = ["child_usage", "summary_usage"]

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


def summary_usage(
    result: ToolResult, total: Mapping[str, Any] | None
) -> tuple[dict[str, Any], UsageRecord] | None:
    """The run's totals with the summary call of a result added, and its record; None: none.

    A result whose long output the model summarized (``output_summary = "model"``) carries
    that call's usage record in ``meta.summary_usage`` (made by the run's meter, see
    ``ai_agent.tools.model_summary``): one more request of the run, ``purpose`` output_summary.

    Examples:
        >>> result = {"status": "ok", "meta": {"summary_usage": {"iteration": 2, "at": 0.0,
        ...           "prompt_tokens": 90, "completion_tokens": 10, "total_tokens": 100,
        ...           "cost": 0.25}}}
        >>> totals, record = summary_usage(result, {"total_tokens": 5, "requests": 1})
        >>> totals["total_tokens"], totals["requests"], totals["cost"], record["purpose"]
        (105, 2, 0.25, 'output_summary')
    """
    usage = (result.get("meta") or {}).get("summary_usage")
    if not isinstance(usage, Mapping) or not usage:
        return None
    record = UsageRecord(**{k: v for k, v in usage.items() if isinstance(k, str)})  # type: ignore[typeddict-item]
    record["purpose"] = "output_summary"
    record["iteration"] = _count(usage.get("iteration"))
    at = usage.get("at")
    record["at"] = float(at) if isinstance(at, int | float) and not isinstance(at, bool) else 0.0
    out = dict(total or {})
    for key in _TOKENS:
        record[key] = _count(usage.get(key))
        out[key] = out.get(key, 0) + record[key]
    out["requests"] = out.get("requests", 0) + 1
    cost = usage.get("cost")
    if isinstance(cost, int | float) and not isinstance(cost, bool) and cost > 0:
        record["cost"] = float(cost)
        out["cost"] = round(out.get("cost", 0.0) + float(cost), 9)
    else:
        record.pop("cost", None)
    return out, record
