"""draft: one model call with the conversation and the active tools' schemas.

Issues the Agent found before the run could go on (``RunContext.take_issues``: an MCP server that
failed to start or refused its key) are raised instead, once, before any model call.

Around the call, the run's Meter (when there is one) estimates the request, compacts the
conversation when it reaches the trigger, and checks the budget: a call that could pass the run's
token or cost limit is not made, and the gate gets a BUDGET issue instead. Token deltas of a
streamed reply go to the run's events as ``model_delta`` events, and every retry of the call as a
``model_retry`` event (`RunContext.model_events`).

The reply's tool calls enter state here, so here each gets the engine's own identity
(`engine_call_id`): ``c<iteration>.<position>``, unique within the run and the same when a
replay meets the same reply. The model's id is kept beside it (``model_id``), since the model
must see its own ids again, but nothing trusts it: a model may reuse an id in a later reply or
repeat one within a reply. The first draft of a run also draws the run's gate nonce (see
``ai_agent.nodes.gate``).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any, TypedDict, cast

from langgraph.runtime import Runtime

from ai_agent.context import ModelReply, Prepared, RunContext, counted_usage
from ai_agent.errors import ContextOverflowError
from ai_agent.events import Compacted, _ModelFinished, _ModelWaiting
from ai_agent.issues import IssueKind, kind_of_error
from ai_agent.nodes._common import stage
from ai_agent.nodes._issues import issue
from ai_agent.observability.logs import engine_logger
from ai_agent.observability.scopes import set_iteration
from ai_agent.state import (
    CUT,
    ENDED_BY_SERVER,
    CompactionRecord,
    Issue,
    Message,
    Replace,
    RunState,
    ToolCall,
    TraceEvent,
    UsageRecord,
)

__all__ = [
    "DraftUpdate",
    "add_usage",
    "compose_messages",
    "draft",
    "engine_call_id",
    "with_engine_ids",
]

log_stages = engine_logger("ai_agent.stages")


class DraftUpdate(TypedDict, total=False):
    """What the draft stage writes to the run state."""

    iteration: int
    messages: list[Message] | Replace
    issues: list[Issue]
    usage: dict[str, Any]
    usage_log: list[UsageRecord]
    compactions: list[CompactionRecord]
    budget_allowance: dict[str, float]
    gate_nonce: str
    trace: list[TraceEvent]


def engine_call_id(iteration: int, position: int) -> str:
    """The engine's id of the ``position``-th call of the reply drafted in cycle ``iteration``.

    Each cycle drafts at most one reply, so the id is unique within the run.

    Examples:
        >>> engine_call_id(3, 0)
        'c3.0'
    """
    return f"c{iteration}.{position}"


def with_engine_ids(message: Message, iteration: int) -> Message:
    """The reply with each tool call under the engine's id, the model's own kept as ``model_id``.

    Examples:
        >>> twice = [{"id": "call_1", "name": "t", "args": {}}] * 2
        >>> reply = {"role": "assistant", "content": "", "tool_calls": twice}
        >>> [(c["id"], c["model_id"]) for c in with_engine_ids(reply, 2)["tool_calls"]]
        [('c2.0', 'call_1'), ('c2.1', 'call_1')]
    """
    calls = message.get("tool_calls")
    if not calls:
        return message
    out = Message(**message)
    out["tool_calls"] = [
        ToolCall(id=engine_call_id(iteration, n), name=c["name"], args=c["args"], model_id=c["id"])
        for n, c in enumerate(calls)
    ]
    return out


def compose_messages(system_prompt: str, messages: list[Message]) -> list[Message]:
    """The request's messages: the system prompt (from the context, never from state) first."""
    head = [Message(role="system", content=system_prompt)] if system_prompt else []
    return head + list(messages)


def add_usage(total: dict[str, Any] | None, record: Mapping[str, Any]) -> dict[str, Any]:
    """The run's usage totals with one more request (tokens, requests, cost)."""
    out = dict(total or {})
    for key in ("prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens"):
        if key in record:
            out[key] = out.get(key, 0) + int(record[key] or 0)
    if "cost" in record:
        out["cost"] = round(out.get("cost", 0.0) + float(record["cost"] or 0.0), 9)
    out["requests"] = out.get("requests", 0) + 1
    return out


class _Draft:
    """The update a draft builds up: compaction and preparation usage first, then the reply."""

    def __init__(self, state: RunState, iteration: int, prepared: Prepared) -> None:
        self.iteration = iteration
        self.update = DraftUpdate(iteration=iteration)
        self.compacted = "compaction" in prepared
        self.messages = list(prepared["messages"])
        self.usage = dict(state.get("usage") or {})
        self.log: list[UsageRecord] = []
        for record in prepared.get("extra_usage", []):
            self.add(record)
        if self.compacted:
            self.update["compactions"] = [prepared["compaction"]]
        if "allowance" in prepared:
            self.update["budget_allowance"] = prepared["allowance"]

    def add(self, record: Mapping[str, Any]) -> None:
        self.usage = add_usage(self.usage, record)
        if "iteration" in record:
            self.log.append(cast(UsageRecord, record))

    def done(self, reply: Message | None, line: TraceEvent, issues: list[Issue]) -> DraftUpdate:
        new = [reply] if reply is not None else []
        if self.compacted:
            self.update["messages"] = Replace(replace=[*self.messages, *new])
        elif new:
            self.update["messages"] = new
        if self.log or reply is not None:
            self.update["usage"] = self.usage
        if self.log:
            self.update["usage_log"] = self.log
        if issues:
            self.update["issues"] = issues
        self.update["trace"] = [line]
        return self.update


def _early_issues(state: RunState, context: RunContext) -> DraftUpdate | None:
    """Issues found before the run could go on (an MCP server that refused its key).

    The gate hears of them before the model is asked anything; no cycle is used up.
    """
    early = context.take_issues()
    # An issue already in state at a draft is recall's (a hook that raised): it goes to the
    # gate as it is, and no model is asked first.
    held = list(state.get("issues", []))
    if not early and not held:
        return None
    at = state.get("iteration", 0)
    detail = ", ".join(i["code"] for i in [*held, *early])
    line = TraceEvent(stage="draft", iteration=at, status="blocked", detail=detail)
    return DraftUpdate(issues=early, trace=[line])


async def _prepare(
    state: RunState,
    context: RunContext,
    system_prompt: str,
    tools: list[dict[str, Any]],
    iteration: int,
) -> Prepared:
    """The history the model sees: counted, budgeted and compacted when a meter is set."""
    if context.meter is None:
        return Prepared(messages=list(state.get("messages", [])), estimate=0)
    return await context.meter.prepare(
        state, system_prompt=system_prompt, tools=tools, model=context.model, iteration=iteration
    )


@stage("draft")
async def draft(state: RunState, *, runtime: Runtime[RunContext]) -> DraftUpdate:
    """Call the model once; a gated model failure becomes an issue instead of a reply."""
    update = await _draft(state, runtime.context)
    if not state.get("gate_nonce"):
        # Drawn here, once per run, whatever the draft's outcome, never in the gate: the gate
        # must stay a pure function of state, and every gate of a cycle comes after its draft.
        update["gate_nonce"] = secrets.token_hex(16)
    return update


def _compacted(context: RunContext, iteration: int, record: CompactionRecord) -> None:
    """Report a compaction: the event (listeners, ``on_event``) and its log line."""
    before, after, strategy = record["tokens_before"], record["tokens_after"], record["strategy"]
    context.emit(Compacted(iteration, strategy, before, after, record))
    fields = {k: v for k, v in record.items() if k != "detail"}
    log_stages.info(
        "compacted the conversation (%s): %s -> %s tokens",
        strategy,
        before,
        after,
        fields={"event": "compacted", **fields},
    )


async def _draft(state: RunState, context: RunContext) -> DraftUpdate:
    early = _early_issues(state, context)
    if early is not None:
        return early
    iteration = state.get("iteration", 0) + 1
    set_iteration(iteration)  # the draft starts the next iteration: its logs and calls say so
    tools = context.tools.schemas(list(state.get("active_tools", [])))
    system_prompt = context.policy.system_prompt
    prepared = await _prepare(state, context, system_prompt, tools, iteration)
    work = _Draft(state, iteration, prepared)
    if work.compacted:
        _compacted(context, iteration, prepared["compaction"])
    if "budget_issue" in prepared:
        line = TraceEvent(
            stage="draft", iteration=iteration, status="error", detail=IssueKind.BUDGET.value
        )
        return work.done(None, line, [issue(IssueKind.BUDGET, prepared["budget_issue"])])
    messages = compose_messages(system_prompt, work.messages)
    # A typed run's answer is asked for at finalize: no draft's text is streamed as it.
    typed = context.policy.output is not None or bool(state.get("output_schema"))
    context.emit(_ModelWaiting(iteration, tools_offered=bool(tools), typed=typed))
    try:
        with context.model_events.during(iteration):  # retries, and deltas if someone watches
            try:
                reply = await context.model(messages, tools)
            except ContextOverflowError as overflow:
                work, messages, reply = await _after_overflow(
                    overflow, state, context, prepared, tools, iteration
                )
    except Exception as exc:
        # Model failures the gate can help with are issues (the table of kinds says which);
        # anything else (an unreachable server, a broken script) fails the run with a clear
        # message and leaves the last checkpoint resumable.
        kind = kind_of_error(exc)
        if kind is None:
            raise
        line = TraceEvent(stage="draft", iteration=iteration, status="error", detail=kind.value)
        return work.done(None, line, [issue(kind, str(exc))])
    message = with_engine_ids(reply["message"], iteration)
    calls = tuple(c["name"] for c in message.get("tool_calls", []))
    context.emit(_ModelFinished(message["content"], calls, iteration))
    # A ModelCaller of one's own may report anything: counts no server could have made are none
    # (as the client's are, `ai_agent.models.messages.usage_of`), never a total in the trace.
    usage = counted_usage(reply["usage"])
    if context.meter is not None:
        work.add(
            context.meter.record(reply, iteration=iteration, request=messages, prepared=prepared)
        )
    else:
        work.add(usage)
    line = _line(message, reply, iteration)
    if reply.get("request_id"):
        line["request_id"] = reply["request_id"]  # matches the call's log lines and headers
    tokens = usage.get("total_tokens") or (work.log[-1]["total_tokens"] if work.log else 0)
    if tokens:
        line["tokens"] = tokens  # type: ignore[typeddict-unknown-key]
    return work.done(message, line, [])


async def _after_overflow(
    overflow: ContextOverflowError,
    state: RunState,
    context: RunContext,
    prepared: Prepared,
    tools: list[dict[str, Any]],
    iteration: int,
) -> tuple[_Draft, list[Message], ModelReply]:
    """The server refused the request as too long: compact to fit its window and ask once more.

    What cannot be compacted, or still overflows, is the overflow made final
    (`ContextOverflowError.unresolved`): a MODEL_ERROR issue saying what was tried and what to
    change.
    """
    if context.meter is None:
        raise overflow.unresolved("no token meter, so nothing was compacted") from None
    system_prompt = context.policy.system_prompt
    smaller = await context.meter.compact_after_overflow(
        prepared,
        overflow,
        system_prompt=system_prompt,
        tools=tools,
        model=context.model,
        iteration=iteration,
    )
    work = _Draft(state, iteration, smaller)
    record = smaller["compaction"]
    _compacted(context, iteration, record)
    messages = compose_messages(system_prompt, work.messages)
    try:
        return work, messages, await context.model(messages, tools)
    except ContextOverflowError as again:
        how = (
            f"the conversation was compacted ({record['tokens_before']} -> "
            f"{record['tokens_after']} estimated tokens) and retried once, and still does not fit"
        )
        raise again.unresolved(how) from None


def _line(message: Message, reply: ModelReply, iteration: int) -> TraceEvent:
    """The draft's trace line: what the model answered.

    A text reply the server stopped at the model's token limit (finish reason ``length``) is
    not one the model ended: the run still answers with it, but says so (status `CUT`, and the
    result's stop_reason ``token_limit``). Nor is one it ended for a reason of its own, such as
    a content filter (status `ENDED_BY_SERVER`, stop_reason ``ended_by_server``).
    """
    finish = str(reply.get("finish_reason") or "")
    if not message.get("tool_calls") and finish.lower() in _TOKEN_LIMIT:
        detail = "text reply, cut at the model's token limit"
        return TraceEvent(stage="draft", iteration=iteration, status=CUT, detail=detail)
    if not message.get("tool_calls") and finish.lower() not in _MODEL_ENDED:
        # The reason is the server's text: kept short (shown escaped, as every detail is).
        detail = f"text reply, ended by the server: {finish[:_REASON_CHARS]}"
        return TraceEvent(stage="draft", iteration=iteration, status=ENDED_BY_SERVER, detail=detail)
    return TraceEvent(stage="draft", iteration=iteration, detail=_summary(message))


# Finish reasons, in any case, that mean the model ended its turn, as the servers and clients in
# use name it (OpenAI and llama.cpp: stop, tool_calls; older OpenAI: function_call; TGI:
# eos_token, stop_sequence; Anthropic-style: end_turn; Gemini: STOP). None at all ("") is a
# model without the field. Any other reason is the server's own (content_filter, SAFETY...).
_MODEL_ENDED = frozenset(
    {"", "stop", "tool_calls", "function_call", "eos", "eos_token", "stop_sequence", "end_turn"}
)
_REASON_CHARS = 40
_TOKEN_LIMIT = frozenset({"length", "max_tokens"})  # OpenAI's and Gemini's


def _summary(message: Message) -> str:
    calls = message.get("tool_calls") or []
    if calls:
        return "tool call: " + ", ".join(c["name"] for c in calls)
    return "text reply"
