"""Fake models for tests and offline runs: ScriptedModel and FunctionModel.

Both are LangChain chat models that support ``bind_tools``, so the engine drives them exactly as it
drives ChatOpenAI. ScriptedModel is stateless: the reply is chosen by the number of assistant turns
already in the conversation, so a run paused in one process and resumed in another continues the
same script.

A turn is ``{"text": "..."}`` or ``{"tool_calls": [{"name": "...", "args": {...}}]}`` (both keys
may be given; ``usage`` optionally sets the reported token usage).

Examples:
    >>> model = ScriptedModel([
    ...     {"tool_calls": [{"name": "calculator", "args": {"expression": "2+2"}}]},
    ...     {"text": "2 + 2 = 4"},
    ... ])
    >>> len(model.turns)
    2
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ai_agent.errors import ConfigError, ScriptExhaustedError
from ai_agent.models.messages import from_langchain
from ai_agent.state import Message

__all__ = ["FunctionModel", "ScriptedModel", "Turn"]


class _Call(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class Turn(BaseModel):
    """One scripted reply: text, tool calls, or both."""

    model_config = ConfigDict(extra="forbid")
    text: str = ""
    tool_calls: list[_Call] = Field(default_factory=list)
    usage: dict[str, int] | None = None


def _turn_of(value: Any) -> Turn:
    if isinstance(value, Turn):
        return value
    if isinstance(value, str):
        return Turn(text=value)
    return Turn.model_validate(value)


def _assistant_turns(messages: Sequence[BaseMessage]) -> int:
    return sum(1 for m in messages if isinstance(m, AIMessage))


def _to_ai_message(turn: Turn, index: int) -> AIMessage:
    calls = [
        {"id": c.id or f"call_{index}_{i}", "name": c.name, "args": c.args, "type": "tool_call"}
        for i, c in enumerate(turn.tool_calls)
    ]
    usage = turn.usage or {}
    prompt, completion = usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)
    metadata = UsageMetadata(
        input_tokens=prompt, output_tokens=completion, total_tokens=prompt + completion
    )
    return AIMessage(turn.text, tool_calls=calls, usage_metadata=metadata if turn.usage else None)


class _FakeChatModel(BaseChatModel):
    """Shared plumbing: bind_tools passes the schemas through to ``_reply``."""

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | Any],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self.bind(tools=list(tools), **kwargs)

    def _reply(
        self, messages: list[BaseMessage], tools: list[Any], response_format: Any = None
    ) -> AIMessage:
        raise NotImplementedError

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        reply = self._reply(
            messages, list(kwargs.get("tools") or []), kwargs.get("response_format")
        )
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        reply = self._reply(
            messages, list(kwargs.get("tools") or []), kwargs.get("response_format")
        )
        words = reply.text.split(" ") if reply.text else []
        for i, word in enumerate(words):
            piece = word if i == len(words) - 1 else word + " "
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=piece))
            if run_manager is not None:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk
        tool_chunks = [
            {"id": c["id"], "name": c["name"], "args": json.dumps(c["args"]), "index": i}
            for i, c in enumerate(reply.tool_calls)
        ]
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content="", tool_call_chunks=tool_chunks, usage_metadata=reply.usage_metadata
            )
        )


class ScriptedModel(_FakeChatModel):
    """A chat model that plays a fixed script, one turn per assistant reply.

    Args:
        turns: The replies, in order: ``{"text": ...}``, ``{"tool_calls": [...]}``, or a string.

    Raises:
        ScriptExhaustedError: when asked for a turn the script does not have.
    """

    turns: list[Turn]

    def __init__(self, turns: Sequence[Turn | dict[str, Any] | str], **kwargs: Any) -> None:
        try:
            parsed = [_turn_of(t) for t in turns]
        except ValidationError as exc:
            raise ConfigError(f"invalid script turn: {_first_error(exc)}") from None
        super().__init__(turns=parsed, **kwargs)

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedModel:
        """Read a JSON script: a list of turns, or ``{"turns": [...]}``.

        Raises:
            ConfigError: the file is missing, not JSON, or not a script.
        """
        p = Path(path)
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"script file {p} does not exist") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"script file {p} is not readable JSON: {exc}") from None
        turns = data.get("turns") if isinstance(data, dict) else data
        if not isinstance(turns, list) or not turns:
            raise ConfigError(
                f'script file {p} must hold a non-empty list of turns or {{"turns": [...]}}'
            )
        return cls(turns)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _reply(
        self, messages: list[BaseMessage], tools: list[Any], response_format: Any = None
    ) -> AIMessage:
        index = _assistant_turns(messages)
        if index >= len(self.turns):
            raise ScriptExhaustedError(
                f"the script has {len(self.turns)} turn(s) and the conversation asked for turn "
                f"{index + 1}; add turns to the script"
            )
        return _to_ai_message(self.turns[index], index)


ReplyFunction = Callable[[list[Any], dict[str, Any]], Any]


class FunctionModel(_FakeChatModel):
    """A chat model whose replies come from a Python function.

    The function gets the conversation as JSON messages and an ``info`` dict (``tools``: the bound
    schemas; ``turn``: the number of assistant replies so far; ``response_format``: the
    request's, or None) and returns a string, a turn dict
    (``{"text": ...}`` / ``{"tool_calls": [...]}``) or an AIMessage.

    Examples:
        >>> model = FunctionModel(lambda messages, info: "seen %d" % len(messages))
        >>> model.invoke("hi").content
        'seen 1'
    """

    function: Callable[..., Any]

    def __init__(self, function: ReplyFunction, **kwargs: Any) -> None:
        super().__init__(function=function, **kwargs)

    @property
    def _llm_type(self) -> str:
        return "function"

    def _reply(
        self, messages: list[BaseMessage], tools: list[Any], response_format: Any = None
    ) -> AIMessage:
        turn = _assistant_turns(messages)
        as_json = [_as_json(m, i) for i, m in enumerate(messages)]
        info = {"tools": tools, "turn": turn, "response_format": response_format}
        outcome = self.function(as_json, info)
        if isinstance(outcome, AIMessage):
            return outcome
        return _to_ai_message(_turn_of(outcome), turn)


def _as_json(message: BaseMessage, index: int) -> Message:
    if isinstance(message, AIMessage):
        return from_langchain(message, turn=index)
    role = {"system": "system", "human": "user", "tool": "tool"}.get(message.type, "user")
    out = Message(role=role, content=message.text)  # type: ignore[typeddict-item]
    tool_call_id = getattr(message, "tool_call_id", None)
    if tool_call_id:
        out["tool_call_id"] = tool_call_id
    return out


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "turn"
    return f"{where}: {err['msg']}"
