"""The inspection helpers: context, tokens, costs and state of a run, live or stored.

Every helper takes an optional ``thread_id``: None means the run this Agent worked on last
(``run``, ``resume`` or ``replay``), so on a live agent ``await agent.get_token_usage()`` needs no
argument; any stored run can be inspected by passing its id, from any process. They read the
latest checkpoint (every step is committed before the next starts) and the recorded calls, so
they may also be called while a run is in progress, from another task.

Token figures: usage totals are what the model server reported (or, for a request it reported
nothing for, the tiktoken estimate; the records say which). Breakdowns of the context are counted
with the configured tiktoken encoding; each result names its method. Costs use the configured
rates per model (``BudgetConfig.rates``), or the rates given.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Required, TypedDict

from ai_agent.checkpoints.recorded import ModelCallRecord
from ai_agent.context import ToolInfo
from ai_agent.errors import RunError, UnknownCheckpointError, UnknownThreadError
from ai_agent.graph.core import config_for
from ai_agent.graph.history import HistoryEntry, values_of
from ai_agent.graph.replay import ReplayMixin
from ai_agent.nodes.draft import compose_messages
from ai_agent.state import (
    GateReport,
    Grant,
    Message,
    PendingCall,
    RunState,
    ToolCall,
    ToolResult,
    UsageRecord,
)
from ai_agent.usage import context_state, cost_estimate, token_breakdown, token_usage

__all__ = [
    "AgentStateView",
    "ContextState",
    "CostEstimate",
    "CostRates",
    "ExecutionTrace",
    "InspectionMixin",
    "TimelineRow",
    "TokenBreakdown",
    "TokenUsage",
    "ToolCallView",
    "UsagePoint",
    "estimate_tokens",
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


class AgentStateView(TypedDict):
    """Where a run stands: its status, what runs next, and what it waits for."""

    thread_id: str
    checkpoint_id: str | None
    status: str
    next: list[str]
    iteration: int
    waiting_for_plan: bool
    gate: GateReport | None
    pending: list[PendingCall]
    stop_reason: str | None
    final_text: str | None
    active_tools: list[str]
    grants: list[Grant]
    error: str | None


class TimelineRow(TypedDict):
    """One line of a run's timeline: a trace line with its step and token count."""

    step: int | None
    checkpoint_id: str | None
    stage: str
    iteration: int
    started_at: float | None
    duration_ms: float
    tokens: int | None
    tool: str | None
    status: str
    gate_score: float | None
    detail: str


class ToolCallView(TypedDict):
    """A tool call of the run with its result."""

    iteration: int
    call: ToolCall
    result: ToolResult
    duration_ms: float | None


class ExecutionTrace(TypedDict):
    """The full trace: the timeline and every tool call with its arguments and result."""

    thread_id: str
    timeline: list[TimelineRow]
    tool_calls: list[ToolCallView]


def _rows(
    trace: Sequence[Any], entries: Sequence[HistoryEntry], usage: dict[int, int]
) -> list[TimelineRow]:
    where: list[tuple[int | None, str | None]] = []
    for entry in entries:
        where += [(entry.step, entry.checkpoint_id)] * len(entry.trace)
    offset = len(trace) - len(where)  # a pruned run keeps its trace, not every checkpoint
    rows: list[TimelineRow] = []
    for index, line in enumerate(trace):
        step, checkpoint = where[index - offset] if index >= offset else (None, None)
        tokens = line.get("tokens")
        if tokens is None and line["stage"] == "draft" and step is not None:
            tokens = usage.get(step)
        rows.append(
            TimelineRow(
                step=step,
                checkpoint_id=checkpoint,
                stage=line["stage"],
                iteration=line["iteration"],
                started_at=line.get("started_at"),
                duration_ms=float(line.get("duration_ms", 0.0)),
                tokens=tokens,
                tool=line.get("tool"),
                status=str(line.get("status", "")),
                gate_score=line.get("gate_score"),
                detail=str(line.get("detail") or ""),
            )
        )
    return rows


class InspectionMixin(ReplayMixin):
    """The ``get_*`` helpers and ``timeline`` (see the module docstring)."""

    def _thread(self, thread_id: str | None) -> str:
        if thread_id is not None:
            return thread_id
        if self._last_thread is None:
            raise RunError("this agent has not run anything yet; pass a thread_id")
        return self._last_thread

    async def _state(self, thread_id: str | None) -> tuple[str, RunState, Any]:
        thread = self._thread(thread_id)
        async with self._graph() as graph:
            snapshot = await graph.aget_state(config_for(thread))
        if not snapshot.values:
            raise UnknownThreadError(f"no run with thread id {thread}")
        return thread, values_of(snapshot), snapshot

    async def get_system_prompt(self, thread_id: str | None = None) -> str:
        """The system prompt: as last sent in that run when it was recorded, else this Agent's.

        The prompt is never stored in state (it comes from the Agent on every draft), so for a
        stored run the recorded request is the witness of what the model was told.
        """
        if thread_id is None and self._last_thread is None:
            return self.policy.system_prompt
        calls = await self.store.model_calls(self._thread(thread_id))
        if not calls:
            return self.policy.system_prompt
        request = await self.store.model_request(calls[-1]["seq"])
        first = request["messages"][0] if request["messages"] else None
        return first["content"] if first and first["role"] == "system" else ""

    async def get_message_history(
        self,
        thread_id: str | None = None,
        *,
        roles: Sequence[str] | None = None,
        last: int | None = None,
        include_system: bool = False,
    ) -> list[Message]:
        """The conversation, oldest first.

        Args:
            thread_id: The run (default: this Agent's last).
            roles: Only messages with these roles (``user``, ``assistant``, ``tool``, ``system``).
            last: Only the last N (after filtering).
            include_system: Put the system prompt first, as the model sees it.
        """
        thread, state, _ = await self._state(thread_id)
        messages = list(state.get("messages", []))
        if include_system:
            messages = compose_messages(await self.get_system_prompt(thread), messages)
        if roles is not None:
            messages = [m for m in messages if m["role"] in roles]
        return messages[-last:] if last else messages

    def _method(self) -> str:
        counter = self._token_counter()
        return f"tiktoken {counter.encoding_name}"

    async def get_context_state(self, thread_id: str | None = None) -> ContextState:
        """The messages the next draft would send, their token counts, and the compactions."""
        thread, state, _ = await self._state(thread_id)
        prompt = await self.get_system_prompt(thread)
        compaction = self.settings.context
        trigger, target = compaction.trigger_threshold_tokens, compaction.target_tokens
        if self._compactor is not None:
            trigger, target = self._compactor.trigger, self._compactor.target
        view = context_state(
            state,
            self._token_counter(),
            system_prompt=prompt,
            tools=self.registry.schemas(list(state.get("active_tools", []))),
            trigger=trigger,
            target=target,
            window=self.settings.model_backend.context_window,
        )
        messages = compose_messages(prompt, list(state.get("messages", [])))
        return ContextState(
            thread_id=thread,
            system_prompt=prompt,
            messages=messages,
            message_count=len(messages),
            estimated_tokens=view["tokens"]["total"],
            tokens_with_margin=view["tokens_with_margin"],
            compactions=[dict(c) for c in view["compactions"]],
            compaction_trigger=trigger,
            compaction_target=target,
            context_window=view["context_window"],
            pending_tool_calls=view["pending_tool_calls"],
            method=self._method(),
        )

    async def get_active_tools(self, thread_id: str | None = None) -> list[ToolInfo]:
        """The tools the model is offered now (before any run: the Agent's initial tools)."""
        if thread_id is None and self._last_thread is None:
            names = list(self.initial_tools)
        else:
            names = list((await self._state(thread_id))[1].get("active_tools", []))
        return [info for name in names if (info := self.registry.info(name)) is not None]

    async def get_token_usage(self, thread_id: str | None = None) -> TokenUsage:
        """The run's token totals (server figures, estimates where it gave none) and cost."""
        _, state, _ = await self._state(thread_id)
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

    async def get_token_breakdown(self, thread_id: str | None = None) -> TokenBreakdown:
        """Tokens of the current context by component, and the tokens attributed to each tool.

        Components: the system prompt, messages by role and kind, tool schemas, tool results
        by tool.
        """
        thread, state, _ = await self._state(thread_id)
        counter = self._token_counter()
        schemas = self.registry.schemas(list(state.get("active_tools", [])))
        found = token_breakdown(
            state, counter, system_prompt=await self.get_system_prompt(thread), tools=schemas
        )
        context, per_tool = found["context"], found["per_tool"]
        return TokenBreakdown(
            thread_id=thread,
            system_prompt=context["system_prompt"],
            messages_by_role=context["by_role"],
            messages_by_kind=context["by_kind"],
            tool_schemas=context["tool_definitions"],
            tool_results_by_tool={
                k: v["in_context"] for k, v in per_tool.items() if v["in_context"]
            },
            per_tool=per_tool,
            total=context["total"],
            method=self._method(),
        )

    async def get_usage_history(self, thread_id: str | None = None) -> list[UsagePoint]:
        """Token usage per model request, in time order, with running totals.

        Each point joins the request's recorded call (time, step, latency, replayed) with its
        usage record (server or estimated counts, estimate error, cost, tools).
        """
        thread = self._thread(thread_id)
        calls = [c for c in await self.store.model_calls(thread) if c["error"] is None]
        records: list[UsageRecord] = []
        if thread_id is not None or self._last_thread is not None:
            with contextlib.suppress(UnknownThreadError):
                records = list((await self._state(thread))[1].get("usage_log") or [])
        return _points(calls, records)

    async def get_cost_estimate(
        self, thread_id: str | None = None, *, rates: CostRates | None = None
    ) -> CostEstimate:
        """The run's cost.

        Priced at the configured rates per model (``BudgetConfig.rates``, as recorded with
        each request), or at ``rates`` for every request when given.
        """
        thread = self._thread(thread_id)
        points = await self.get_usage_history(thread)
        budget = self.settings.budget
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
        _, state, _ = await self._state(thread)
        summary = cost_estimate(state, budget)
        total = round(prompt_cost + completion_cost, 9)
        limit = summary["limit"]
        return CostEstimate(
            thread_id=thread,
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

    def get_agent_usage(self) -> dict[str, Any]:
        """Totals of every model request this Agent made in this process, by thread and model."""
        tracker = self.usage_tracker
        return {
            "totals": dict(tracker.totals),
            "by_thread": {k: dict(v) for k, v in tracker.by_thread.items()},
            "by_model": {k: dict(v) for k, v in tracker.by_model.items()},
        }

    async def get_agent_state(self, thread_id: str | None = None) -> AgentStateView:
        """Where the run stands: status, next stage, what it waits for."""
        thread, state, snapshot = await self._state(thread_id)
        record = await self.store.get_run(thread)
        gate = snapshot.interrupts[0].value if snapshot.interrupts else None
        status = "paused" if gate else str(state.get("status", "running"))
        if record and record["status"] == "failed" and not gate:
            status = "failed"
        return AgentStateView(
            thread_id=thread,
            checkpoint_id=(snapshot.config or {}).get("configurable", {}).get("checkpoint_id"),
            status=status,
            next=list(snapshot.next),
            iteration=int(state.get("iteration", 0)),
            waiting_for_plan=gate is not None,
            gate=gate,
            pending=list(state.get("pending", [])),
            stop_reason=state.get("stop_reason"),
            final_text=state.get("final_text"),
            active_tools=list(state.get("active_tools", [])),
            grants=list(state.get("grants", [])),
            error=record["error"] if record else None,
        )

    async def timeline(
        self, thread_id: str | None = None, checkpoint_id: str | None = None
    ) -> list[TimelineRow]:
        """The run's trace as a timeline, up to ``checkpoint_id`` when given.

        Each row: step, stage, duration, tokens, tool, status, gate score.
        """
        thread = self._thread(thread_id)
        entries = await self.ahistory(thread)
        if checkpoint_id is not None:
            ids = [e.checkpoint_id for e in entries]
            if checkpoint_id not in ids:
                raise UnknownCheckpointError(
                    f"thread {thread} has no checkpoint {checkpoint_id}; "
                    f"`ai-agent history {thread}` lists them"
                )
            entries = entries[: ids.index(checkpoint_id) + 1]
        trace = [line for entry in entries for line in entry.trace]
        if checkpoint_id is None:
            trace = list((await self._state(thread))[1].get("trace", []))
        usage = _usage_by_step(await self.store.model_calls(thread))
        return _rows(trace, entries, usage)

    async def get_execution_trace(self, thread_id: str | None = None) -> ExecutionTrace:
        """The timeline and every tool call with its arguments and result."""
        thread, state, _ = await self._state(thread_id)
        durations = {
            (t["iteration"], t["call"]["id"]): t["duration_ms"]
            for t in await self.store.tool_calls(thread)
        }
        calls = [
            ToolCallView(
                iteration=r["iteration"],
                call=r["call"],
                result=r["result"],
                duration_ms=durations.get(
                    (r["iteration"], r["call"]["id"]), r["result"].get("execution_time_ms")
                ),
            )
            for r in state.get("results", [])
        ]
        return ExecutionTrace(
            thread_id=thread, timeline=await self.timeline(thread), tool_calls=calls
        )


def _points(calls: Sequence[ModelCallRecord], records: Sequence[UsageRecord]) -> list[UsagePoint]:
    """Recorded calls joined with usage records, matched from the end.

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
        usage: dict[str, Any] = dict(record) if record is not None else dict(call["usage"])
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


def _usage_by_step(calls: Sequence[ModelCallRecord]) -> dict[int, int]:
    return {
        c["step"]: int(c["usage"]["total_tokens"])
        for c in calls
        if c["step"] is not None and "total_tokens" in c["usage"]
    }
