"""The pipeline as a subgraph of your StateGraph, and your compiled graph as a node of ours."""

from __future__ import annotations

import operator
from typing import Annotated, Any

import pytest
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from ai_agent import Pipeline, PipelineBuilder, ToolCategory, UserPlan
from ai_agent.context import RunContext
from ai_agent.errors import ConfigError
from ai_agent.state import RunState
from tests.graph.conftest import MakeAgent, call, recorder, text


class Judged(RunState, total=False):
    """Your graph's state: the run state, and a field of yours."""

    verdict: str


def judge(state: Judged) -> dict[str, Any]:
    return {"verdict": f"judged {state.get('final_text')!r} ({state.get('status')})"}


def around() -> Pipeline:
    outer: StateGraph[Any, Any, Any, Any] = StateGraph(Judged, context_schema=RunContext)
    outer.add_node("agent", PipelineBuilder().build().compile())
    outer.add_node("judge", judge)
    outer.add_edge(START, "agent")
    outer.add_edge("agent", "judge")
    outer.add_edge("judge", END)
    return Pipeline.around(outer)


async def test_the_pipeline_runs_as_a_node_of_your_graph(make_agent: MakeAgent) -> None:
    agent = make_agent([text("forty-two")], pipeline=around())

    result = await agent.run("the answer?")

    assert result.status == "completed" and result.final_text == "forty-two"
    state: dict[str, Any] = dict(await agent.get_state(result.thread_id))
    assert state["verdict"] == "judged 'forty-two' (completed)"


async def test_the_gate_inside_your_graph_pauses_and_another_agent_resumes_it(
    make_agent: MakeAgent,
) -> None:
    log: list[dict[str, Any]] = []
    turns = [call("note", text="a"), text("written")]
    tools = [recorder(log, category=ToolCategory.MODIFICATION)]

    paused = await make_agent(turns, tools=tools, pipeline=around()).run("write")
    assert paused.status == "paused" and paused.gate is not None and log == []

    second = make_agent(turns, tools=tools, pipeline=around())
    done = await second.resume(paused.thread_id, UserPlan(approve=["*"]))

    assert done.status == "completed" and done.final_text == "written" and len(log) == 1
    assert dict(await second.get_state(done.thread_id))["verdict"] == "judged 'written' (completed)"


def test_a_graph_around_the_pipeline_must_carry_the_run_state() -> None:
    class Small(TypedDict):
        task: str

    graph: StateGraph[Any, Any, Any, Any] = StateGraph(Small)
    with pytest.raises(ConfigError, match=r"lacks .*messages.*make it extend"):
        Pipeline.around(graph)


class Noted(TypedDict, total=False):
    notes: Annotated[list[str], operator.add]


class TheirState(TypedDict, total=False):
    """Your graph's own state: the keys it shares with the run state are what it sees."""

    task: str
    notes: Annotated[list[str], operator.add]


async def test_your_compiled_graph_runs_as_a_node_of_the_pipeline(make_agent: MakeAgent) -> None:
    theirs: StateGraph[Any, Any, Any, Any] = StateGraph(TheirState)
    theirs.add_node("split", lambda state: {"notes": state["task"].split()})
    theirs.add_node("count", lambda state: {"notes": [f"{len(state['notes'])} words"]})
    theirs.add_edge(START, "split")
    theirs.add_edge("split", "count")
    theirs.add_edge("count", END)
    builder = PipelineBuilder(state=Noted).add_node("words", theirs.compile(), after="recall")

    agent = make_agent(pipeline=builder)
    result = await agent.run("two words")

    assert result.status == "completed"
    assert dict(await agent.get_state(result.thread_id))["notes"] == ["two", "words", "2 words"]
