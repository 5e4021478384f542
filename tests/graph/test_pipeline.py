"""Your own workflow on the engine: PipelineBuilder's nodes, edges, state fields and hooks."""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from ai_agent import Pipeline, PipelineBuilder, ToolCategory, UserPlan
from ai_agent.context import Hooks, RunContext
from ai_agent.errors import ConfigError
from ai_agent.graph.replay import trace_signature
from ai_agent.testing import ScriptedModel
from tests.graph.conftest import MakeAgent, call, recorder, text


class Reviewed(TypedDict, total=False):
    """The fields the tests' nodes add: a log grown by its own reducer, and a flag."""

    reviews: Annotated[list[str], operator.add]
    escalated: bool


def review(state: dict[str, Any]) -> dict[str, Any]:
    """After act: note which calls ran this cycle (sync, state only)."""
    ran = [
        o["call"]["name"] for o in state.get("results", []) if o["iteration"] == state["iteration"]
    ]
    return {"reviews": [f"{state['iteration']}:{','.join(ran)}"]}


async def stamp(state: dict[str, Any], runtime: Runtime[RunContext]) -> dict[str, Any]:
    """Before finalize: an async node that reads the run's context."""
    return {"reviews": [f"final of {runtime.context.thread_id}"]}


def reviewing() -> PipelineBuilder:
    return (
        PipelineBuilder(state=Reviewed)
        .add_node("review", review, after="act")
        .add_node("stamp", stamp, before="finalize")
    )


async def test_your_nodes_run_on_the_path_and_their_fields_keep_their_reducers(
    make_agent: MakeAgent,
) -> None:
    log: list[dict[str, Any]] = []
    turns = [call("note", text="a"), call("note", text="b"), text("done")]
    agent = make_agent(turns, tools=[recorder(log)], pipeline=reviewing())

    result = await agent.run("note twice")

    assert result.status == "completed" and result.final_text == "done"
    state: dict[str, Any] = dict(await agent.get_state(result.thread_id))
    assert state["reviews"] == ["1:note", "2:note", f"final of {result.thread_id}"]
    stages = [t["stage"] for t in result.trace]
    assert stages == [
        *("recall", "draft", "decide", "discover", "act", "review", "reflect", "gate"),
        *("draft", "decide", "discover", "act", "review", "reflect", "gate"),
        *("draft", "decide", "stamp", "finalize", "persist"),
    ]


class Route(TypedDict, total=False):
    route_log: Annotated[list[str], operator.add]


def triage(state: dict[str, Any]) -> dict[str, Any]:
    return {"route_log": ["triage"]}


def shortcut(state: dict[str, Any]) -> Literal["finalize", "escalate"]:
    """A conditional edge of the user's: a task that says 'urgent' goes to escalate first."""
    return "escalate" if "urgent" in state["task"] else "finalize"


def escalate(state: dict[str, Any]) -> dict[str, Any]:
    return {"route_log": ["escalated"], "final_text": None}


async def test_a_conditional_edge_of_yours_picks_the_path(make_agent: MakeAgent) -> None:
    builder = (
        PipelineBuilder(state=Route)
        .add_node("triage", triage, before="finalize")
        .route("triage", shortcut)
        .add_node("escalate", escalate)
        .route("escalate", "finalize")
    )
    calm = await make_agent(pipeline=builder).run("a calm task")
    urgent = await make_agent(pipeline=builder).run("an urgent task")

    def path(result: Any) -> list[str]:
        return [t["stage"] for t in result.trace if t["stage"] in ("triage", "escalate")]

    assert path(calm) == ["triage"] and path(urgent) == ["triage", "escalate"]
    assert urgent.status == calm.status == "completed"


async def test_replace_a_stage_and_set_a_hook_through_the_builder(make_agent: MakeAgent) -> None:
    noted: list[str] = []

    async def quiet_reflect(state: dict[str, Any]) -> dict[str, Any]:
        noted.append(f"reflect {state['iteration']}")
        return {"reflection": "fine"}

    builder = (
        PipelineBuilder()
        .replace("reflect", quiet_reflect)
        .hook("finalize", lambda task, ctx: f"answer to {task}")
    )
    log: list[dict[str, Any]] = []
    agent = make_agent(
        [call("note", text="a"), text("done")], tools=[recorder(log)], pipeline=builder
    )

    result = await agent.run("the task")

    assert result.final_text == "answer to the task"
    assert noted == ["reflect 1"]
    assert agent.hooks.finalize is not None


def test_a_hook_set_twice_is_refused(make_agent: MakeAgent) -> None:
    builder = PipelineBuilder().hook("finalize", lambda task, ctx: "a")
    with pytest.raises(ConfigError, match="'finalize' is set by the pipeline and by the Agent"):
        make_agent(pipeline=builder, hooks=Hooks(finalize=lambda task, ctx: "b"))


async def test_a_paused_run_resumes_forks_and_replays_with_its_pipeline(
    make_agent: MakeAgent, db: Path, tmp_path: Path
) -> None:
    log: list[dict[str, Any]] = []
    turns = [call("note", text="a"), text("done")]
    tools = [recorder(log, category=ToolCategory.MODIFICATION)]
    first = make_agent(turns, tools=tools, pipeline=reviewing())
    paused = await first.run("write a note")
    assert paused.status == "paused" and log == []

    # Another Agent over the same file, as another process would build it.
    second = make_agent(turns, tools=tools, pipeline=reviewing().build())
    done = await second.resume(paused.thread_id, UserPlan(approve=["*"]))

    assert done.status == "completed" and len(log) == 1
    state: dict[str, Any] = dict(await second.get_state(done.thread_id))
    # review ran after the held call (nothing ran), then again after the approved one.
    assert state["reviews"] == ["1:", "1:note", f"final of {done.thread_id}"]

    replay = await make_agent(
        [], tools=tools, pipeline=reviewing(), model=ScriptedModel([])
    ).replay(done.thread_id)
    assert replay.status == "completed" and replay.divergence is None
    assert trace_signature(replay.trace) == trace_signature(done.trace)
    assert len(log) == 1  # recorded: the tool did not run again

    at_pause = next(e for e in await second.ahistory(done.thread_id) if e.paused)
    forked = await second.afork(done.thread_id, at_pause.checkpoint_id)
    assert dict(await second.get_state(forked))["reviews"] == ["1:"]
    denied = await second.resume(forked, UserPlan(deny=["*"], allow_continue=False))
    assert denied.status == "cancelled" and len(log) == 1
    assert dict(await second.get_state(forked))["reviews"] == ["1:", f"final of {forked}"]


def test_the_builder_says_what_is_wrong() -> None:
    with pytest.raises(ConfigError, match="'think' is not a stage"):
        PipelineBuilder().replace("think", review)
    with pytest.raises(ConfigError, match="'judge' is not a hook"):
        PipelineBuilder().hook("judge", review)
    with pytest.raises(ConfigError, match="exists already"):
        PipelineBuilder().add_node("act", review)
    with pytest.raises(ConfigError, match="not both"):
        PipelineBuilder().add_node("x", review, after="act", before="gate")
    with pytest.raises(ConfigError, match="no node named 'acting'"):
        PipelineBuilder().add_node("x", review, after="acting")
    with pytest.raises(ConfigError, match="has no way on"):
        PipelineBuilder().add_node("x", review).route("act", "x").build()
    with pytest.raises(ConfigError, match="is never reached"):
        PipelineBuilder().add_node("x", review).route("x", "gate").build()
    with pytest.raises(ConfigError, match="which is no node"):
        PipelineBuilder().route("act", "nowhere").build()
    with pytest.raises(ConfigError, match="Literal"):
        PipelineBuilder().route("act", lambda state: "gate")
    with pytest.raises(ConfigError, match="is not a function"):
        PipelineBuilder().add_node("x", 42, after="act")  # type: ignore[arg-type]


def test_your_state_fields_cannot_take_the_engines_names() -> None:
    class Clash(TypedDict, total=False):
        messages: list[str]

    class Empty(TypedDict, total=False):
        pass

    with pytest.raises(ConfigError, match="'messages' is the engine's own"):
        PipelineBuilder(state=Clash)
    with pytest.raises(ConfigError, match="at least one field"):
        PipelineBuilder(state=Empty)


def test_an_agent_takes_a_pipeline_or_a_builder_and_nothing_else(make_agent: MakeAgent) -> None:
    assert isinstance(make_agent(pipeline=PipelineBuilder())._db.pipeline, Pipeline)
    with pytest.raises(ConfigError, match="pipeline= takes a Pipeline"):
        make_agent(pipeline="recall,draft")


async def test_a_node_that_returns_no_dict_fails_the_run_with_a_clear_error(
    make_agent: MakeAgent,
) -> None:
    builder = PipelineBuilder().add_node("bad", lambda state: 42, after="recall")
    result = await make_agent(pipeline=builder).run("task")
    assert result.status == "failed"
    assert "node 'bad' returned int; a node returns a dict of state updates" in str(result.error)


async def test_a_node_that_returns_nothing_changes_nothing(make_agent: MakeAgent) -> None:
    builder = PipelineBuilder().add_node("noop", lambda state: None, after="recall")
    result = await make_agent(pipeline=builder).run("task")
    assert result.status == "completed"
    assert [t["stage"] for t in result.trace][:3] == ["recall", "noop", "draft"]


def test_the_recursion_limit_counts_your_nodes() -> None:
    from ai_agent.graph import recursion_limit

    pipeline = reviewing().build()
    assert pipeline.extra_nodes == 2
    assert pipeline.recursion_limit(5) == recursion_limit(5) + 5 * 2 + 2
