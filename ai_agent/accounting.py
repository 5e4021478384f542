"""Token accounting of a run: estimates, compaction, budgets and usage records.

`RunMeter` is the `Meter` the draft stage uses around each model
call. Before the call it estimates the request (incrementally), compacts the conversation when it
reaches the trigger, and checks the run's budget: a call that could pass ``max_tokens`` or
``max_cost`` is not made, and the gate gets a BUDGET issue instead. After the call it turns the
reply into a `UsageRecord`: the server's usage when reported (with the
estimate's error), else the estimate, plus cost and per-tool attribution.

A server's chat template adds tokens the messages do not show (a default system prompt, the
tool-calling instructions, how tool turns are rendered): the estimate counts them from the first
request (`ai_agent.tokens.TokenCounter.template_overhead`, sized by ``TokenizerConfig.template_*``).
Estimates are then *calibrated*: once the server has reported usage, the gap between its count
and our estimate for the previous request is added to the next estimate. The calibrated figure
drives compaction and budget checks; both figures and their errors are recorded.

`UsageTracker` sums the records of every run an Agent drives in this process (the
per-agent totals; the per-session totals live in each run's state).

Examples:
    >>> from ai_agent.tokens import TokenCounter
    >>> meter = RunMeter(counter=TokenCounter(), model_name="m")
    >>> meter.estimate([{"role": "user", "content": "hi"}], [])  # 8, and a default system prompt
    30
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ai_agent.compaction import Compactor, ModelCallerHelper
from ai_agent.context import (
    MAX_REPORTED_TOKENS,
    ModelCaller,
    ModelReply,
    Prepared,
    usage_is_counted,
)
from ai_agent.issues import IssueKind
from ai_agent.state import GateReport, Message, PlanRecord, RunState, UsageRecord
from ai_agent.tokens import MESSAGE_OVERHEAD, ConversationTokens, TokenCounter

if TYPE_CHECKING:
    from ai_agent.config import BudgetConfig
    from ai_agent.errors import ContextOverflowError

__all__ = ["RunMeter", "UsageTracker", "add_usage", "budget_granted"]

# The engine's logger for this module (`ai_agent.observability` sits above accounting).
log = logging.getLogger("ai_agent.accounting")

_TOTAL_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens")
# After an overflow, the share of the server's window the retried request may fill: the rest is
# for the reply and for what our estimate misses.
_OVERFLOW_FILL = 0.8
# Without the server's figures, the retried request is at most this share of the refused one.
_OVERFLOW_SHRINK = 0.7


def add_usage(total: Mapping[str, Any] | None, record: UsageRecord) -> dict[str, Any]:
    """A running total with one more record (tokens, requests, cost).

    Examples:
        >>> add_usage({}, {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7,
        ...                "iteration": 1, "at": 0.0, "cost": 0.5})["requests"]
        1
    """
    out = dict(total or {})
    for key in _TOTAL_KEYS:
        value = record.get(key, 0)
        out[key] = out.get(key, 0) + (int(value) if isinstance(value, int | float) else 0)
    out["requests"] = out.get("requests", 0) + 1
    out["cost"] = round(out.get("cost", 0.0) + float(record.get("cost", 0.0)), 9)
    return out


def _calibration(state: RunState) -> int:
    """Tokens the server counted beyond our estimate on the latest draft it reported usage for."""
    for record in reversed(state.get("usage_log") or []):
        if record.get("purpose", "draft") == "draft" and record.get("source") == "server":
            estimated = record.get("estimated_prompt_tokens")
            if estimated:
                return int(record["prompt_tokens"]) - int(estimated)
    return 0


def _reported(reply: ModelReply) -> Mapping[str, Any]:
    """The usage ``reply`` reports, when a server could have counted it; else none.

    A ``ModelCaller`` of the user's own hands back what it likes: its usage is held to the same
    check as the OpenAI-compatible client's (`ai_agent.context.usage_is_counted`), so a negative
    or absurd count never reaches a cost, a budget or a checkpoint, and the estimate stands.
    """
    usage = reply.get("usage")
    if not usage:
        return {}
    if usage_is_counted(usage):
        return usage
    shown = (
        ", ".join(f"{name}={value!r:.40}" for name, value in usage.items())
        if isinstance(usage, Mapping)
        else f"{type(usage).__name__} {usage!r:.40}"
    )
    log.warning(
        "the model caller reported token usage no server could have counted (%s); the run's "
        "own estimate is used instead. A ModelCaller's usage must hold counts from 0 to %d.",
        shown,
        MAX_REPORTED_TOKENS,
    )
    return {}


def budget_granted(state: RunState) -> bool:
    """Whether a person has just answered a BUDGET stop with a plan that continues the run."""
    gate: GateReport | None = state.get("gate")
    plans: list[PlanRecord] = state.get("plans") or []
    if not gate or not gate["intervene"] or not plans:
        return False
    if not any(i["code"] == IssueKind.BUDGET for i in gate["issues"]):
        return False
    last = plans[-1]
    return last["iteration"] == gate["iteration"] and bool(last["plan"].get("allow_continue"))


def _overflow_target(estimate: int, overflow: ContextOverflowError) -> int:
    """Our estimate's goal for a request the server refused at ``estimate`` as too long.

    Examples:
        >>> from ai_agent.errors import ContextOverflowError
        >>> _overflow_target(3000, ContextOverflowError("x", prompt_tokens=6000, window=2000))
        800
        >>> _overflow_target(3000, ContextOverflowError("x"))
        2100
    """
    if overflow.prompt_tokens and overflow.window:
        return max(1, int(estimate * overflow.window / overflow.prompt_tokens * _OVERFLOW_FILL))
    return max(1, int(estimate * _OVERFLOW_SHRINK))


@dataclass
class UsageTracker:
    """Totals of every model request an Agent made in this process, across its runs.

    Examples:
        >>> tracker = UsageTracker()
        >>> tracker.add("t1", {"iteration": 1, "at": 0.0, "prompt_tokens": 3,
        ...                    "completion_tokens": 1, "total_tokens": 4})
        >>> tracker.totals["total_tokens"], tracker.by_thread["t1"]["requests"]
        (4, 1)
    """

    totals: dict[str, Any] = field(default_factory=dict)
    by_thread: dict[str, dict[str, Any]] = field(default_factory=dict)
    by_model: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, thread_id: str, record: UsageRecord) -> None:
        """Count one record."""
        self.totals = add_usage(self.totals, record)
        self.by_thread[thread_id] = add_usage(self.by_thread.get(thread_id), record)
        model = record.get("model", "")
        self.by_model[model] = add_usage(self.by_model.get(model), record)

    def report(self) -> dict[str, Any]:
        """Totals of every model request this Agent made in this process, by thread and model."""
        return {
            "totals": dict(self.totals),
            "by_thread": {k: dict(v) for k, v in self.by_thread.items()},
            "by_model": {k: dict(v) for k, v in self.by_model.items()},
        }


class RunMeter:
    """Accounting around the model calls of one run.

    Args:
        counter: Counts tokens.
        model_name: The model, for its cost rate.
        compactor: Compacts the conversation when it reaches the trigger (None: never).
        budget: Cost rates and limits (None: free and unlimited).
        summarizer: The model that writes summaries and scores (None: the run's model).
        expected_completion: Tokens a reply may take (``max_tokens``), for budget checks; when
            None, the run's average completion so far is used.
        tracker: Per-agent totals to add each record to.
        thread_id: The run, for the tracker.
    """

    def __init__(
        self,
        *,
        counter: TokenCounter,
        model_name: str = "",
        compactor: Compactor | None = None,
        budget: BudgetConfig | None = None,
        summarizer: ModelCaller | None = None,
        expected_completion: int | None = None,
        tracker: UsageTracker | None = None,
        thread_id: str = "",
    ) -> None:
        self.counter = counter
        self.model_name = model_name
        self.compactor = compactor
        self.budget = budget
        self.summarizer = summarizer
        self.expected_completion = expected_completion
        self.tracker = tracker
        self.thread_id = thread_id
        self.conversation = ConversationTokens(counter)
        self._tools_key = ""
        self._tools_tokens = 0

    @property
    def limited(self) -> bool:
        """Whether a token or cost budget limits the run (and so its children's whole tree)."""
        budget = self.budget
        return budget is not None and (budget.max_tokens, budget.max_cost) != (None, None)

    # Estimates -------------------------------------------------------------------------------
    def _tools(self, tools: Sequence[Mapping[str, Any]]) -> int:
        key = json.dumps(list(tools), sort_keys=True)
        if key != self._tools_key:
            self._tools_key, self._tools_tokens = key, self.counter.count_tools(tools)
        return self._tools_tokens

    def _fixed(
        self, head: Sequence[Message], tools: Sequence[Mapping[str, Any]], offset: int = 0
    ) -> int:
        """Tokens of a request compaction cannot remove, in the units of its trigger.

        The system prompt, the tool definitions, what the chat template adds once (a default
        system prompt, its tool instructions; each tool turn's share is counted with the turn)
        and the server's calibration ``offset``: left out, a request compacted to a 1,500-token
        target went out at 1,649 by the run's own estimate.
        """
        own = sum(self.counter.count_message(m) for m in head) + self._tools(tools)
        return max(0, own + self.counter.template_overhead(head, tools) + offset)

    def estimate(self, request: Sequence[Message], tools: Sequence[Mapping[str, Any]]) -> int:
        """Estimated prompt tokens of a request (system prompt and chat template included).

        Incremental over the conversation; the template's overhead
        (`ai_agent.tokens.TokenCounter.template_overhead`) is there from the first request.
        """
        template = self.counter.template_overhead(request, tools)
        return self.conversation.update(request) + self._tools(tools) + template

    # Before the call -------------------------------------------------------------------------
    async def prepare(
        self,
        state: RunState,
        *,
        system_prompt: str,
        tools: list[dict[str, Any]],
        model: ModelCaller,
        iteration: int,
    ) -> Prepared:
        """Estimate, compact if needed, and check the budget before a model call."""
        messages: list[Message] = list(state.get("messages", []))
        head = [Message(role="system", content=system_prompt)] if system_prompt else []
        offset = _calibration(state)
        raw = self.estimate(head + messages, tools)
        prepared = Prepared(messages=messages, estimate=raw, calibrated=max(0, raw + offset))
        extra: list[UsageRecord] = []
        if self.compactor is not None and self.compactor.should_compact(prepared["calibrated"]):
            fixed = self._fixed(head, tools, offset)
            helper = ModelCallerHelper(
                self.summarizer or model,
                lambda reply: extra.append(self._record(reply, iteration, [], "compaction")),
            )
            done = await self.compactor.compact(
                messages, fixed_tokens=fixed, iteration=iteration, model=helper
            )
            prepared["messages"] = done.messages
            prepared["compaction"] = done.record
            prepared["estimate"] = self.estimate(head + done.messages, tools)
            prepared["calibrated"] = max(0, prepared["estimate"] + offset)
        prepared["extra_usage"] = extra
        self._check_budget(state, prepared)
        return prepared

    async def compact_after_overflow(
        self,
        prepared: Prepared,
        overflow: ContextOverflowError,
        *,
        system_prompt: str,
        tools: list[dict[str, Any]],
        model: ModelCaller,
        iteration: int,
    ) -> Prepared:
        """A smaller request after the server refused ``prepared`` as too long for its window.

        The target is the refused request scaled to the window the server reported (in our own
        estimate's units, so the tokenizers need not agree), at most `_OVERFLOW_FILL` of it;
        without the server's figures, `_OVERFLOW_SHRINK` of the refused request.

        Raises:
            ContextOverflowError: ``overflow`` made final (`ContextOverflowError.unresolved`)
                when there is no compactor or the conversation cannot be compacted any further.
        """
        if self.compactor is None:
            raise overflow.unresolved("compaction is off, so nothing was retried") from None
        head = [Message(role="system", content=system_prompt)] if system_prompt else []
        fixed = self._fixed(head, tools)  # the target is in the estimate's units: no offset
        extra = list(prepared.get("extra_usage", []))
        helper = ModelCallerHelper(
            self.summarizer or model,
            lambda reply: extra.append(self._record(reply, iteration, [], "compaction")),
        )
        done = await self.compactor.compact(
            prepared["messages"],
            fixed_tokens=fixed,
            iteration=iteration,
            model=helper,
            target=_overflow_target(prepared["estimate"], overflow),
        )
        record = done.record
        if record["tokens_after"] >= record["tokens_before"]:
            raise overflow.unresolved("the conversation could not be compacted any further")
        record["detail"] = "; ".join(
            d for d in (f"after a context overflow ({overflow})", record["detail"]) if d
        )
        offset = prepared.get("calibrated", prepared["estimate"]) - prepared["estimate"]
        smaller = Prepared(messages=done.messages, compaction=record, extra_usage=extra)
        smaller["estimate"] = self.estimate(head + done.messages, tools)
        smaller["calibrated"] = max(0, smaller["estimate"] + offset)
        if "allowance" in prepared:
            smaller["allowance"] = prepared["allowance"]
        return smaller

    def _check_budget(self, state: RunState, prepared: Prepared) -> None:
        budget = self.budget
        if budget is None or (budget.max_tokens is None and budget.max_cost is None):
            return
        total = dict(state.get("usage") or {})
        for record in prepared.get("extra_usage", []):
            total = add_usage(total, record)
        used_tokens, used_cost = int(total.get("total_tokens", 0)), float(total.get("cost", 0.0))
        allowance = dict(state.get("budget_allowance") or {})
        if budget_granted(state) and allowance.get("granted_at") != state["gate"]["iteration"]:  # type: ignore[index]
            allowance = {
                "granted_at": float(state["gate"]["iteration"]),  # type: ignore[index]
                "tokens": used_tokens + (budget.max_tokens or 0),
                "cost": used_cost + (budget.max_cost or 0.0),
            }
            prepared["allowance"] = allowance
        completion = self._expected_completion(total)
        prompt = prepared["calibrated"]
        projected_tokens = used_tokens + prompt + completion
        rate = budget.rate_for(self.model_name)
        projected_cost = used_cost + rate.cost(prompt, completion)
        if budget.max_tokens is not None:
            limit = max(budget.max_tokens, int(allowance.get("tokens", 0)))
            if projected_tokens > limit:
                prepared["budget_issue"] = (
                    f"token budget: the next model call (~{prompt} prompt + "
                    f"~{completion} completion tokens) would bring this run to ~"
                    f"{projected_tokens} tokens, over its limit of {limit} ({used_tokens} used). "
                    f"Resume with a plan to allow {budget.max_tokens} more tokens, or stop."
                )
                return
        if budget.max_cost is not None:
            limit_cost = max(budget.max_cost, float(allowance.get("cost", 0.0)))
            if projected_cost > limit_cost:
                prepared["budget_issue"] = (
                    f"cost budget: the next model call would bring this run to ~"
                    f"{projected_cost:.6f} {budget.currency}, over its limit of {limit_cost:g} "
                    f"({used_cost:.6f} spent). Resume with a plan to allow {budget.max_cost:g} "
                    f"{budget.currency} more, or stop."
                )

    def _expected_completion(self, total: Mapping[str, Any]) -> int:
        if self.expected_completion is not None:
            return self.expected_completion
        requests = int(total.get("requests", 0))
        return int(total.get("completion_tokens", 0)) // requests if requests else 0

    # After the call --------------------------------------------------------------------------
    def record(
        self, reply: ModelReply, *, iteration: int, request: Sequence[Message], prepared: Prepared
    ) -> UsageRecord:
        """The usage record of a draft's reply."""
        calibrated = prepared.get("calibrated", prepared["estimate"])
        record = self._record(
            reply,
            iteration,
            request,
            "draft",
            estimate=prepared["estimate"],
            calibrated=calibrated,
        )
        record["calibrated_prompt_tokens"] = calibrated
        prompt = record["prompt_tokens"]
        if record.get("source") == "server" and prompt:
            record["calibrated_error"] = round((calibrated - prompt) / prompt, 4)
        return record

    def record_call(
        self, reply: ModelReply, iteration: int, request: Sequence[Message], purpose: str
    ) -> UsageRecord:
        """The usage record of a model call made beside the drafts (a tool output's summary)."""
        return self._record(reply, iteration, request, purpose)

    def _record(
        self,
        reply: ModelReply,
        iteration: int,
        request: Sequence[Message],
        purpose: str,
        *,
        estimate: int | None = None,
        calibrated: int | None = None,
    ) -> UsageRecord:
        usage = _reported(reply)
        message = reply["message"]
        estimated_completion = max(0, self.counter.count_message(message) - MESSAGE_OVERHEAD - 1)
        if estimate is None:
            estimate = self.counter.count_request(request) if request else 0
        if usage:
            prompt = int(usage.get("prompt_tokens", 0))
            completion = int(usage.get("completion_tokens", 0))
            cached = int(usage.get("cached_tokens", 0) or 0)
            error = round((estimate - prompt) / prompt, 4) if prompt and estimate else None
            source = "server"
        else:
            # No usage from the server: our best figure is the calibrated estimate.
            prompt, completion, cached, error, source = (
                estimate if calibrated is None else calibrated,
                estimated_completion,
                0,
                None,
                "estimate",
            )
        model = reply.get("model") or self.model_name
        rate = self.budget.rate_for(model) if self.budget is not None else None
        calls = message.get("tool_calls") or []
        record = UsageRecord(
            iteration=iteration,
            at=time.time(),
            model=model,
            prompt_tokens=prompt,
            completion_tokens=completion,
            total_tokens=prompt + completion,
            cached_tokens=cached,
            source=source,  # type: ignore[typeddict-item]
            estimated_prompt_tokens=estimate,
            estimate_error=error,
            cost=rate.cost(prompt, completion, cached) if rate is not None else 0.0,
            latency_ms=float(reply.get("latency_ms", 0.0)),
            attempts=int(reply.get("attempts", 1)),
            streamed=bool(reply.get("streamed", False)),
            tools_called=[c["name"] for c in calls],
            tool_call_tokens=self._call_tokens(calls),
            tool_result_tokens=self._result_tokens(request),
            purpose=purpose,  # type: ignore[typeddict-item]
        )
        if self.tracker is not None:
            self.tracker.add(self.thread_id, record)
        return record

    def _call_tokens(self, calls: Sequence[Mapping[str, Any]]) -> dict[str, int]:
        out: dict[str, int] = {}
        for call in calls:
            tokens = self.counter.count_text(call["name"]) + self.counter.count_text(
                json.dumps(call.get("args") or {}, ensure_ascii=False)
            )
            out[call["name"]] = out.get(call["name"], 0) + tokens
        return out

    def _result_tokens(self, request: Sequence[Message]) -> dict[str, int]:
        """Tokens of the tool results this request feeds the model for the first time."""
        out: dict[str, int] = {}
        for message in reversed(request):
            if message["role"] == "assistant":
                break
            if message["role"] == "tool":
                name = message.get("name") or "tool"
                out[name] = out.get(name, 0) + self.counter.count_message(message)
        return out
