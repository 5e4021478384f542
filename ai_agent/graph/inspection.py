"""The inspection helpers: context, tokens, costs and state of a run, live or stored.

Every helper takes an optional ``thread_id``: None means the run this Agent worked on last
(``run``, ``resume`` or ``replay``), so on a live agent ``await agent.get_token_usage()`` needs no
argument; any stored run can be inspected by passing its id, from any process. They read the
latest checkpoint (every step is committed before the next starts) and the recorded calls, so
they may also be called while a run is in progress, from another task.

Token figures: usage totals are what the model server reported. Breakdowns of the context are
estimates (about four characters per token) until a tokenizer is configured; each result says
which it is. Costs use the rates given (default: zero, as for a local model).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypedDict, cast

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
)

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

ESTIMATE_METHOD = "estimate: 4 characters per token"


def estimate_tokens(text: str) -> int:
    """A rough token count (about four characters per token; never zero for non-empty text).

    Example:
        >>> estimate_tokens(""), estimate_tokens("hello"), estimate_tokens("x" * 400)
        (0, 2, 100)
    """
    return (len(text) + 3) // 4


class TokenUsage(TypedDict):
    """Token usage the model server reported, summed over the run."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cached_tokens: int
    requests: int


class ContextState(TypedDict):
    """The model's context as the next draft would send it."""

    thread_id: str
    system_prompt: str
    messages: list[Message]
    message_count: int
    estimated_tokens: int
    compactions: list[dict[str, Any]]
    method: str


class TokenBreakdown(TypedDict):
    """Estimated tokens of the current context by component (and of tool results by tool)."""

    thread_id: str
    system_prompt: int
    messages_by_role: dict[str, int]
    tool_schemas: int
    tool_results_by_tool: dict[str, int]
    total: int
    method: str


@dataclass(frozen=True, slots=True)
class CostRates:
    """Prices per million tokens.

    Example:
        >>> CostRates(prompt_per_million=0.15, completion_per_million=0.6).currency
        'USD'
    """

    prompt_per_million: float = 0.0
    completion_per_million: float = 0.0
    currency: str = "USD"


class CostEstimate(TypedDict):
    """What a run cost at the given rates, in total and per model request."""

    thread_id: str
    currency: str
    prompt_tokens: int
    completion_tokens: int
    prompt_cost: float
    completion_cost: float
    total_cost: float
    per_request: list[dict[str, Any]]


class UsagePoint(TypedDict):
    """One model request in the usage time series."""

    time: float
    step: int | None
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    cumulative_tokens: int
    latency_ms: float
    replayed: bool


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


def _tokens_of(message: Message) -> int:
    calls = message.get("tool_calls")
    extra = json.dumps(calls, ensure_ascii=False) if calls else ""
    return estimate_tokens((message.get("content") or "") + extra)


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

    async def get_context_state(self, thread_id: str | None = None) -> ContextState:
        """The messages the next draft would send, their estimated size, and compactions."""
        thread, state, _ = await self._state(thread_id)
        prompt = await self.get_system_prompt(thread)
        messages = compose_messages(prompt, list(state.get("messages", [])))
        compactions = cast(dict[str, Any], state).get("compactions") or []
        return ContextState(
            thread_id=thread,
            system_prompt=prompt,
            messages=messages,
            message_count=len(messages),
            estimated_tokens=sum(_tokens_of(m) for m in messages),
            compactions=list(compactions),
            method=ESTIMATE_METHOD,
        )

    async def get_active_tools(self, thread_id: str | None = None) -> list[ToolInfo]:
        """The tools the model is offered now (before any run: the Agent's initial tools)."""
        if thread_id is None and self._last_thread is None:
            names = list(self.initial_tools)
        else:
            names = list((await self._state(thread_id))[1].get("active_tools", []))
        return [info for name in names if (info := self.registry.info(name)) is not None]

    async def get_token_usage(self, thread_id: str | None = None) -> TokenUsage:
        """Token usage the model server reported for the run (zeros when it reported none)."""
        _, state, _ = await self._state(thread_id)
        usage = state.get("usage") or {}
        return TokenUsage(
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            total_tokens=int(usage.get("total_tokens", 0)),
            cached_tokens=int(usage.get("cached_tokens", 0)),
            requests=int(usage.get("requests", 0)),
        )

    async def get_token_breakdown(self, thread_id: str | None = None) -> TokenBreakdown:
        """Estimated tokens of the current context: system prompt, messages by role, tool
        schemas, and tool results by tool."""
        thread, state, _ = await self._state(thread_id)
        prompt = estimate_tokens(await self.get_system_prompt(thread))
        by_role: dict[str, int] = {}
        by_tool: dict[str, int] = {}
        for message in state.get("messages", []):
            size = _tokens_of(message)
            by_role[message["role"]] = by_role.get(message["role"], 0) + size
            if message["role"] == "tool":
                name = message.get("name", "?")
                by_tool[name] = by_tool.get(name, 0) + size
        schemas = self.registry.schemas(list(state.get("active_tools", [])))
        tools = estimate_tokens(json.dumps(schemas, ensure_ascii=False)) if schemas else 0
        return TokenBreakdown(
            thread_id=thread,
            system_prompt=prompt,
            messages_by_role=by_role,
            tool_schemas=tools,
            tool_results_by_tool=by_tool,
            total=prompt + sum(by_role.values()) + tools,
            method=ESTIMATE_METHOD,
        )

    async def get_usage_history(self, thread_id: str | None = None) -> list[UsagePoint]:
        """Token usage per model request, in time order, with a running total."""
        calls = await self.store.model_calls(self._thread(thread_id))
        points: list[UsagePoint] = []
        total = 0
        for call in calls:
            usage = call["usage"]
            total += int(usage.get("total_tokens", 0))
            points.append(
                UsagePoint(
                    time=call["created_at"],
                    step=call["step"],
                    prompt_tokens=int(usage.get("prompt_tokens", 0)),
                    completion_tokens=int(usage.get("completion_tokens", 0)),
                    total_tokens=int(usage.get("total_tokens", 0)),
                    cumulative_tokens=total,
                    latency_ms=call["latency_ms"],
                    replayed=call["replayed"],
                )
            )
        return points

    async def get_cost_estimate(
        self, thread_id: str | None = None, *, rates: CostRates | None = None
    ) -> CostEstimate:
        """The run's cost at ``rates`` (per million prompt and completion tokens)."""
        rates = rates or CostRates()
        thread = self._thread(thread_id)
        usage = await self.get_token_usage(thread)
        per_request = [
            {
                "step": p["step"],
                "total_tokens": p["total_tokens"],
                "cost": _cost(p["prompt_tokens"], p["completion_tokens"], rates),
            }
            for p in await self.get_usage_history(thread)
        ]
        prompt_cost = usage["prompt_tokens"] * rates.prompt_per_million / 1e6
        completion_cost = usage["completion_tokens"] * rates.completion_per_million / 1e6
        return CostEstimate(
            thread_id=thread,
            currency=rates.currency,
            prompt_tokens=usage["prompt_tokens"],
            completion_tokens=usage["completion_tokens"],
            prompt_cost=prompt_cost,
            completion_cost=completion_cost,
            total_cost=prompt_cost + completion_cost,
            per_request=per_request,
        )

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
        """The run's trace as a timeline (step, stage, duration, tokens, tool, status, gate
        score), up to ``checkpoint_id`` when given."""
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


def _cost(prompt: int, completion: int, rates: CostRates) -> float:
    return (prompt * rates.prompt_per_million + completion * rates.completion_per_million) / 1e6


def _usage_by_step(calls: Sequence[ModelCallRecord]) -> dict[int, int]:
    return {
        c["step"]: int(c["usage"]["total_tokens"])
        for c in calls
        if c["step"] is not None and "total_tokens" in c["usage"]
    }
