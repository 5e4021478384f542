"""The run's JSON messages and LangChain's, converted at the model call's boundary.

In state a tool call is known by the engine's own id; the model gets its own ids back
(`wire_messages`), and a request is identified by a hash of what decides the reply
(`request_hash`), so a recorded run can be replayed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from ai_agent.context import usage_is_counted
from ai_agent.datafiles import valid_data, valid_text
from ai_agent.observability.logs import engine_logger
from ai_agent.state import AUDIO_FORMATS, Message, ToolCall

__all__ = [
    "from_langchain",
    "request_hash",
    "text_of",
    "to_langchain",
    "usage_of",
    "wire_messages",
]

log = engine_logger("ai_agent.models")


def _distinct(wanted: Sequence[str], taken: set[str]) -> list[str]:
    """The ids, each made unique against ``taken`` (and added to it): ``call_1``, ``call_1_2``."""
    out: list[str] = []
    for first in wanted:
        name, n = first, 1
        while name in taken:
            n += 1
            name = f"{first}_{n}"
        taken.add(name)
        out.append(name)
    return out


def _sent_calls(
    calls: Sequence[ToolCall], taken: set[str]
) -> tuple[list[ToolCall], dict[str, str]]:
    """A reply's calls under the ids the model gets, and each call's engine id -> that id."""
    if not any("model_id" in c for c in calls):  # a run from before engine ids: as they are
        taken.update(c["id"] for c in calls)
        return list(calls), {}
    ids = _distinct([c.get("model_id") or c["id"] for c in calls], taken)
    sent = [
        ToolCall(id=wire, name=c["name"], args=c["args"])
        for c, wire in zip(calls, ids, strict=True)
    ]
    return sent, {c["id"]: wire for c, wire in zip(calls, ids, strict=True)}


def wire_messages(messages: Iterable[Message]) -> list[Message]:
    """The conversation as the model sees it: its own call ids, each answered exactly once.

    In state a tool call is known by the engine's id and the model's id is kept beside it
    (``model_id``; see `ai_agent.state.ToolCall`). The model gets its own ids back, so it reads
    the conversation it wrote, and each tool message is sent under the id of the call it
    answers. An id the model gave twice (in one reply, or again in a later one) goes out with a
    suffix the second time: servers pair calls and tool messages by id, OpenAI refuses a
    repeated id and others (Mistral) count calls and answers over the whole conversation, so a
    repeat would answer the wrong call or break the request. Calls of runs from before engine
    ids (no ``model_id``) go out as they are.

    Examples:
        >>> calls = [{"id": "c1.0", "model_id": "call_1", "name": "t", "args": {}},
        ...          {"id": "c1.1", "model_id": "call_1", "name": "t", "args": {}}]
        >>> sent = wire_messages([{"role": "assistant", "content": "", "tool_calls": calls},
        ...                       {"role": "tool", "content": "b", "tool_call_id": "c1.1"}])
        >>> [c["id"] for c in sent[0]["tool_calls"]], sent[1]["tool_call_id"]
        (['call_1', 'call_1_2'], 'call_1_2')
    """
    out: list[Message] = []
    taken: set[str] = set()
    wire_of: dict[str, str] = {}  # engine id -> the id sent, for the calls of the latest reply
    for message in messages:
        sent = Message(**message)
        if message["role"] == "assistant":
            calls, wire_of = _sent_calls(message.get("tool_calls") or [], taken)
            if calls:
                sent["tool_calls"] = calls
        elif message["role"] == "tool" and message.get("tool_call_id") in wire_of:
            sent["tool_call_id"] = wire_of[message["tool_call_id"]]
        out.append(sent)
    return out


def to_langchain(messages: Iterable[Message]) -> list[BaseMessage]:
    """The run's JSON messages as LangChain messages, as the model sees them (`wire_messages`).

    The images and audio of tool results (a tool message's ``media``) follow the tool messages
    of their turn as one user message of content parts: the OpenAI chat API takes only text in
    a tool message ("Image URLs are only allowed for messages with role 'user'").

    Examples:
        >>> part = {"kind": "image", "mime_type": "image/png", "data": "iVBO", "size": 3,
        ...         "sha256": "ab"}
        >>> sent = to_langchain([{"role": "tool", "content": "[image]", "tool_call_id": "c1",
        ...                       "name": "shot", "media": [part]}])
        >>> [m.type for m in sent], sent[1].content[1]["image_url"]["url"]
        (['tool', 'human'], 'data:image/png;base64,iVBO')
    """
    out: list[BaseMessage] = []
    media: list[str | dict[Any, Any]] = []
    for m in wire_messages(messages):
        role, content = m["role"], m["content"]
        if role != "tool" and media:
            out.append(HumanMessage(media))
            media = []
        if role == "system":
            out.append(SystemMessage(content))
        elif role == "user":
            out.append(HumanMessage(content))
        elif role == "assistant":
            calls = [
                {"id": c["id"], "name": c["name"], "args": c["args"], "type": "tool_call"}
                for c in m.get("tool_calls", [])
            ]
            out.append(AIMessage(content, tool_calls=calls))
        else:
            out.append(ToolMessage(content, tool_call_id=m.get("tool_call_id", "")))
            media += _media_parts(m)
    if media:
        out.append(HumanMessage(media))
    return out


def _media_parts(message: Message) -> list[str | dict[Any, Any]]:
    """A tool message's media as OpenAI chat content parts, each after a line naming it."""
    parts: list[str | dict[Any, Any]] = []
    for part in message.get("media") or []:
        mime = part["mime_type"].lower()
        digest = part["sha256"][:12]
        line = (
            f"{part['kind']} {mime} ({part['size']} bytes, sha256 {digest}) returned by the "
            f"tool {message.get('name', '')} in reply to call {message.get('tool_call_id', '')}:"
        )
        parts.append({"type": "text", "text": line})
        if part["kind"] == "audio":
            audio = {"data": part["data"], "format": AUDIO_FORMATS.get(mime, "wav")}
            parts.append({"type": "input_audio", "input_audio": audio})
        else:
            parts.append(
                {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{part['data']}"}}
            )
    return parts


def text_of(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    parts = []
    for part in content or []:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict) and part.get("type") == "text":
            parts.append(str(part.get("text", "")))
    return "".join(parts)


def from_langchain(message: BaseMessage, *, turn: int) -> Message:
    """An assistant reply as a JSON message. Calls without an id get a stable one.

    Every text in it is one that can be written (`valid_text`): this is where a reply enters
    the run, to be recorded, stored and printed.
    """
    out = Message(role="assistant", content=valid_text(text_of(message.content)))
    calls: list[ToolCall] = []
    for i, call in enumerate(getattr(message, "tool_calls", None) or []):
        calls.append(
            ToolCall(
                id=valid_text(call.get("id") or f"call_{turn}_{i}"),
                name=valid_text(call["name"]),
                args=valid_data(dict(call.get("args") or {})),
            )
        )
    if calls:
        out["tool_calls"] = calls
    return out


def usage_of(message: BaseMessage) -> dict[str, Any]:
    """Token usage reported by the server, in OpenAI's names; empty when it reported none.

    Usage no server could have counted (`ai_agent.context.usage_is_counted`: a negative count,
    one past ``MAX_REPORTED_TOKENS``) is treated as none, so the run's own estimate stands.

    Examples:
        >>> from langchain_core.messages import AIMessage
        >>> counts = {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7}
        >>> usage_of(AIMessage("4", usage_metadata=counts))["total_tokens"]
        7
        >>> usage_of(AIMessage("4", usage_metadata={**counts, "input_tokens": -5}))
        {}
    """
    meta = getattr(message, "usage_metadata", None)
    if not meta:
        return {}
    details = meta.get("input_token_details") or {}
    usage = {
        "prompt_tokens": meta.get("input_tokens", 0),
        "completion_tokens": meta.get("output_tokens", 0),
        "total_tokens": meta.get("total_tokens", 0),
        "cached_tokens": details.get("cache_read", 0) or 0,
    }
    if usage_is_counted(usage):
        return usage
    log.warning(
        "the model server reported token usage no server could have counted (%s); the run's "
        "own estimate is used instead",
        ", ".join(f"{name}={value!r:.40}" for name, value in usage.items()),
        fields={"event": "model_usage_ignored"},
    )
    return {}


def request_hash(
    messages: Sequence[Message],
    tools: Sequence[dict[str, Any]],
    params: Mapping[str, Any] | None = None,
) -> str:
    """A stable hash of a model request: what decides the reply, nothing else.

    The messages are hashed as the model sees them (`wire_messages`): the engine's own call ids
    never reach the model, so they do not change the hash (and a run recorded before they
    existed still matches). ``params`` are the generation parameters (model, temperature,
    seed...), never credentials.

    Examples:
        >>> a = request_hash([{"role": "user", "content": "hi"}], [], {"temperature": 0})
        >>> a == request_hash([{"content": "hi", "role": "user"}], [], {"temperature": 0})
        True
        >>> a == request_hash([{"role": "user", "content": "hi"}], [], {"temperature": 1})
        False
    """
    request: dict[str, Any] = {"messages": wire_messages(messages), "tools": tools}
    if params:
        request["params"] = dict(params)
    blob = json.dumps(request, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()
