"""Replay: recorded runs re-executed offline, divergence reports, live and live-after modes."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from ai_agent import Agent, Hooks, ToolCategory, ToolSpec, UserPlan
from ai_agent.errors import ConfigError, ModelRateLimitError, UnknownCheckpointError
from ai_agent.graph.replay import trace_signature
from ai_agent.testing import FunctionModel, ScriptedModel
from tests.graph.conftest import MakeAgent, call, recorder, text


def read(path: Path) -> str:
    """A file's text (a plain function: the tests' files are tiny)."""
    return path.read_text()


def effect_tool(path: Path) -> ToolSpec:
    """A modification tool whose side effect is visible: a line appended to ``path``."""

    def write(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        with path.open("a") as fh:
            fh.write(f"{args['text']}\n")
        return {"status": "ok", "content": f"wrote {args['text']}"}

    return ToolSpec(
        "write",
        write,
        description="Append a line to the notebook.",
        category=ToolCategory.MODIFICATION,
        parameters={"type": "object", "properties": {"text": {"type": "string"}}},
    )


SCRIPT = [
    call("calculator", expression="6*7"),
    call("write", text="42"),
    text("wrote 42"),
]


def agent_for(make_agent: MakeAgent, effects: Path, **kwargs: Any) -> Agent:
    kwargs.setdefault("model", ScriptedModel(SCRIPT))
    return make_agent(tools=["calculator", effect_tool(effects)], **kwargs)


async def original_run(make_agent: MakeAgent, effects: Path, **kwargs: Any) -> Any:
    """calculator, then write (paused for approval, approved by a plan), then the answer."""
    agent = agent_for(make_agent, effects, **kwargs)
    paused = await agent.run("compute and write it down")
    assert paused.status == "paused"
    done = await agent.resume(paused.thread_id, UserPlan(approve=["*"], instructions="go on"))
    assert done.status == "completed"
    assert read(effects) == "42\n"
    return done


def _no_sockets(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: socket.socket, address: Any) -> None:
        raise AssertionError(f"a replay tried to connect to {address}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


async def test_recorded_replay_reproduces_a_run_offline(
    make_agent: MakeAgent, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    effects = tmp_path / "effects.txt"
    original = await original_run(make_agent, effects)
    _no_sockets(monkeypatch)

    # Another Agent over the same database, with the same tools and a model of the same kind
    # whose script is empty: asking it anything would fail the run.
    agent = agent_for(make_agent, effects, model=ScriptedModel([]))
    replay = await agent.replay(original.thread_id)

    assert replay.divergence is None
    assert replay.status == "completed"
    assert replay.thread_id != original.thread_id
    assert replay.final_text == original.final_text == "wrote 42"
    assert trace_signature(replay.trace) == trace_signature(original.trace)
    assert read(effects) == "42\n"  # the tool did not run again
    state = await agent.get_state(replay.thread_id)
    assert [p["plan"]["instructions"] for p in state["plans"]] == ["go on"]
    record = await agent.store.get_run(replay.thread_id)
    assert record is not None
    assert (record["origin"], record["parent_thread_id"]) == ("replay", original.thread_id)
    # The replay is recorded too, marked as served from the recording.
    calls = await agent.store.model_calls(replay.thread_id)
    assert len(calls) == 3 and all(c["replayed"] for c in calls)
    assert [t["call"]["name"] for t in await agent.store.tool_calls(replay.thread_id)] == [
        "calculator",
        "write",
    ]


async def test_changed_system_prompt_diverges_at_the_first_draft(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    effects = tmp_path / "effects.txt"
    original = await original_run(make_agent, effects, system_prompt="You are careful.")
    agent = agent_for(make_agent, effects, system_prompt="You are quick.")
    replay = await agent.replay(original.thread_id)

    report = replay.divergence
    assert report is not None
    assert (replay.status, replay.stop_reason) == ("failed", "diverged")
    assert (report.step, report.stage) == (2, "draft")
    assert report.source_thread_id == original.thread_id
    assert report.thread_id == replay.thread_id
    assert "-[0] system: You are careful." in report.diff
    assert "+[0] system: You are quick." in report.diff
    assert " [1] user (task): compute and write it down" in report.diff
    assert report.recorded["messages"][0]["content"] == "You are careful."
    assert report.new["messages"][0]["content"] == "You are quick."
    assert "diverged at step 2 (draft)" in str(replay.error)
    assert replay.to_dict()["divergence"]["stage"] == "draft"
    # The original is untouched; the replay stopped before its first draft and can go on live.
    assert (await agent.get_result(original.thread_id)).final_text == "wrote 42"
    resumed = await agent.resume(replay.thread_id)
    assert resumed.status == "paused"  # the live run reaches the approval gate by itself


async def test_a_changed_tool_schema_diverges_and_names_the_tool(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    effects = tmp_path / "effects.txt"
    original = await original_run(make_agent, effects)
    changed = ToolSpec(
        "write",
        effect_tool(effects).fn,
        description="Append a line to the journal.",
        category=ToolCategory.MODIFICATION,
        parameters={"type": "object", "properties": {"text": {"type": "string"}}},
    )
    agent = make_agent(model=ScriptedModel(SCRIPT), tools=["calculator", changed])
    report = (await agent.replay(original.thread_id)).divergence
    assert report is not None
    assert '-tool write: {"description": "Append a line to the notebook."' in report.diff
    assert '+tool write: {"description": "Append a line to the journal."' in report.diff


async def test_a_tool_call_the_original_never_made_stops_the_replay(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    log: list[dict[str, Any]] = []
    both = {
        "tool_calls": [
            {"name": "note", "args": {"text": "a"}},
            {"name": "note", "args": {"text": "b"}},
        ]
    }
    original = await make_agent([both, text("done")], tools=[recorder(log)]).run("notes")
    assert [e["args"]["text"] for e in log] == ["a"]
    agent = make_agent([both, text("done")], tools=[recorder(log)], execute_all_tool_calls=True)
    replay = await agent.replay(original.thread_id)
    report = replay.divergence
    assert report is not None
    assert (report.stage, replay.status) == ("act", "failed")
    assert "never called note with these arguments" in report.reason
    assert '+args: {"text": "b"}' in report.diff
    assert [e["args"]["text"] for e in log] == ["a"]  # nothing ran during the replay
    # The refused call is not left in the journal as "may have run".
    state = await agent.get_state(replay.thread_id)
    iteration = state["iteration"]
    assert await agent.store.lookup(replay.thread_id, iteration, f"c{iteration}.1") is None


async def test_live_replay_calls_the_model_and_tools_again(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    effects = tmp_path / "effects.txt"
    original = await original_run(make_agent, effects)
    agent = agent_for(make_agent, effects)
    replay = await agent.replay(original.thread_id, mode="live")
    assert replay.status == "paused"  # approvals hold in a live replay
    assert replay.gate is not None and replay.gate["pending"][0]["call"]["name"] == "write"
    done = await agent.resume(replay.thread_id, UserPlan(approve=["*"]))
    assert done.final_text == "wrote 42"
    assert read(effects) == "42\n42\n"
    assert not any(c["replayed"] for c in await agent.store.model_calls(replay.thread_id))


async def test_another_model_is_a_different_request(make_agent: MakeAgent, tmp_path: Path) -> None:
    effects = tmp_path / "effects.txt"
    original = await original_run(make_agent, effects)
    agent = agent_for(make_agent, effects, model=FunctionModel(lambda m, i: "hi"))
    report = (await agent.replay(original.thread_id, model_identity="agent")).divergence
    assert report is not None
    assert '-params: {"llm": "scripted"}' in report.diff
    assert '+params: {"llm": "function"}' in report.diff


async def test_a_recorded_replay_is_of_the_recorded_model_by_default(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    effects = tmp_path / "effects.txt"
    original = await original_run(make_agent, effects)
    agent = agent_for(make_agent, effects, model=FunctionModel(lambda m, i: "not asked"))
    replay = await agent.replay(original.thread_id)
    assert (replay.divergence, replay.final_text) == (None, original.final_text)
    with pytest.raises(ConfigError, match="unknown model identity 'mine'"):
        await agent.replay(original.thread_id, model_identity="mine")  # type: ignore[arg-type]


async def test_live_after_replays_up_to_the_checkpoint_then_goes_live(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    effects = tmp_path / "effects.txt"
    original = await original_run(make_agent, effects)
    entries = await agent_for(make_agent, effects).ahistory(original.thread_id)
    gate = next(e for e in entries if e.stage == "gate" and "plan" in e.summary)
    # Same kind of model (its kind is part of each request); only its third turn is live.
    model = ScriptedModel([text("not asked"), text("not asked"), text("live answer")])
    agent = agent_for(make_agent, effects, model=model)
    replay = await agent.replay(original.thread_id, gate.checkpoint_id, mode="live-after")
    assert replay.divergence is None
    assert replay.final_text == "live answer"
    assert read(effects) == "42\n42\n"  # the approved write ran again, live
    flags = [c["replayed"] for c in await agent.store.model_calls(replay.thread_id)]
    assert flags == [True, True, False]


async def test_recorded_replay_from_a_checkpoint(make_agent: MakeAgent, tmp_path: Path) -> None:
    effects = tmp_path / "effects.txt"
    original = await original_run(make_agent, effects)
    agent = agent_for(make_agent, effects, model=ScriptedModel([]))
    entries = await agent.ahistory(original.thread_id)
    act = next(e for e in entries if e.stage == "act" and "tool write" in e.summary)
    replay = await agent.replay(original.thread_id, act.checkpoint_id)
    assert replay.final_text == "wrote 42"
    assert trace_signature(replay.trace) == trace_signature(original.trace)
    with pytest.raises(UnknownCheckpointError):
        await agent.replay(original.thread_id, "nope")
    with pytest.raises(ConfigError, match="unknown replay mode"):
        await agent.replay(original.thread_id, mode="fast")  # type: ignore[arg-type]


async def test_replay_of_a_paused_run_pauses_at_the_same_gate(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    effects = tmp_path / "effects.txt"
    agent = agent_for(make_agent, effects)
    paused = await agent.run("compute and write it down")
    replay = await agent.replay(paused.thread_id)
    assert (replay.status, replay.divergence) == ("paused", None)
    assert replay.gate is not None
    assert replay.gate["pending"][0]["call"]["args"] == {"text": "42"}
    assert replay.thread_id in replay.gate["prompt"]


async def test_a_gate_the_original_passed_stops_the_replay(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    turns = [call("note", text="same"), call("note", text="same"), text("done")]
    log: list[dict[str, Any]] = []
    original = await make_agent(turns, tools=[recorder(log)], gate_profile="batch").run("x")
    assert original.status == "completed"  # NO_PROGRESS 0.75 is under the batch threshold
    agent = make_agent(turns, tools=[recorder(log)])
    replay = await agent.replay(original.thread_id)
    report = replay.divergence
    assert report is not None
    assert (replay.status, report.stage) == ("paused", "gate")
    assert "the original run did not pause here" in report.reason


async def test_plans_from_the_hook_are_replayed_without_asking_it(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    effects = tmp_path / "effects.txt"
    hooks = Hooks(query_user_plan=lambda task, gate, ctx: {"approve": ["*"]})
    original = await agent_for(make_agent, effects, hooks=hooks).run("compute and write")
    assert original.status == "completed"

    def ask(task: str, gate: Any, ctx: Any) -> Any:
        raise AssertionError("a recorded replay asked the plan hook")

    agent = agent_for(make_agent, effects, hooks=Hooks(query_user_plan=ask))
    replay = await agent.replay(original.thread_id)
    assert (replay.status, replay.final_text) == ("completed", "wrote 42")
    state = await agent.get_state(replay.thread_id)
    assert [p["source"] for p in state["plans"]] == ["hook"]


async def test_a_recorded_model_error_is_replayed(make_agent: MakeAgent) -> None:
    def flaky(messages: Any, info: dict[str, Any]) -> Any:
        if not any(m["content"] == "retry" for m in messages):
            raise ModelRateLimitError("slow down (429)")
        return text("fine now")

    agent = make_agent(model=FunctionModel(flaky))
    paused = await agent.run("x")
    assert paused.gate is not None and paused.gate["issues"][0]["code"] == "RATE_LIMIT"
    original = await agent.resume(paused.thread_id, UserPlan(instructions="retry"))
    assert original.final_text == "fine now"
    calls = await agent.store.model_calls(original.thread_id)
    assert calls[0]["error"] == {"type": "ModelRateLimitError", "message": "slow down (429)"}

    def never(messages: Any, info: Any) -> Any:
        raise AssertionError("the model was asked during a recorded replay")

    replay = await make_agent(model=FunctionModel(never)).replay(original.thread_id)
    assert (replay.status, replay.final_text) == ("completed", "fine now")
    assert trace_signature(replay.trace) == trace_signature(original.trace)


async def test_replay_of_a_fork_uses_its_parents_recording(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    effects = tmp_path / "effects.txt"
    original = await original_run(make_agent, effects)
    agent = agent_for(make_agent, effects)
    entries = await agent.ahistory(original.thread_id)
    paused = next(e for e in entries if e.paused)
    fork = await agent.afork(original.thread_id, paused.checkpoint_id)
    finished = await agent.resume(fork, UserPlan(approve=["*"], instructions="go on"))
    assert finished.final_text == "wrote 42"
    replay = await agent_for(make_agent, effects, model=ScriptedModel([])).replay(fork)
    assert (replay.divergence, replay.final_text) == (None, "wrote 42")


async def test_recorded_replay_recalls_what_the_original_recalled(
    make_agent: MakeAgent,
) -> None:
    agent = make_agent(model=FunctionModel(lambda m, i: "Paris"), memory_sqlite=True)
    await agent.run("capital of France")
    original = await agent.run("capital of France again")
    await agent.run("France once more")  # memory has grown since the original run
    replay = await agent.replay(original.thread_id)
    assert replay.divergence is None
    assert replay.final_text == "Paris"
    memory = Path(agent.policy.memory_path or "")
    assert replay.thread_id not in read(memory)  # a recorded replay persists nowhere
