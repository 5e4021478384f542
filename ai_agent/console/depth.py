"""The run view's depth: the state at any checkpoint, and the context window of any model call.

`state_at` reads one checkpoint of a run (``ai-agent show --checkpoint`` reads the same) and
returns its values as text, one entry per state key. `context_of` reads the model call a draft
step made, from the run store's recording: the messages exactly as they were sent, each with its
token count (the Agent's token counter, the one the run's budget used), the tools offered and the
generation parameters, and the model's reply. Neither needs a model.

Everything shown is masked again here with the Agent's secret values and its redaction patterns
(authorization headers, keys in URLs and assignments), though the run stored them masked
already (``ai_agent.graph.secrets``): a page is one more place a secret must never reach. A
value larger than `MAX_VALUE_CHARS` is cut, and the page says how much was left out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ai_agent.errors import UnknownCheckpointError, UnknownThreadError
from ai_agent.graph.database import config_for
from ai_agent.graph.history import values_of
from ai_agent.graph.plain_reads import checked
from ai_agent.observability.redaction import Redactor

if TYPE_CHECKING:
    from ai_agent.checkpoints import ModelCallRecord
    from ai_agent.graph import Agent

__all__ = ["MAX_VALUE_CHARS", "CallContext", "CheckpointState", "context_of", "state_at"]

MAX_VALUE_CHARS = 40_000
"""A state value or message longer than this, as text, is cut on the page."""


@dataclass(frozen=True)
class Shown:
    """A value as the page shows it: its text (masked, maybe cut) and how much was cut."""

    text: str
    cut: int = 0


@dataclass(frozen=True)
class CheckpointState:
    """One checkpoint of a run and the state it holds."""

    thread_id: str
    checkpoint_id: str
    parent_id: str | None
    step: int
    source: str
    time: str
    next: tuple[str, ...]
    paused: bool
    values: dict[str, Shown]


@dataclass(frozen=True)
class SentMessage:
    """One message of a request, with its tokens."""

    role: str
    tokens: int
    content: Shown
    tool_calls: Shown | None = None


@dataclass(frozen=True)
class CallContext:
    """What one model call was sent, and what it answered."""

    thread_id: str
    step: int
    record: ModelCallRecord
    messages: list[SentMessage]
    tools: list[tuple[str, int]]  # each offered tool's name and its schema's tokens
    params: Shown
    reply: Shown | None
    total_tokens: int
    calls_at_step: int = 1  # a retried call: the last attempt is shown
    problems: list[str] = field(default_factory=list)


def _masker(agent: Agent) -> Redactor:
    return Redactor(secrets=agent.secrets, patterns=(r"password=\S+", r"secret=\S+"))


def _shown(value: Any, mask: Redactor) -> Shown:
    text = value if isinstance(value, str) else _json(value)
    text = mask(text)
    if len(text) <= MAX_VALUE_CHARS:
        return Shown(text)
    return Shown(text[:MAX_VALUE_CHARS], len(text) - MAX_VALUE_CHARS)


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, default=str, sort_keys=True)


async def state_at(agent: Agent, thread_id: str, checkpoint_id: str) -> CheckpointState:
    """The state a run's checkpoint holds, one shown value per key.

    Raises:
        UnknownThreadError / UnknownCheckpointError: no such run, or it has no such checkpoint.
    """
    async with agent.archive.database.graph(reading=True) as graph:
        snapshot = checked(
            await graph.aget_state(config_for(thread_id, checkpoint_id=checkpoint_id))
        )
    if not snapshot.values and not snapshot.next:
        latest = await agent.archive.store.get_run(thread_id)
        if latest is None:
            raise UnknownThreadError(f"no run with thread id {thread_id}")
        raise UnknownCheckpointError(
            f"thread {thread_id} has no checkpoint {checkpoint_id}; its run page links its "
            "checkpoints"
        )
    mask = _masker(agent)
    values = values_of(snapshot)
    metadata = snapshot.metadata or {}
    parent = (snapshot.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    return CheckpointState(
        thread_id=thread_id,
        checkpoint_id=checkpoint_id,
        parent_id=parent,
        step=int(metadata.get("step", -1)),
        source=str(metadata.get("source") or ""),
        time=snapshot.created_at or "",
        next=tuple(snapshot.next),
        paused=bool(snapshot.interrupts),
        values={key: _shown(values[key], mask) for key in sorted(values)},  # type: ignore[literal-required]
    )


async def context_of(agent: Agent, thread_id: str, step: int) -> CallContext:
    """The model call a run made at a step (its last attempt), from the recording.

    Raises:
        UnknownThreadError: the run has no model call recorded at that step.
    """
    calls = [c for c in await agent.archive.store.model_calls(thread_id) if c["step"] == step]
    if not calls:
        raise UnknownThreadError(
            f"run {thread_id} has no model call recorded at step {step}; the draft rows of its "
            "timeline link the steps that have one"
        )
    record = calls[-1]
    request = await agent.archive.store.model_request(record["seq"])
    from ai_agent.tokens import TokenCounter  # tiktoken: only when a context is shown

    settings = agent.settings
    counter = TokenCounter(settings.token_tracking, model=settings.model_backend.model)
    mask = _masker(agent)
    messages = [
        SentMessage(
            role=str(m.get("role", "")),
            tokens=counter.count_message(m),
            content=_shown(m.get("content") or "", mask),
            tool_calls=_shown(m["tool_calls"], mask) if m.get("tool_calls") else None,
        )
        for m in request["messages"]
    ]
    tools = [(_tool_name(s), counter.count_tools([s])) for s in request["tools"]]
    return CallContext(
        thread_id=thread_id,
        step=step,
        record=record,
        messages=messages,
        tools=tools,
        params=_shown(request["params"], mask),
        reply=_shown(record["message"], mask) if record["message"] is not None else None,
        total_tokens=sum(m.tokens for m in messages) + sum(t for _, t in tools),
        calls_at_step=len(calls),
    )


def _tool_name(schema: Any) -> str:
    if isinstance(schema, dict):
        function = schema.get("function")
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            return str(function["name"])
        if isinstance(schema.get("name"), str):
            return str(schema["name"])
    return "?"
