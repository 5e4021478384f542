"""The output type as a schema, a check and a rebuild (`ai_agent.structured`)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from ai_agent.context import ModelReply, RunContext, RunPolicy
from ai_agent.errors import OutputSchemaError, OutputValidationError
from ai_agent.nodes._answer import typed_answer
from ai_agent.state import Message, new_run_state
from ai_agent.structured import OutputSpec, parse_answer

SCHEMA = {
    "title": "A total!",
    "type": "object",
    "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
    "required": ["items"],
}


class Total(BaseModel):
    amount: float


def test_a_json_schema_spec_checks_data_and_keeps_it_plain() -> None:
    spec = OutputSpec.of(SCHEMA)
    assert spec.name == "A_total" and spec.output_type is None
    assert spec.problems({"items": [1, "x"]}) == ["items.1: 'x' is not of type 'integer'"]
    assert spec.problems({}) == ["answer: 'items' is a required property"]
    assert spec.value({"items": [1]}) == {"items": [1]}
    assert OutputSpec.stored(spec.stored_form()).schema == spec.schema
    assert OutputSpec.of(spec) is spec


def test_data_that_does_not_fit_is_a_clear_error() -> None:
    with pytest.raises(OutputValidationError, match=r"does not fit Total: amount: Field required"):
        OutputSpec.of(Total).value({})


def test_a_schema_that_is_not_json_data_is_refused() -> None:
    with pytest.raises(OutputSchemaError, match="not JSON data"):
        OutputSpec.of({"type": "object", "default": object()})


@pytest.mark.parametrize(
    ("text", "value", "error"),
    [
        ('{"a": 1}', {"a": 1}, None),
        ('```\n{"a": 1}\n```', {"a": 1}, None),
        ("It is 4.", None, "the answer is not JSON: Expecting value at line 1 column 1"),
    ],
)
def test_an_answers_text_is_read_as_json(text: str, value: Any, error: str | None) -> None:
    assert parse_answer(text) == (value, error)


def test_the_typed_answer_without_a_token_meter() -> None:
    """A context built by hand (no meter): the reply's own usage is counted."""
    asked: list[dict[str, Any] | None] = []

    async def model(
        messages: list[Message],
        tools: list[dict[str, Any]],
        *,
        response_format: dict[str, Any] | None = None,
    ) -> ModelReply:
        asked.append(response_format)
        reply = Message(role="assistant", content='{"amount": 2}')
        return ModelReply(message=reply, usage={"total_tokens": 5}, latency_ms=1.0)

    spec = OutputSpec.of(Total)
    unused: Any = None  # the typed answer uses neither the tools nor the journal
    context = RunContext(
        thread_id="t", model=model, tools=unused, journal=unused, policy=RunPolicy(output=spec)
    )
    state = new_run_state("total?", [])
    state["messages"].append(Message(role="assistant", content="two"))
    answer = asyncio.run(typed_answer(state, context, spec))
    assert answer.data == {"amount": 2.0} and answer.issue is None
    assert answer.usage == {"total_tokens": 5, "requests": 1} and answer.usage_log == []
    assert asked == [spec.response_format()]


@pytest.mark.parametrize(
    "kept", [{"name": "x"}, {"schema": [1]}, "schema", {"schema": {"type": 1}}]
)
def test_a_stored_schema_that_cannot_be_read_is_a_clear_error(kept: Any) -> None:
    with pytest.raises(OutputSchemaError, match=r"stored output schema|not a valid JSON Schema"):
        OutputSpec.stored(kept)
