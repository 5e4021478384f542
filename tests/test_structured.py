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


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('{"amount": NaN}', "the answer is not JSON: NaN is not a JSON number"),
        ('{"amount": -Infinity}', "the answer is not JSON: -Infinity is not a JSON number"),
        ('{"amount": 1, "amount": 2}', "the answer is not JSON: the key 'amount' is given twice"),
        ('{"amount": 1e999}', "the answer is not JSON: the number 1e999 is too large"),
        ("[" * 100_000 + "]" * 100_000, "the answer is not JSON: it is nested too deeply"),
        ('{"amount": ' + "1" * 5000 + "}", "the answer is not JSON: Exceeds the limit"),
    ],
)
def test_an_answer_json_takes_but_means_another_thing_is_not_read(text: str, error: str) -> None:
    """What Python's json module takes (or raises on) but is no answer: a clear error, no value.

    NaN would come out as invalid JSON, a key given twice would silently mean its last value,
    and the last two raised out of the run's last step.
    """
    value, why = parse_answer(text)
    assert value is None and why is not None and why.startswith(error)


def test_an_answer_no_check_can_read_is_a_problem_not_a_traceback() -> None:
    """A final_answer call's arguments come parsed: NaN or nesting too deep is a problem."""
    deep: dict[str, Any] = {}
    for _ in range(5000):
        deep = {"c": deep}
    for spec in (OutputSpec.of(Total), OutputSpec.of(SCHEMA)):
        assert spec.problems({"amount": float("nan"), "items": []}) == [
            "answer: NaN and Infinity are not JSON numbers; give a number (or null)"
        ]
        assert spec.problems(deep) == ["answer: it is nested too deeply to check"]


def test_a_schema_whose_ref_points_at_nothing_is_refused_when_built() -> None:
    """jsonschema resolves a $ref only when an answer reaches it: the run would crash there."""
    broken = {"type": "object", "properties": {"a": {"$ref": "#/$defs/nope"}}}
    with pytest.raises(OutputSchemaError, match=r"\$ref '#/\$defs/nope' points at nothing"):
        OutputSpec.of(broken)
    recursive = {
        "type": "object",
        "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
        "properties": {"head": {"$ref": "#/$defs/node"}},
    }
    spec = OutputSpec.of(recursive)
    assert spec.problems({"head": {"next": {"next": {}}}}) == []
    assert spec.problems({"head": {"next": 1}}) == ["head.next: 1 is not of type 'object'"]


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
