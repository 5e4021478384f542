"""Your own types in the state: stored and loaded by the serializer you register, strictly."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from typing_extensions import TypedDict

from ai_agent import PipelineBuilder, ToolCategory, UserPlan
from ai_agent.checkpoints import StateType, TypedSerializer, strict_serializer
from ai_agent.errors import ConfigError, StoreError
from tests.graph.conftest import MakeAgent, call, recorder, text


@dataclass(frozen=True)
class Money:
    amount: Decimal
    currency: str


class Priced(TypedDict, total=False):
    price: Money
    seen_types: list[str]


def price(state: dict[str, Any]) -> dict[str, Any]:
    return {"price": Money(Decimal("19.99"), "EUR")}


def check(state: dict[str, Any]) -> dict[str, Any]:
    """After the pause: the value came back from the checkpoint as a Money."""
    value = state["price"]
    return {"seen_types": [type(value).__name__], "final_text": f"{value.amount} {value.currency}"}


def priced(*, register: bool = True) -> PipelineBuilder:
    builder = (
        PipelineBuilder(state=Priced)
        .add_node("price", price, after="recall")
        .add_node("check", check, after="finalize")
    )
    if register:
        builder.serializer(
            Money,
            lambda m: {"amount": str(m.amount), "currency": m.currency},
            lambda d: Money(Decimal(d["amount"]), d["currency"]),
        )
    return builder


async def test_a_registered_type_survives_a_pause_and_a_resume_in_another_agent(
    make_agent: MakeAgent, db: Path
) -> None:
    log: list[dict[str, Any]] = []
    turns = [call("note", text="a"), text("done")]
    tools = [recorder(log, category=ToolCategory.MODIFICATION)]
    paused = await make_agent(turns, tools=tools, pipeline=priced()).run("price it")
    assert paused.status == "paused"

    second = make_agent(turns, tools=tools, pipeline=priced())
    done = await second.resume(paused.thread_id, UserPlan(approve=["*"]))

    assert done.status == "completed" and done.final_text == "19.99 EUR"
    state: dict[str, Any] = dict(await second.get_state(done.thread_id))
    assert state["price"] == Money(Decimal("19.99"), "EUR")
    assert state["seen_types"] == ["Money"]


async def test_a_reader_without_the_serializer_is_told_what_to_register(
    make_agent: MakeAgent,
) -> None:
    log: list[dict[str, Any]] = []
    turns = [call("note", text="a"), text("done")]
    tools = [recorder(log, category=ToolCategory.MODIFICATION)]
    paused = await make_agent(turns, tools=tools, pipeline=priced()).run("price it")

    # The type is stored as data, so a pipeline that does not register it cannot make it.
    blind = make_agent(turns, tools=tools, pipeline=priced(register=False))
    with pytest.raises(StoreError, match=r"type '.*Money'.*PipelineBuilder.serializer"):
        await blind.resume(paused.thread_id, UserPlan(approve=["*"]))
    assert log == []


async def test_a_type_not_registered_is_refused_before_it_is_stored(make_agent: MakeAgent) -> None:
    result = await make_agent(pipeline=priced(register=False)).run("price it")

    assert result.status == "failed"
    assert (
        "node 'price' put a tests.graph.test_pipeline_serialization.Money in the state field "
        "'price'; checkpoints keep JSON data and the types you register: "
        "PipelineBuilder.serializer(Money, to_data, from_data)"
    ) in str(result.error)


def test_the_serializer_keeps_the_strict_allowlist_for_everything_else() -> None:
    codec = StateType(
        Money, lambda m: [str(m.amount), m.currency], lambda d: Money(Decimal(d[0]), d[1])
    )
    serde = TypedSerializer(strict_serializer(), [codec])
    value = {"a": [Money(Decimal("1"), "USD"), ["x", 2]], "b": None}
    assert serde.loads_typed(serde.dumps_typed(value)) == value

    @dataclass
    class Other:
        n: int

    # An unregistered object still goes through the strict serializer: it does not load back,
    # nor as its fields instead (tests/checkpoints/test_hostile_rows.py).
    with pytest.raises(StoreError, match=r"test_pipeline_serialization\.Other, which"):
        serde.loads_typed(serde.dumps_typed({"o": Other(1)}))
    with pytest.raises(StoreError, match=r"'nobody\.Knows'"):
        serde.loads_typed(
            strict_serializer().dumps_typed({"__ai_agent_type__": "nobody.Knows", "data": 1})
        )


def test_only_your_own_classes_are_registered() -> None:
    with pytest.raises(ConfigError, match="not a class of your own"):
        PipelineBuilder().serializer(str, str, str)
