"""Token usage, cost and context inspection: pure functions over a run's state.

The draft stage keeps one `UsageRecord` per model request in the run's
``usage_log`` and one `CompactionRecord` per compaction in ``compactions``.
These functions read them (and the conversation) back as the inspection helpers of spec 5.8:
the Agent's ``get_token_usage()`` and friends call them with the state of a thread, and anything
else holding a state (a replay, a recorded run) can call them too.

Examples:
    >>> state = {"usage_log": [{"iteration": 1, "at": 0.0, "prompt_tokens": 10,
    ...     "completion_tokens": 5, "total_tokens": 15, "cost": 0.25, "source": "server",
    ...     "estimate_error": 0.02}]}
    >>> token_usage(state)["total_tokens"], token_usage(state)["mean_estimate_error"]
    (15, 0.02)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard

from ai_agent.state import RunState, UsageRecord

if TYPE_CHECKING:
    from ai_agent.config import BudgetConfig
    from ai_agent.tokens import TokenCounter

__all__ = [
    "MAX_REPORTED_TOKENS",
    "context_state",
    "cost_estimate",
    "counted_usage",
    "token_breakdown",
    "token_usage",
    "usage_history",
    "usage_is_counted",
]

# No model's context window is near this many tokens: a larger count is a broken server.
MAX_REPORTED_TOKENS = 10**9


def usage_is_counted(usage: object) -> TypeGuard[Mapping[str, Any]]:
    """Whether a `ModelReply`'s ``usage`` is a mapping of counts a server could have made.

    ``prompt_tokens``, ``completion_tokens`` and ``total_tokens`` (0 when absent) and
    ``cached_tokens`` (0 when absent or empty) must each be an int from 0 to
    `MAX_REPORTED_TOKENS`. Usage that is not is no usage: taken, a negative count makes a
    negative cost and lets a run past its budget, and a count past 64 bits cannot be
    checkpointed. The one check for every caller: the OpenAI-compatible client
    (`ai_agent.models.messages.usage_of`) and the accounting of any other ``ModelCaller``.

    Examples:
        >>> usage_is_counted({"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7})
        True
        >>> usage_is_counted({"prompt_tokens": -5}), usage_is_counted({"total_tokens": 10**30})
        (False, False)
        >>> usage_is_counted([5, 2, 7])
        False
    """
    if not isinstance(usage, Mapping):
        return False
    values = [usage.get(key, 0) for key in ("prompt_tokens", "completion_tokens", "total_tokens")]
    values.append(usage.get("cached_tokens") or 0)
    return all(
        isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_REPORTED_TOKENS
        for value in values
    )


def counted_usage(usage: object) -> Mapping[str, Any]:
    """``usage`` when a server could have counted it (`usage_is_counted`), else no usage.

    Examples:
        >>> counted_usage({"total_tokens": 7}), counted_usage({"total_tokens": -7})
        ({'total_tokens': 7}, {})
    """
    return usage if usage_is_counted(usage) else {}


_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens")


def _log(state: Mapping[str, Any]) -> list[UsageRecord]:
    return list(state.get("usage_log") or [])


def _sum(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = dict.fromkeys(_KEYS, 0)
    for record in records:
        for key in _KEYS:
            out[key] += int(record.get(key, 0) or 0)
    out["requests"] = len(records)
    out["cost"] = round(sum(float(r.get("cost", 0.0) or 0.0) for r in records), 9)
    return out


def token_usage(state: RunState | Mapping[str, Any]) -> dict[str, Any]:
    """Session totals: prompt/completion/total/cached tokens, requests, cost, estimate error.

    ``by_purpose`` splits drafts from compaction calls; ``estimated_requests`` counts requests
    whose server reported no usage (their counts are tiktoken estimates);
    ``mean_estimate_error`` is the mean relative error of our prompt estimate against the
    server's counts (None when the server never reported usage).
    """
    log = _log(state)
    out = _sum(log)
    purposes: dict[str, list[UsageRecord]] = {}
    for record in log:
        purposes.setdefault(str(record.get("purpose", "draft")), []).append(record)
    out["by_purpose"] = {name: _sum(records) for name, records in purposes.items()}
    out["estimated_requests"] = sum(1 for r in log if r.get("source") == "estimate")
    errors = [float(e) for r in log if (e := r.get("estimate_error")) is not None]
    out["mean_estimate_error"] = round(sum(errors) / len(errors), 4) if errors else None
    return out


def usage_history(state: RunState | Mapping[str, Any]) -> list[dict[str, Any]]:
    """The time series: each request's record with running totals (``cumulative_*``)."""
    out: list[dict[str, Any]] = []
    running = dict.fromkeys((*_KEYS, "cost"), 0.0)
    for record in _log(state):
        row = dict(record)
        for key in running:
            running[key] += float(record.get(key, 0) or 0)  # type: ignore[arg-type]
            row[f"cumulative_{key}"] = (
                round(running[key], 9) if key == "cost" else int(running[key])
            )
        out.append(row)
    return out


def cost_estimate(
    state: RunState | Mapping[str, Any], budget: BudgetConfig | None = None
) -> dict[str, Any]:
    """Estimated cost so far: total, per model, per request, and against the run's limit."""
    log = _log(state)
    by_model: dict[str, float] = {}
    for record in log:
        model = str(record.get("model", ""))
        by_model[model] = round(by_model.get(model, 0.0) + float(record.get("cost", 0.0)), 9)
    total = round(sum(by_model.values()), 9)
    out: dict[str, Any] = {
        "currency": budget.currency if budget is not None else "USD",
        "total": total,
        "by_model": by_model,
        "per_request": [
            {"iteration": r["iteration"], "model": r.get("model", ""), "cost": r.get("cost", 0.0)}
            for r in log
        ],
        "limit": None,
        "remaining": None,
    }
    if budget is not None:
        out["rates"] = {model: budget.rate_for(model).model_dump() for model in by_model or {"": 0}}
        allowance = (state.get("budget_allowance") or {}).get("cost")
        if budget.max_cost is not None:
            limit = max(budget.max_cost, float(allowance or 0.0))
            out["limit"], out["remaining"] = limit, round(limit - total, 9)
    return out


def _per_tool(state: Mapping[str, Any], counter: TokenCounter) -> dict[str, dict[str, int]]:
    tools: dict[str, dict[str, int]] = {}

    def slot(name: str) -> dict[str, int]:
        return tools.setdefault(
            name, {"calls": 0, "call_tokens": 0, "result_tokens": 0, "in_context": 0}
        )

    for record in _log(state):
        for name in record.get("tools_called") or []:
            slot(name)["calls"] += 1
        for name, tokens in (record.get("tool_call_tokens") or {}).items():
            slot(name)["call_tokens"] += tokens
        for name, tokens in (record.get("tool_result_tokens") or {}).items():
            slot(name)["result_tokens"] += tokens
    for message in state.get("messages") or []:
        if message["role"] == "tool":
            slot(message.get("name") or "tool")["in_context"] += counter.count_message(message)
    return tools


def token_breakdown(
    state: RunState | Mapping[str, Any],
    counter: TokenCounter,
    *,
    system_prompt: str = "",
    tools: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """Where the tokens go: the next request by component, and usage by tool.

    ``context`` counts the request the next draft would send (system prompt, tool definitions,
    messages by role and by kind); ``per_tool`` attributes tokens to each tool: the calls the
    model wrote (``call_tokens``), the results it was fed (``result_tokens``) and what of its
    results is still in the conversation (``in_context``).
    """
    by_role: dict[str, int] = {}
    by_kind: dict[str, int] = {}
    for message in state.get("messages") or []:
        tokens = counter.count_message(message)
        by_role[message["role"]] = by_role.get(message["role"], 0) + tokens
        kind = message.get("kind")
        if kind:
            by_kind[kind] = by_kind.get(kind, 0) + tokens
    system = (
        counter.count_message({"role": "system", "content": system_prompt}) if system_prompt else 0
    )
    tool_defs = counter.count_tools(tools)
    messages = sum(by_role.values())
    return {
        "context": {
            "system_prompt": system,
            "tool_definitions": tool_defs,
            "messages": messages,
            "by_role": by_role,
            "by_kind": by_kind,
            "total": system + tool_defs + messages + 3,
        },
        "per_tool": _per_tool(state, counter),
        "usage": token_usage(state),
    }


def context_state(
    state: RunState | Mapping[str, Any],
    counter: TokenCounter,
    *,
    system_prompt: str = "",
    tools: Sequence[Mapping[str, Any]] = (),
    trigger: int | None = None,
    target: int | None = None,
    window: int | None = None,
) -> dict[str, Any]:
    """The context as the next request would see it, and the compaction history (spec 5.8.1).

    Returns the system prompt, the messages, their token counts (with the safety margin), the
    compaction trigger and target, the model's window when known, tool calls still waiting for a
    result, and every compaction done so far.
    """
    breakdown = token_breakdown(state, counter, system_prompt=system_prompt, tools=tools)
    total = breakdown["context"]["total"]
    messages = list(state.get("messages") or [])
    answered = {m.get("tool_call_id") for m in messages if m["role"] == "tool"}
    waiting = [c for m in messages for c in m.get("tool_calls") or [] if c["id"] not in answered]
    return {
        "system_prompt": system_prompt,
        "messages": messages,
        "message_count": len(messages),
        "tokens": breakdown["context"],
        "tokens_with_margin": counter.with_margin(total),
        "encoding": counter.encoding_name,
        "compaction_trigger": trigger,
        "compaction_target": target,
        "context_window": window,
        "pending_tool_calls": waiting,
        "compactions": list(state.get("compactions") or []),
    }
