"""ai_agent.usage: the inspection figures computed from any state."""

from __future__ import annotations

from typing import Any

from ai_agent.config import BudgetConfig
from ai_agent.tokens import TokenCounter
from ai_agent.usage import context_state, cost_estimate, token_breakdown, token_usage, usage_history


def record(iteration: int, total: int, cost: float, **extra: Any) -> dict[str, Any]:
    return {
        "iteration": iteration,
        "at": float(iteration),
        "model": "m",
        "prompt_tokens": total - 1,
        "completion_tokens": 1,
        "total_tokens": total,
        "cost": cost,
        **extra,
    }


def test_history_has_running_totals_and_an_empty_state_is_all_zero() -> None:
    state = {"usage_log": [record(1, 10, 0.5), record(2, 20, 0.25, purpose="compaction")]}
    rows = usage_history(state)
    assert [(r["cumulative_total_tokens"], r["cumulative_cost"]) for r in rows] == [
        (10, 0.5),
        (30, 0.75),
    ]
    totals = token_usage(state)
    assert set(totals["by_purpose"]) == {"draft", "compaction"}
    assert totals["mean_estimate_error"] is None
    empty = token_usage({})
    assert (empty["total_tokens"], empty["requests"], empty["cost"]) == (0, 0, 0.0)
    assert usage_history({}) == []


def test_cost_estimate_with_and_without_a_budget() -> None:
    state = {"usage_log": [record(1, 10, 0.5)], "budget_allowance": {"cost": 3.0}}
    plain = cost_estimate(state)
    assert (plain["total"], plain["limit"], plain["currency"]) == (0.5, None, "USD")
    limited = cost_estimate(state, BudgetConfig(max_cost=1.0, currency="EUR"))
    # A person's plan granted more: the allowance (3.0) is the limit now.
    assert (limited["limit"], limited["remaining"], limited["currency"]) == (3.0, 2.5, "EUR")
    assert limited["rates"]["m"]["prompt_per_1m"] == 0.0


def test_context_state_lists_tool_calls_still_waiting_for_a_result() -> None:
    state = {
        "messages": [
            {"role": "user", "content": "go", "kind": "task"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "a", "name": "t", "args": {}}],
            },
        ]
    }
    view = context_state(state, TokenCounter(), trigger=100, target=80)
    assert [c["id"] for c in view["pending_tool_calls"]] == ["a"]
    assert (view["compaction_trigger"], view["compaction_target"]) == (100, 80)
    breakdown = token_breakdown(state, TokenCounter())
    assert breakdown["context"]["system_prompt"] == 0
    assert breakdown["per_tool"] == {}
