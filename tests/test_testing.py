"""ScriptedModel and FunctionModel behave like chat models and fail clearly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage

from ai_agent.errors import ConfigError, ScriptExhaustedError
from ai_agent.testing import FunctionModel, ScriptedModel


def test_turn_is_chosen_by_assistant_turns_so_far() -> None:
    model = ScriptedModel(
        ["first", {"text": "second", "usage": {"prompt_tokens": 3, "completion_tokens": 2}}]
    )
    assert model.invoke([HumanMessage("a")]).content == "first"
    second = model.invoke([HumanMessage("a"), AIMessage("first"), HumanMessage("b")])
    assert second.content == "second"
    assert second.usage_metadata == {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5}
    with pytest.raises(ScriptExhaustedError, match="has 2 turn"):
        model.invoke([HumanMessage("a"), AIMessage("1"), AIMessage("2")])


def test_tool_calls_get_deterministic_ids_and_bind_tools_works() -> None:
    model = ScriptedModel(
        [{"tool_calls": [{"name": "t", "args": {"x": 1}}, {"name": "u", "id": "mine"}]}]
    )
    bound = model.bind_tools([{"type": "function", "function": {"name": "t"}}])
    reply = bound.invoke([HumanMessage("go")])
    assert [(c["id"], c["name"], c["args"]) for c in reply.tool_calls] == [
        ("call_0_0", "t", {"x": 1}),
        ("mine", "u", {}),
    ]


def test_streaming_yields_words_then_tool_calls() -> None:
    model = ScriptedModel([{"text": "two words", "tool_calls": [{"name": "t", "args": {}}]}])
    chunks = list(model.stream([HumanMessage("go")]))
    assert [c.content for c in chunks[:2]] == ["two ", "words"]
    merged: Any = chunks[0]
    for c in chunks[1:]:
        merged = merged + c
    assert isinstance(merged, AIMessageChunk)
    assert merged.tool_calls[0]["name"] == "t"


def test_bad_turns_and_files_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="invalid script turn: tool_calls"):
        ScriptedModel([{"tool_calls": "nope"}])
    with pytest.raises(ConfigError, match="does not exist"):
        ScriptedModel.from_file(tmp_path / "none.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(ConfigError, match="not readable JSON"):
        ScriptedModel.from_file(broken)
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    with pytest.raises(ConfigError, match="non-empty list of turns"):
        ScriptedModel.from_file(empty)
    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(json.dumps({"turns": [{"text": "ok"}]}))
    assert ScriptedModel.from_file(wrapped).invoke("x").content == "ok"


def test_function_model_sees_json_messages_and_may_return_anything() -> None:
    seen: list[Any] = []

    def reply(messages: list[Any], info: dict[str, Any]) -> Any:
        seen.append((messages, info))
        if info["turn"] == 0:
            return {"tool_calls": [{"name": "t"}]}
        if info["turn"] == 1:
            return AIMessage("as message")
        return "as text"

    model = FunctionModel(reply)
    first = model.invoke([HumanMessage("hi")])
    assert first.tool_calls[0]["id"] == "call_0_0"
    assert model.invoke([HumanMessage("hi"), first]).content == "as message"
    assert model.invoke([HumanMessage("hi"), AIMessage("a"), AIMessage("b")]).content == "as text"
    assert seen[0][0] == [{"role": "user", "content": "hi"}]
    assert seen[1][0][1]["tool_calls"][0]["name"] == "t"
