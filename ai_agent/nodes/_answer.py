"""The typed final answer of a run with an output type (docs/typed-outputs.md).

Tool turns first, then the typed answer. The drafts offer the tools with no response format: a
server held to a JSON schema cannot call a tool any more (llama.cpp's grammar then admits the
schema alone). Once the model answers without calling a tool, finalize asks for the answer:

1. the model's last text is taken as it is when it is JSON that fits the type;
2. otherwise one request: the conversation and a message asking for the answer, with the
   schema as the request's ``response_format`` (``output.mode = "native"``), or with a
   ``final_answer`` tool offered alone, whose arguments are the answer (``"tool"``);
3. an answer that does not fit goes back to the model with its problems (pydantic's, or the
   JSON Schema validator's), ``output.max_retries`` times;
4. then the run goes to the gate with an OUTPUT_INVALID issue that names the problems.

Every request goes through the run's model caller, so it is recorded (its ``response_format``
in the request hash, `ai_agent.graph.recording.request_params`), metered and replayed like a
draft's. The exchange is not kept in the conversation: the run's answer is its ``output``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ai_agent.context import ModelReply, Prepared, RunContext, counted_usage
from ai_agent.issues import IssueKind, kind_of_error
from ai_agent.nodes._common import last_assistant
from ai_agent.nodes._issues import issue
from ai_agent.nodes.draft import add_usage, compose_messages
from ai_agent.state import CompactionRecord, Issue, Message, RunState, ToolCall, UsageRecord
from ai_agent.structured import ANSWER_TOOL, OutputSpec, parse_answer

__all__ = ["Answer", "output_spec", "typed_answer"]

# How much of a failed answer the gate's issue quotes.
_QUOTED = 300


@dataclass
class Answer:
    """What asking for the typed answer came to.

    Attributes:
        data: The answer as plain JSON data (None when there is none).
        issue: Why there is none: OUTPUT_INVALID, or the model call's own issue.
        requests: Model requests made.
        usage: The run's usage totals with those requests (None: unchanged).
        usage_log: Their usage records.
        compactions: The compactions made to fit those requests in the context window.
    """

    data: Any = None
    issue: Issue | None = None
    requests: int = 0
    usage: dict[str, Any] | None = None
    usage_log: list[UsageRecord] = field(default_factory=list)
    compactions: list[CompactionRecord] = field(default_factory=list)


def output_spec(state: RunState, context: RunContext) -> OutputSpec | None:
    """The type this run's answer must fit: the Agent's, else the schema the run started with."""
    if context.policy.output is not None:
        return context.policy.output
    stored = state.get("output_schema")
    return OutputSpec.stored(stored) if stored else None


def _ask(spec: OutputSpec, mode: str) -> Message:
    if mode == "tool":
        text = (
            f"Give your final answer now: call the {ANSWER_TOOL} tool once; its arguments are "
            "the answer."
        )
    else:
        schema = json.dumps(spec.schema, ensure_ascii=False, separators=(",", ":"))
        text = (
            "Give your final answer now as one JSON object that fits this JSON Schema, and "
            f"nothing else:\n{schema}"
        )
    return Message(role="user", content=text)


def _candidate(reply: Message) -> tuple[Any, str | None, ToolCall | None]:
    """The answer a reply gives (a final_answer call's arguments, else its text's JSON)."""
    calls = [c for c in reply.get("tool_calls", []) if c["name"] == ANSWER_TOOL]
    if calls:
        return calls[0]["args"], None, calls[0]
    value, error = parse_answer(reply["content"])
    return value, error, None


def _feedback(
    reply: Message, call: ToolCall | None, spec: OutputSpec, problems: list[str], tag: int
) -> list[Message]:
    """The failed answer and what is wrong with it, as the conversation goes on.

    Its calls get ids of the engine's kind (``tag`` keeps them apart), the model's own kept as
    ``model_id``: `ai_agent.models.wire_messages` then sends each under an id unique in the
    conversation, as it does a draft's.
    """
    why = "; ".join(problems)
    text = f"That answer does not fit {spec.name}: {why}."
    sent = Message(role="assistant", content=reply["content"])
    calls = reply.get("tool_calls", [])
    if not calls:
        return [sent, Message(role="user", content=f"{text} Answer again, fixed.")]
    ours = [
        ToolCall(id=f"a{tag}.{n}", name=c["name"], args=c["args"], model_id=c["id"])
        for n, c in enumerate(calls)
    ]
    sent["tool_calls"] = ours
    answers = [
        Message(
            role="tool",
            content=f"{text} Call {ANSWER_TOOL} again with arguments that fit."
            if c is call
            else "Skipped: only the final answer is asked for now.",
            tool_call_id=mine["id"],
            name=c["name"],
        )
        for c, mine in zip(calls, ours, strict=True)
    ]
    if call is None:  # tools called, none of them the answer
        answers.append(Message(role="user", content=f"{text} Call {ANSWER_TOOL} now."))
    return [sent, *answers]


class _Asking:
    """One round of asking: the conversation so far, the usage, the problems of the last try."""

    def __init__(self, state: RunState, context: RunContext, spec: OutputSpec) -> None:
        self.state, self.context, self.spec = state, context, spec
        self.iteration = state.get("iteration", 0)
        self.conversation: list[Message] = list(state.get("messages", []))
        self.answer = Answer()
        self.usage: dict[str, Any] = dict(state.get("usage") or {})

    async def _prepare(self, tools: list[dict[str, Any]]) -> Prepared:
        context = self.context
        if context.meter is None:
            return Prepared(messages=list(self.conversation), estimate=0)
        now = RunState(**{**self.state, "messages": self.conversation, "usage": self.usage})
        prepared = await context.meter.prepare(
            now,
            system_prompt=context.policy.system_prompt,
            tools=tools,
            model=context.model,
            iteration=self.iteration,
        )
        for record in prepared.get("extra_usage", []):
            self._count(record)
        if "compaction" in prepared:
            # Recorded as a draft's is; the next try asks on the compacted conversation, not
            # the whole one again (a summarizing strategy would pay for the summary each time).
            self.answer.compactions.append(prepared["compaction"])
            self.conversation = list(prepared["messages"])
        return prepared

    def _count(self, record: Any) -> None:
        self.usage = add_usage(self.usage, record)
        self.answer.usage = self.usage
        if "iteration" in record:
            self.answer.usage_log.append(record)

    async def request(self) -> tuple[Message | None, Issue | None]:
        """One request for the answer: the reply, or the issue that stopped it."""
        context, spec = self.context, self.spec
        tool_mode = context.policy.output_mode == "tool"
        tools = [spec.answer_tool()] if tool_mode else []
        prepared = await self._prepare(tools)
        if "budget_issue" in prepared:
            return None, issue(IssueKind.BUDGET, prepared["budget_issue"])
        messages = compose_messages(context.policy.system_prompt, prepared["messages"])
        try:
            reply: ModelReply = await context.model(
                messages, tools, response_format=None if tool_mode else spec.response_format()
            )
        except Exception as exc:
            kind = kind_of_error(exc)
            if kind is None:
                raise
            hint = (
                ""
                if tool_mode
                else " (if the server refuses response_format, set output.mode to tool)"
            )
            return None, issue(kind, f"asking for the typed final answer: {exc}{hint}")
        self.answer.requests += 1
        if context.meter is not None:
            record = context.meter.record(
                reply, iteration=self.iteration, request=messages, prepared=prepared
            )
            record["purpose"] = "output"
            self._count(record)
        else:  # a context of one's own: its caller's usage is held to the client's check
            self._count(counted_usage(reply["usage"]))
        return reply["message"], None


async def typed_answer(state: RunState, context: RunContext, spec: OutputSpec) -> Answer:
    """Ask for the typed answer as the module says; at most ``1 + output_retries`` answers fail."""
    asking = _Asking(state, context, spec)
    last = last_assistant(state)
    value, error = parse_answer(last["content"]) if last else (None, "no answer yet")
    failures = 0
    problems: list[str] = []
    if error is None:  # the last text is JSON: it is the answer if it fits
        data, problems = spec.checked(value)
        if not problems:
            asking.answer.data = data
            return asking.answer
        failures = 1
        assert last is not None
        asking.conversation += _feedback(last, None, spec, problems, 0)
    else:
        asking.conversation.append(_ask(spec, context.policy.output_mode))
    said = ""
    while failures <= context.policy.output_retries:
        reply, stopped = await asking.request()
        if reply is None:  # the call failed, or the budget would be passed
            asking.answer.issue = stopped
            return asking.answer
        said = reply["content"]
        value, error, call = _candidate(reply)
        data, problems = (None, [error]) if error is not None else spec.checked(value)
        if not problems:
            asking.answer.data = data
            return asking.answer
        failures += 1
        asking.conversation += _feedback(reply, call, spec, problems, failures)
    if value is not None:
        said = json.dumps(value, ensure_ascii=False)
    quoted = said if len(said) <= _QUOTED else said[: _QUOTED - 3] + "..."
    asking.answer.issue = issue(
        IssueKind.OUTPUT_INVALID,
        f"the final answer does not fit {spec.name} after {failures} tries: "
        f"{'; '.join(problems)}. Its last answer: {quoted}",
    )
    return asking.answer
