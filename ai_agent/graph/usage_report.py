"""Tokens and costs of a run, shaped from its state and its recorded calls.

What ``get_token_usage``, ``get_context_state``, ``get_token_breakdown``, ``get_usage_history``
and ``get_cost_estimate`` return.

Token figures: usage totals are what the model server reported (or, for a request it reported
nothing for, the tiktoken estimate; the records say which). Breakdowns of the context are counted
with the configured tiktoken encoding; each result names its method. Costs use the configured
rates per model (``BudgetConfig.rates``), or the rates given.

Everything here is a pure function of data the archive read: no I/O, and no tokenizer import
(the counter is handed in).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Required, TypedDict

from ai_agent.state import Message, RunState, ToolCall, UsageRecord
from ai_agent.usage import context_state, cost_estimate, counted_usage, token_breakdown, token_usage

if TYPE_CHECKING:
    from ai_agent.checkpoints.recorded import ModelCallRecord
    from ai_agent.config import BudgetConfig
    from ai_agent.tokens import TokenCounter

__all__ = [
    "ContextState",
    "CostEstimate",
    "CostRates",
    "TokenBreakdown",
    "TokenUsage",
    "UsagePoint",
    "context_view",
    "cost_view",
    "estimate_tokens",
    "token_breakdown_view",
    "token_usage_view",
    "usage_points",
]


def estimate_tokens(text: str) -> int:
    """A rough token count (about four characters per token; never zero for non-empty text).

    Examples:
        >>> estimate_tokens(""), estimate_tokens("hello"), estimate_tokens("x" * 400)
        (0, 2, 100)
    """
    return (len(text) + 3) // 4


class TokenUsage(TypedDict):
    """Token usage of the run: what the server reported, estimates where it reported nothing.

    ``by_purpose`` splits drafts from compaction calls; ``estimated_requests`` counts requests
    the server gave no usage for; ``mean_estimate_error`` is the mean relative error of our
    tiktoken prompt estimate against the server's counts (None when it never reported).
    """

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cached_tokens: int
    requests: int
    cost: float
    by_purpose: dict[str, dict[str, Any]]
    estimated_requests: int
    mean_estimate_error: float | None


class ContextState(TypedDict):
    """The model's context as the next draft would send it, and what compaction did so far.

    ``estimated_tokens`` counts the request (system prompt, tool definitions, messages, reply
    priming); ``tokens_with_margin`` adds the safety margin used for window checks.
    """

    thread_id: str
    system_prompt: str
    messages: list[Message]
    message_count: int
    estimated_tokens: int
    tokens_with_margin: int
    compactions: list[dict[str, Any]]
    compaction_trigger: int
    compaction_target: int
    context_window: int | None
    pending_tool_calls: list[ToolCall]
    method: str


class TokenBreakdown(TypedDict):
    """Tokens of the current context by component, and tokens attributed to each tool.

    ``per_tool`` holds, for each tool: ``calls`` (how often the model called it),
    ``call_tokens`` (what writing those calls cost), ``result_tokens`` (what its results cost
    when first fed to the model) and ``in_context`` (what of its results is still there).
    """

    thread_id: str
    system_prompt: int
    messages_by_role: dict[str, int]
    messages_by_kind: dict[str, int]
    tool_schemas: int
    tool_results_by_tool: dict[str, int]
    per_tool: dict[str, dict[str, int]]
    total: int
    method: str


@dataclass(frozen=True, slots=True)
class CostRates:
    """Prices per million tokens.

    Examples:
        >>> CostRates(prompt_per_million=0.15, completion_per_million=0.6).currency
        'USD'
    """

    prompt_per_million: float = 0.0
    completion_per_million: float = 0.0
    currency: str = "USD"


class CostEstimate(TypedDict):
    """What a run cost, in total, per model and per request, and against its cost limit."""

    thread_id: str
    currency: str
    prompt_tokens: int
    completion_tokens: int
    prompt_cost: float
    completion_cost: float
    total_cost: float
    per_request: list[dict[str, Any]]
    by_model: dict[str, float]
    limit: float | None
    remaining: float | None


class UsagePoint(TypedDict, total=False):
    """One model request in the usage time series.

    The first keys are always there; the rest come from the run's usage record of the request
    (see `UsageRecord`): where the counts come from, our estimate and its
    error, cost, and which tools the request involved.
    """

    time: Required[float]
    step: Required[int | None]
    prompt_tokens: Required[int]
    completion_tokens: Required[int]
    total_tokens: Required[int]
    cumulative_tokens: Required[int]
    latency_ms: Required[float]
    replayed: Required[bool]
    iteration: int
    model: str
    purpose: str
    source: str
    cached_tokens: int
    estimated_prompt_tokens: int
    estimate_error: float | None
    calibrated_prompt_tokens: int
    calibrated_error: float
    cost: float
    cumulative_cost: float
    streamed: bool
    attempts: int
    tools_called: list[str]
    tool_call_tokens: dict[str, int]
    tool_result_tokens: dict[str, int]


def token_usage_view(state: RunState) -> TokenUsage:
    """The run's token totals (server figures, estimates where it gave none) and cost."""
    if not state.get("usage_log"):
        # A run stored before usage records existed: its summed server usage is all there is.
        usage = state.get("usage") or {}
        return TokenUsage(
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            total_tokens=int(usage.get("total_tokens", 0)),
            cached_tokens=int(usage.get("cached_tokens", 0)),
            requests=int(usage.get("requests", 0)),
            cost=float(usage.get("cost", 0.0)),
            by_purpose={},
            estimated_requests=0,
            mean_estimate_error=None,
        )
    totals = token_usage(state)
    return TokenUsage(
        prompt_tokens=totals["prompt_tokens"],
        completion_tokens=totals["completion_tokens"],
        total_tokens=totals["total_tokens"],
        cached_tokens=totals["cached_tokens"],
        requests=totals["requests"],
        cost=totals["cost"],
        by_purpose=totals["by_purpose"],
        estimated_requests=totals["estimated_requests"],
        mean_estimate_error=totals["mean_estimate_error"],
    )


def context_view(
    thread_id: str,
    state: RunState,
    counter: TokenCounter,
    *,
    system_prompt: str,
    tools: list[dict[str, Any]],
    trigger: int,
    target: int,
    window: int | None,
) -> ContextState:
    """The messages the next draft would send, their token counts, and the compactions."""
    view = context_state(
        state,
        counter,
        system_prompt=system_prompt,
        tools=tools,
        trigger=trigger,
        target=target,
        window=window,
    )
    from ai_agent.nodes.draft import compose_messages

    messages = compose_messages(system_prompt, list(state.get("messages", [])))
    return ContextState(
        thread_id=thread_id,
        system_prompt=system_prompt,
        messages=messages,
        message_count=len(messages),
        estimated_tokens=view["tokens"]["total"],
        tokens_with_margin=view["tokens_with_margin"],
        compactions=[dict(c) for c in view["compactions"]],
        compaction_trigger=trigger,
        compaction_target=target,
        context_window=view["context_window"],
        pending_tool_calls=view["pending_tool_calls"],
        method=_method(counter),
    )


def token_breakdown_view(
    thread_id: str,
    state: RunState,
    counter: TokenCounter,
    *,
    system_prompt: str,
    tools: list[dict[str, Any]],
) -> TokenBreakdown:
    """Tokens of the current context by component, and the tokens attributed to each tool."""
    found = token_breakdown(state, counter, system_prompt=system_prompt, tools=tools)
    context, per_tool = found["context"], found["per_tool"]
    return TokenBreakdown(
        thread_id=thread_id,
        system_prompt=context["system_prompt"],
        messages_by_role=context["by_role"],
        messages_by_kind=context["by_kind"],
        tool_schemas=context["tool_definitions"],
        tool_results_by_tool={k: v["in_context"] for k, v in per_tool.items() if v["in_context"]},
        per_tool=per_tool,
        total=context["total"],
        method=_method(counter),
    )


def _method(counter: TokenCounter) -> str:
    return f"tiktoken {counter.encoding_name}"


def cost_view(
    thread_id: str,
    points: Sequence[UsagePoint],
    state: RunState,
    budget: BudgetConfig,
    rates: CostRates | None,
) -> CostEstimate:
    """The run's cost: at ``rates`` for every request when given, else at the recorded ones."""
    currency = rates.currency if rates is not None else budget.currency
    per_request: list[dict[str, Any]] = []
    prompt_cost = completion_cost = 0.0
    for point in points:
        if rates is not None:
            p_cost = point["prompt_tokens"] * rates.prompt_per_million / 1e6
            c_cost = point["completion_tokens"] * rates.completion_per_million / 1e6
            cost = p_cost + c_cost
        else:
            cost = float(point.get("cost", 0.0))
            rate = budget.rate_for(point.get("model", ""))
            p_cost = rate.cost(point["prompt_tokens"], 0, point.get("cached_tokens", 0))
            c_cost = cost - p_cost
        prompt_cost += p_cost
        completion_cost += c_cost
        per_request.append(
            {
                "step": point["step"],
                "iteration": point.get("iteration"),
                "model": point.get("model", ""),
                "total_tokens": point["total_tokens"],
                "cost": round(cost, 9),
            }
        )
    summary = cost_estimate(state, budget)
    total = round(prompt_cost + completion_cost, 9)
    limit = summary["limit"]
    return CostEstimate(
        thread_id=thread_id,
        currency=currency,
        prompt_tokens=sum(p["prompt_tokens"] for p in points),
        completion_tokens=sum(p["completion_tokens"] for p in points),
        prompt_cost=round(prompt_cost, 9),
        completion_cost=round(completion_cost, 9),
        total_cost=total,
        per_request=per_request,
        by_model=summary["by_model"] if rates is None else {},
        limit=limit,
        remaining=None if limit is None else round(limit - total, 9),
    )


def usage_points(
    calls: Sequence[ModelCallRecord], records: Sequence[UsageRecord]
) -> list[UsagePoint]:
    """Token usage per model request: recorded calls joined with usage records.

    They are matched from the end.

    Both are written once per answered model call, in order; a fork's state carries records of
    calls its parent made, so the newest of each belong together.
    """
    paired: list[tuple[ModelCallRecord | None, UsageRecord | None]] = []
    i, j = len(calls) - 1, len(records) - 1
    while i >= 0 or j >= 0:
        paired.append((calls[i] if i >= 0 else None, records[j] if j >= 0 else None))
        i, j = i - 1, j - 1
    points: list[UsagePoint] = []
    tokens, cost = 0, 0.0
    for call, record in reversed(paired):
        # A recorded usage no server could have counted (edited by hand) is none (`timeline`).
        usage: dict[str, Any] = (
            dict(record) if record is not None else dict(counted_usage(call["usage"]))
        )
        total = int(usage.get("total_tokens", 0))
        tokens += total
        point = UsagePoint(
            time=call["created_at"] if call is not None else float(usage.get("at", 0.0)),
            step=call["step"] if call is not None else None,
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            total_tokens=total,
            cumulative_tokens=tokens,
            latency_ms=call["latency_ms"]
            if call is not None
            else float(usage.get("latency_ms", 0)),
            replayed=call["replayed"] if call is not None else False,
        )
        if record is not None:
            for key in _RECORD_KEYS:
                if key in record:
                    point[key] = record[key]  # type: ignore[literal-required]
            cost += float(record.get("cost", 0.0))
            point["cumulative_cost"] = round(cost, 9)
        points.append(point)
    return points


_RECORD_KEYS = (
    "iteration",
    "model",
    "purpose",
    "source",
    "cached_tokens",
    "estimated_prompt_tokens",
    "estimate_error",
    "calibrated_prompt_tokens",
    "calibrated_error",
    "cost",
    "streamed",
    "attempts",
    "tools_called",
    "tool_call_tokens",
    "tool_result_tokens",
)
