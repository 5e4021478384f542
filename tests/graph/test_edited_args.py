"""Approve with edited arguments: a plan's ``edit_args`` runs a waiting call as a person rewrote it.

The new arguments are checked against the tool's schema where the plan arrives (a mistake is
named by its field and the run stays paused), the grant binds to the edited arguments, act runs
the edited call, and the state, the export and a replay keep both the model's and the person's
arguments.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from ai_agent import Hooks, RunResult, ToolCategory, UserPlan
from ai_agent.errors import InvalidPlanError
from ai_agent.graph import Worker
from ai_agent.testing import ScriptedModel
from ai_agent.tools.policy import args_hash
from tests.graph.conftest import MakeAgent, call, recorder, text


def _note(log: list[dict[str, Any]]) -> Any:
    return recorder(log, category=ToolCategory.MODIFICATION)


def _call_id(result: RunResult) -> str:
    assert result.gate is not None, result
    (waiting,) = result.gate["pending"]
    return waiting["call"]["id"]


async def _paused(make_agent: MakeAgent, log: list[dict[str, Any]], **kwargs: Any) -> Any:
    agent = make_agent([call("note", text="draft"), text("done")], tools=[_note(log)], **kwargs)
    paused = await agent.run("write a note")
    assert paused.status == "paused"
    return agent, paused


async def test_an_edited_call_runs_with_the_persons_arguments_and_keeps_the_models(
    make_agent: MakeAgent,
) -> None:
    log: list[dict[str, Any]] = []
    agent, paused = await _paused(make_agent, log)
    call_id = _call_id(paused)
    done = await agent.resume(paused.thread_id, UserPlan(edit_args={call_id: {"text": "final"}}))
    assert done.status == "completed"
    assert [entry["args"] for entry in log] == [{"text": "final"}]  # only the edited call ran
    state = await agent.get_state(paused.thread_id)
    (outcome,) = state["results"]
    assert outcome["call"]["args"] == {"text": "final"}
    assert outcome["call"]["edited_from"] == {"text": "draft"}
    (grant,) = state["grants"]
    assert grant["args_hash"] == args_hash({"text": "final"}) != args_hash({"text": "draft"})
    assert grant["spent"] is True
    assert state["plans"][-1]["plan"]["edit_args"] == {call_id: {"text": "final"}}
    # The gate report keeps the call as the person was shown it; the model hears what ran.
    assert state["gate"] is not None
    tool_message = next(m for m in state["messages"] if m["role"] == "tool")
    assert 'it ran with {"text": "final"}' in tool_message["content"]
    act_lines = [t for t in state["trace"] if t["stage"] == "act" and t.get("tool") == "note"]
    assert act_lines[-1]["detail"].startswith("edited by a person's plan")


async def test_edited_arguments_that_do_not_fit_the_schema_are_named_and_the_run_stays_paused(
    make_agent: MakeAgent,
) -> None:
    log: list[dict[str, Any]] = []
    agent, paused = await _paused(make_agent, log)
    call_id = _call_id(paused)
    with pytest.raises(InvalidPlanError) as caught:
        await agent.resume(paused.thread_id, UserPlan(edit_args={call_id: {"text": 5}}))
    message = str(caught.value)
    assert f"edit_args.{call_id}.text" in message
    assert "the run is still paused" in message
    assert log == []
    again = await agent.get_result(paused.thread_id)
    assert again.status == "paused"
    done = await agent.resume(paused.thread_id, UserPlan(edit_args={call_id: {"text": "ok"}}))
    assert done.status == "completed" and [e["args"] for e in log] == [{"text": "ok"}]


@pytest.mark.parametrize(
    ("plan", "problem"),
    [
        ({"edit_args": {"c9.9": {"text": "x"}}}, "edit_args: no pending call 'c9.9'"),
        ({"edit_args": {"ID": {"text": "x"}}, "deny": ["ID"]}, "both edited and denied"),
        ({"edit_args": {"ID": {"text": "x"}}, "deny": ["*"]}, "both edited and denied"),
    ],
)
async def test_an_edit_of_a_call_the_gate_does_not_show_or_a_denied_one_is_refused(
    make_agent: MakeAgent, plan: dict[str, Any], problem: str
) -> None:
    log: list[dict[str, Any]] = []
    agent, paused = await _paused(make_agent, log)
    call_id = _call_id(paused)
    plan = json.loads(json.dumps(plan).replace('"ID"', json.dumps(call_id)))
    with pytest.raises(InvalidPlanError, match=problem):
        await agent.resume(paused.thread_id, plan)
    assert log == [] and (await agent.get_result(paused.thread_id)).status == "paused"


def test_edited_arguments_must_be_objects() -> None:
    from ai_agent.plans import read_plan

    with pytest.raises(
        InvalidPlanError, match=r"edit_args\.c1\.1: Input should be a valid dictionary"
    ):
        read_plan({"edit_args": {"c1.1": ["not", "an", "object"]}})


def test_arguments_that_are_no_json_data_are_refused() -> None:
    from ai_agent.plans import read_plan

    with pytest.raises(InvalidPlanError, match=r"edit_args\.c1\.1\.text"):
        read_plan({"edit_args": {"c1.1": {"text": object()}}})


async def test_a_queued_edit_is_checked_when_queued_and_served_by_the_worker(
    make_agent: MakeAgent,
) -> None:
    log: list[dict[str, Any]] = []
    agent, paused = await _paused(make_agent, log)
    call_id = _call_id(paused)
    with pytest.raises(InvalidPlanError, match=f"edit_args.{call_id}.text"):
        await agent.submit_plan(paused.thread_id, {"edit_args": {call_id: {"text": ["x"]}}})
    await agent.submit_plan(paused.thread_id, {"edit_args": {call_id: {"text": "queued"}}})
    (outcome,) = await Worker(agent).run(once=True)
    assert outcome.run_status == "completed"
    assert [e["args"] for e in log] == [{"text": "queued"}]


async def test_a_hook_answer_with_a_bad_edit_fails_the_run_with_the_field(
    make_agent: MakeAgent,
) -> None:
    log: list[dict[str, Any]] = []

    def answer(task: str, report: dict[str, Any], view: Any) -> dict[str, Any]:
        return {"edit_args": {report["pending"][0]["call"]["id"]: {"text": 1}}}

    agent = make_agent(
        [call("note", text="draft"), text("done")],
        tools=[_note(log)],
        hooks=Hooks(query_user_plan=answer),
    )
    result = await agent.run("write a note")
    assert result.status == "failed"
    assert "edit_args." in str(result.error) and log == []


async def test_the_export_shows_the_models_and_the_persons_arguments(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    log: list[dict[str, Any]] = []
    agent, paused = await _paused(make_agent, log)
    call_id = _call_id(paused)
    await agent.resume(paused.thread_id, UserPlan(edit_args={call_id: {"text": "final"}}))
    page = await agent.export_html(paused.thread_id, tmp_path / "run.html")
    html = Path(page).read_text()
    assert "final" in html and "edited from" in html and "draft" in html


async def test_a_run_resumed_with_an_edit_replays_identically_offline(
    make_agent: MakeAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    log: list[dict[str, Any]] = []
    agent, paused = await _paused(make_agent, log)
    call_id = _call_id(paused)
    original = await agent.resume(paused.thread_id, UserPlan(edit_args={call_id: {"text": "e"}}))

    def refuse(self: socket.socket, address: Any) -> None:
        raise AssertionError(f"a replay tried to connect to {address}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    replayer = make_agent(model=ScriptedModel([]), tools=[_note(log)])
    replay = await replayer.replay(original.thread_id)
    assert replay.divergence is None
    assert (replay.status, replay.final_text) == ("completed", original.final_text)
    assert len(log) == 1  # the tool did not run again
    (outcome,) = (await replayer.get_state(replay.thread_id))["results"]
    assert (outcome["call"]["args"], outcome["call"]["edited_from"]) == (
        {"text": "e"},
        {"text": "draft"},
    )
