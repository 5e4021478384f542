"""Whole runs through the nine stages with scripted models: finishing, pausing, resuming."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ai_agent import Agent, Hooks, ToolCategory, ToolSpec, UserPlan
from ai_agent.errors import (
    ConfigError,
    InvalidPlanError,
    NothingPendingError,
    PlanRequiredError,
    RunError,
    UnknownThreadError,
)
from ai_agent.events import RunFinished
from ai_agent.state import ToolResult
from ai_agent.testing import FunctionModel, ScriptedModel
from tests.graph.conftest import MakeAgent, call, recorder, text


def stages(result: Any) -> list[str]:
    return [t["stage"] for t in result.trace]


async def test_a_run_without_tools_finishes_with_the_model_text(make_agent: MakeAgent) -> None:
    agent = make_agent([text("hello there")])
    result = await agent.run("say hello")
    assert result.status == "completed"
    assert result.final_text == "hello there"
    assert stages(result) == ["recall", "draft", "decide", "finalize", "persist"]
    assert result.iterations == 1


async def test_calculator_run_passes_the_tool_result_back_to_the_model(
    make_agent: MakeAgent,
) -> None:
    seen: list[list[dict[str, Any]]] = []

    def reply(messages: list[dict[str, Any]], info: dict[str, Any]) -> dict[str, Any]:
        seen.append(messages)
        if info["turn"] == 0:
            assert [t["function"]["name"] for t in info["tools"]] == ["calculator"]
            return call("calculator", expression="19.5% of 349")
        return text(f"The answer is {messages[-1]['content']}")

    agent = make_agent(model=FunctionModel(reply), tools=["calculator"])
    result = await agent.run("calc 19.5% of 349")
    assert result.status == "completed"
    assert result.final_text == "The answer is 68.055"
    assert seen[1][-1] == {"role": "tool", "content": "68.055", "tool_call_id": "call_0_0"}
    assert stages(result) == [
        "recall",
        "draft",
        "decide",
        "discover",
        "act",
        "reflect",
        "gate",
        "draft",
        "decide",
        "finalize",
        "persist",
    ]
    act = next(t for t in result.trace if t["stage"] == "act")
    assert act["tool"] == "calculator" and act["status"] == "ok"


async def test_system_prompt_is_sent_first_but_never_stored(make_agent: MakeAgent) -> None:
    firsts: list[dict[str, Any]] = []

    def reply(messages: list[Any], info: dict[str, Any]) -> str:
        firsts.append(messages[0])
        return "ok"

    model = FunctionModel(reply)
    agent = make_agent(model=model, system_prompt="You are terse.")
    result = await agent.run("hi")
    assert firsts == [{"role": "system", "content": "You are terse."}]
    state = await agent.get_state(result.thread_id)
    assert all(m["role"] != "system" for m in state["messages"])


async def test_persist_appends_a_jsonl_line(make_agent: MakeAgent, tmp_path: Path) -> None:
    memory = tmp_path / "memory.jsonl"
    agent = make_agent([text("42")], memory_path=memory)
    first = await agent.run("question one")
    second = await agent.run("question two")
    lines = [json.loads(line) for line in memory.read_text().splitlines()]
    assert [(r["thread_id"], r["task"], r["final_text"]) for r in lines] == [
        (first.thread_id, "question one", "42"),
        (second.thread_id, "question two", "42"),
    ]


async def test_default_memory_path_is_under_dot_agents(db: Path) -> None:
    agent = Agent(model=ScriptedModel([text("ok")]), checkpoint_path=db)
    await agent.run("remember me")
    record = json.loads(Path(".agents/memory.jsonl").read_text())
    assert record["task"] == "remember me"


async def test_sqlite_memory_feeds_recall_of_later_runs(make_agent: MakeAgent) -> None:
    seen: list[list[dict[str, Any]]] = []

    def reply(messages: list[Any], info: dict[str, Any]) -> str:
        seen.append(messages)
        return "Paris"

    model = FunctionModel(reply)
    agent = make_agent(model=model, memory_sqlite=True)
    await agent.run("what is the capital of France")
    result = await agent.run("capital of France again?")
    assert result.status == "completed"
    recall_msg = seen[1][0]
    assert recall_msg["role"] == "system"
    assert "earlier task: what is the capital of France" in recall_msg["content"]
    assert "answer: Paris" in recall_msg["content"]
    state = await agent.get_state(result.thread_id)
    assert state["recalled"][0]["final_text"] == "Paris"


async def test_execute_all_tool_calls_runs_every_call(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    two = {
        "tool_calls": [
            {"name": "note", "args": {"text": "a"}},
            {"name": "note", "args": {"text": "b"}},
        ]
    }
    one = make_agent([two, text("done")], tools=[recorder(log)])
    await one.run("two notes")
    assert [e["args"]["text"] for e in log] == ["a"]
    log.clear()
    both = make_agent([two, text("done")], tools=[recorder(log)], execute_all_tool_calls=True)
    result = await both.run("two notes")
    assert [e["args"]["text"] for e in log] == ["a", "b"]
    assert result.status == "completed"


async def test_skipped_calls_still_get_a_tool_message(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    two = {
        "tool_calls": [
            {"name": "note", "args": {"text": "a"}},
            {"name": "note", "args": {"text": "b"}},
        ]
    }
    agent = make_agent([two, text("done")], tools=[recorder(log)])
    result = await agent.run("two notes")
    messages = (await agent.get_state(result.thread_id))["messages"]
    tool_ids = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert sorted(tool_ids) == ["c1.0", "c1.1"]  # the engine's ids
    skipped = next(m for m in messages if m.get("tool_call_id") == "c1.1")
    assert skipped["content"].startswith("Skipped: one action per cycle")


async def test_max_iterations_stops_with_a_summary(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    turns = [call("note", text=str(i)) for i in range(5)]
    agent = make_agent(turns, tools=[recorder(log)], max_iterations=3)
    result = await agent.run("loop")
    # Running out of cycles is not success: the task is not done.
    assert (result.status, result.stop_reason) == ("failed", "max_iterations")
    assert len(log) == 3
    assert result.final_text is not None
    assert result.final_text.startswith("Stopped after 3 iteration(s)")
    assert result.error == result.final_text
    assert (await agent.get_result(result.thread_id)).stop_reason == "max_iterations"
    record = await agent.store.get_run(result.thread_id)
    assert record is not None and record["status"] == "failed"


async def test_a_finished_run_says_so(make_agent: MakeAgent) -> None:
    result = await make_agent([text("done")]).run("x")
    assert (result.status, result.stop_reason) == ("completed", "finished")


async def test_repeating_the_same_call_is_a_no_progress_issue(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    turns = [call("note", text="same"), call("note", text="same"), text("done")]
    agent = make_agent(turns, tools=[recorder(log)])
    result = await agent.run("stuck")
    assert result.status == "paused"
    assert result.gate is not None
    assert [i["code"] for i in result.gate["issues"]] == ["NO_PROGRESS"]
    resumed = await agent.resume(result.thread_id, UserPlan(instructions="try something else"))
    assert resumed.status == "completed"


async def test_asking_a_stateful_tool_again_is_progress_when_the_answer_changes(
    make_agent: MakeAgent,
) -> None:
    polls: list[int] = []

    def poll(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        polls.append(len(polls) + 1)
        return {"status": "ok", "content": "done" if len(polls) == 3 else f"queued ({len(polls)})"}

    job = ToolSpec(
        "job_status",
        poll,
        description="The status of the build job.",
        category=ToolCategory.READ_ONLY,
        parameters={"type": "object", "properties": {"job": {"type": "string"}}},
    )
    turns = [call("job_status", job="b1") for _ in range(3)] + [text("the build is done")]
    result = await make_agent(turns, tools=[job]).run("wait for the build")
    assert (result.status, result.final_text) == ("completed", "the build is done")
    assert polls == [1, 2, 3]


async def test_run_rejects_an_empty_task_and_a_taken_thread(make_agent: MakeAgent) -> None:
    agent = make_agent([text("a"), text("b")])
    with pytest.raises(ConfigError, match="task is empty"):
        await agent.run("   ")
    first = await agent.run("x", thread_id="fixed")
    assert first.thread_id == "fixed"
    with pytest.raises(RunError, match="already exists"):
        await agent.run("y", thread_id="fixed")


async def test_unknown_tool_names_and_objects_are_config_errors(make_agent: MakeAgent) -> None:
    with pytest.raises(ConfigError, match="unknown tool 'nope'"):
        make_agent(tools=["nope"])
    with pytest.raises(ConfigError, match="cannot use 42 as a tool"):
        make_agent(tools=[42])
    with pytest.raises(ConfigError, match="unknown backend"):
        make_agent(backend="cloud")
    with pytest.raises(ConfigError, match="between 0 and 1"):
        make_agent(gate_threshold=1.5)
    with pytest.raises(ConfigError, match="unknown gate profile"):
        make_agent(gate_profile="reckless")
    with pytest.raises(ConfigError, match="at least 1"):
        make_agent(max_iterations=-1)


async def test_gate_profiles_set_the_threshold(make_agent: MakeAgent) -> None:
    assert make_agent(gate_profile="interactive").policy.gate_threshold == 0.60
    assert make_agent(gate_profile="batch").policy.gate_threshold == 0.90
    assert make_agent().policy.gate_threshold == 0.70
    assert make_agent(gate_threshold=0.5, gate_profile="batch").policy.gate_threshold == 0.5


async def test_run_sync_works_without_an_event_loop(db: Path) -> None:
    agent = Agent(model=ScriptedModel([text("sync ok")]), checkpoint_path=db, memory_path=None)
    result = await _in_thread(agent.run_sync, "hi")
    assert result.final_text == "sync ok"


async def _in_thread(fn: Any, *args: Any) -> Any:
    import asyncio

    return await asyncio.to_thread(fn, *args)


async def test_events_announce_stages_and_tools(make_agent: MakeAgent) -> None:
    events: list[dict[str, Any]] = []
    agent = make_agent(
        [call("calculator", expression="1+1"), text("2")],
        tools=["calculator"],
        on_event=events.append,
    )
    await agent.run("add")
    kinds = [(e["type"], e.get("stage"), e.get("tool")) for e in events]
    assert ("model_waiting", "draft", None) in kinds
    assert ("tool_started", "act", "calculator") in kinds
    assert ("tool_finished", "act", "calculator") in kinds
    started = [s for t, s, _ in kinds if t == "stage_started"]
    assert started[:5] == ["recall", "draft", "decide", "discover", "act"]


async def test_async_context_manager_shares_one_checkpointer(make_agent: MakeAgent) -> None:
    agent = make_agent([text("one")])
    async with agent:
        result = await agent.run("a")
        again = await agent.get_result(result.thread_id)
    assert again.final_text == "one"
    await agent.aclose()  # closing twice is harmless


# Resume rules ---------------------------------------------------------------------------------


async def test_resume_of_an_unknown_thread_is_an_error(make_agent: MakeAgent) -> None:
    agent = make_agent()
    with pytest.raises(UnknownThreadError, match="no run with thread id ghost"):
        await agent.resume("ghost", UserPlan())
    with pytest.raises(UnknownThreadError):
        await agent.get_state("ghost")
    with pytest.raises(UnknownThreadError):
        await agent.get_result("ghost")


async def test_resume_on_a_database_that_does_not_exist_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "typo.sqlite"
    agent = Agent(model=ScriptedModel([]), checkpoint_path=missing)
    with pytest.raises(UnknownThreadError, match=r"no run with thread id t1 in .*typo"):
        await agent.resume("t1")
    await agent.aclose()
    assert not missing.exists()


async def test_reading_a_database_that_does_not_exist_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "typo.sqlite"
    agent = Agent(model=ScriptedModel([]), checkpoint_path=missing)
    for read in (agent.get_state, agent.get_result, agent.ahistory):
        with pytest.raises(UnknownThreadError, match=r"no run in .*typo.sqlite: the file does"):
            await read("t1")
    with pytest.raises(UnknownThreadError, match="only a run creates one"):
        agent.history("t1")
    await agent.aclose()
    assert not missing.exists()


async def test_resume_of_a_finished_run_is_an_error(make_agent: MakeAgent) -> None:
    agent = make_agent([text("done")])
    result = await agent.run("x")
    with pytest.raises(NothingPendingError, match="completed; there is nothing to resume"):
        await agent.resume(result.thread_id, UserPlan())


async def test_resume_of_a_paused_run_needs_a_valid_plan(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    agent = make_agent(
        [call("note", text="x"), text("done")],
        tools=[recorder(log, category=ToolCategory.MODIFICATION)],
    )
    paused = await agent.run("write")
    assert paused.status == "paused"
    with pytest.raises(PlanRequiredError, match="needs a plan"):
        await agent.resume(paused.thread_id)
    with pytest.raises(InvalidPlanError, match="allow_continue"):
        await agent.resume(paused.thread_id, {"allow_continue": "perhaps"})
    with pytest.raises(InvalidPlanError, match="approve_everything: Extra inputs"):
        await agent.resume(paused.thread_id, {"approve_everything": True})
    with pytest.raises(InvalidPlanError, match="no pending call 'call_9'"):
        await agent.resume(paused.thread_id, UserPlan(approve=["call_9"]))
    with pytest.raises(InvalidPlanError, match="no tool 'ghost' in the catalog"):
        await agent.resume(paused.thread_id, UserPlan(activate_tools=["ghost"]))
    with pytest.raises(InvalidPlanError, match="both approved and denied"):
        await agent.resume(paused.thread_id, UserPlan(approve=["c1.0"], deny=["c1.0"]))
    # Each bad plan left the interrupt pending: the run is still paused and nothing ran.
    still = await agent.get_result(paused.thread_id)
    assert still.status == "paused" and log == []
    done = await agent.resume(paused.thread_id, UserPlan(approve=["c1.0"]))
    assert done.status == "completed" and len(log) == 1


async def test_a_denied_plan_cancels_the_run_with_a_clear_text(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    agent = make_agent(
        [call("note", text="x"), text("never")],
        tools=[recorder(log, category=ToolCategory.MODIFICATION)],
    )
    paused = await agent.run("write")
    result = await agent.resume(
        paused.thread_id, UserPlan(allow_continue=False, instructions="not today")
    )
    assert (result.status, result.stop_reason) == ("cancelled", "denied")
    assert result.final_text is not None
    assert result.final_text.startswith("Run cancelled at the gate: note is a modification tool")
    assert "not today" in result.final_text
    assert log == []
    messages = (await agent.get_state(result.thread_id))["messages"]
    assert messages[-1]["role"] == "tool" and messages[-1]["content"] == "Tool execution cancelled"


# Hooks -----------------------------------------------------------------------------------------


async def test_every_hook_replaces_its_default(make_agent: MakeAgent) -> None:
    calls: list[str] = []
    log: list[dict[str, Any]] = []

    async def recall(task: str, ctx: dict[str, Any]) -> list[str]:
        calls.append("recall")
        return ["the user prefers metric units"]

    def reflect(task: str, ctx: dict[str, Any]) -> str:
        calls.append("reflect")
        return f"progress at {ctx['iteration']}"

    def evaluate_critical(task: str, issues: list[Any], ctx: dict[str, Any]) -> dict[str, Any]:
        calls.append("evaluate_critical")
        return {"intervene": True, "severity": 0.99, "prompt": "custom prompt"}

    def discover_tools(
        task: str, decision: Any, ctx: dict[str, Any], catalog: list[Any]
    ) -> list[dict[str, str]]:
        calls.append("discover_tools")
        return [{"name": "calculator", "reason": "numbers"}, {"name": "ghost", "reason": "no"}]

    def query_user_plan(task: str, gate: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        calls.append("query_user_plan")
        assert gate["prompt"] == "custom prompt"
        return {"allow_continue": True, "instructions": "carry on"}

    def finalize(task: str, ctx: dict[str, Any]) -> str:
        calls.append("finalize")
        return f"final after {len(ctx['results'])} result(s)"

    persisted: list[Any] = []

    def persist(
        task: str, ctx: dict[str, Any], final_text: str, gate: Any, discovered: list[Any]
    ) -> None:
        calls.append("persist")
        persisted.append((final_text, discovered))

    hooks = Hooks(
        recall=recall,
        reflect=reflect,
        evaluate_critical=evaluate_critical,
        discover_tools=discover_tools,
        query_user_plan=query_user_plan,
        finalize=finalize,
        persist=persist,
    )
    agent = make_agent([call("note", text="x"), text("ok")], tools=[recorder(log)], hooks=hooks)
    result = await agent.run("measure it")
    assert result.status == "completed"
    assert result.final_text == "final after 1 result(s)"
    assert calls == [
        "recall",
        "discover_tools",
        "reflect",
        "evaluate_critical",
        "query_user_plan",
        "finalize",
        "persist",
    ]
    assert persisted == [("final after 1 result(s)", [{"name": "calculator", "reason": "numbers"}])]
    state = await agent.get_state(result.thread_id)
    assert state["reflection"] == "progress at 1"
    assert state["plans"][0]["source"] == "hook"
    assert state["messages"][0]["kind"] == "recall"
    assert any(m.get("kind") == "plan" and m["content"] == "carry on" for m in state["messages"])


async def test_hooks_may_be_given_as_a_dict(make_agent: MakeAgent) -> None:
    agent = make_agent([text("x")], hooks={"finalize": lambda task, ctx: "from dict"})
    assert (await agent.run("t")).final_text == "from dict"


async def test_query_user_plan_returning_none_pauses(make_agent: MakeAgent) -> None:
    agent = make_agent(
        [call("ghost_tool"), text("ok")],
        hooks=Hooks(query_user_plan=lambda task, gate, ctx: None),
    )
    result = await agent.run("use a ghost")
    assert result.status == "paused"


async def test_a_decided_gate_is_not_evaluated_or_asked_again_on_resume(
    make_agent: MakeAgent,
) -> None:
    log: list[dict[str, Any]] = []
    asked: list[str] = []

    def evaluate_critical(task: str, issues: list[Any], ctx: dict[str, Any]) -> dict[str, Any]:
        asked.append("evaluate_critical")
        return {"intervene": bool(issues)}

    def query_user_plan(task: str, gate: dict[str, Any], ctx: dict[str, Any]) -> Any:
        asked.append("query_user_plan")
        # Undecided the first time (the run pauses for a person); a second ask would cancel.
        return None if asked.count("query_user_plan") == 1 else {"allow_continue": False}

    agent = make_agent(
        [call("note", text="x"), text("noted")],
        tools=[recorder(log, category=ToolCategory.MODIFICATION)],
        hooks=Hooks(evaluate_critical=evaluate_critical, query_user_plan=query_user_plan),
    )
    paused = await agent.run("write")
    assert paused.status == "paused"
    assert asked == ["evaluate_critical", "query_user_plan"]
    done = await agent.resume(paused.thread_id, UserPlan(approve=["*"]))
    # The person's plan is applied as given; the gate they answered ran no hook again. The next
    # cycle's gate is a new one and is evaluated (and, clean, passes without asking).
    assert (done.status, done.final_text) == ("completed", "noted")
    assert len(log) == 1
    assert asked.count("query_user_plan") == 1


async def test_evaluate_critical_may_wave_a_blocker_through(make_agent: MakeAgent) -> None:
    """Not intervening never runs an unapproved call: it is cancelled instead."""
    log: list[dict[str, Any]] = []
    agent = make_agent(
        [call("note", text="x"), text("ok")],
        tools=[recorder(log, category=ToolCategory.MODIFICATION)],
        hooks=Hooks(evaluate_critical=lambda task, issues, ctx: {"intervene": False}),
    )
    result = await agent.run("write")
    assert result.status == "completed" and log == []
    messages = (await agent.get_state(result.thread_id))["messages"]
    assert messages[2]["content"] == "Tool execution cancelled: nobody approved it"


async def test_discover_proposes_catalog_tools_by_keyword(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    agent = make_agent([call("note", text="x"), text("ok")], tools=[recorder(log)])
    result = await agent.run("calculate the arithmetic total")
    state = await agent.get_state(result.thread_id)
    assert [d["name"] for d in state["discovered"]] == ["calculator"]
    assert "arithmetic" in state["discovered"][0]["reason"]


async def test_tool_exceptions_become_tool_errors(make_agent: MakeAgent) -> None:
    def boom(args: dict[str, Any], ctx: dict[str, Any]) -> ToolResult:
        raise ValueError("kaput")

    spec = ToolSpec("boom", boom, description="Explode.", category=ToolCategory.READ_ONLY)
    agent = make_agent([call("boom"), text("ok")], tools=[spec])
    result = await agent.run("explode")
    assert result.status == "paused"
    assert result.gate is not None
    assert result.gate["issues"][0]["code"] == "TOOL_ERROR"
    assert "ValueError: kaput" in result.gate["issues"][0]["message"]


def _raises(*args: Any) -> Any:
    raise ValueError("the hook's own bug")


@pytest.mark.parametrize("hook", ["recall", "reflect", "discover_tools", "evaluate_critical"])
async def test_a_hook_that_raises_before_the_gate_is_a_gate_issue_naming_it(
    make_agent: MakeAgent, hook: str
) -> None:
    log: list[dict[str, Any]] = []
    agent = make_agent(
        [call("note", text="x"), text("done"), text("done")],
        tools=[recorder(log)],
        hooks=Hooks(**{hook: _raises}),
    )
    paused = await agent.run("note it")  # no exception out of run()
    assert paused.status == "paused" and paused.gate is not None
    found = [i for i in paused.gate["issues"] if i["code"] == "HOOK_ERROR"]
    assert [i["message"] for i in found] == [
        f"the {hook} hook raised ValueError: the hook's own bug; fix the hook, then resume the run"
    ]
    if hook == "recall":  # no model was asked before the gate heard of it
        assert [t["stage"] for t in paused.trace] == ["recall", "draft", "gate"]


@pytest.mark.parametrize("verdict", [["intervene"], {"severity": "high"}])
async def test_an_evaluate_critical_that_answers_garbage_is_a_hook_error(
    make_agent: MakeAgent, verdict: Any
) -> None:
    agent = make_agent(
        [call("ghost_tool"), text("ok")],
        hooks=Hooks(evaluate_critical=lambda task, issues, ctx: verdict),
    )
    paused = await agent.run("use a ghost")  # no exception out of run()
    assert paused.gate is not None
    assert "HOOK_ERROR" in [i["code"] for i in paused.gate["issues"]]


async def test_a_query_user_plan_that_raises_pauses_for_a_person(make_agent: MakeAgent) -> None:
    agent = make_agent([call("ghost_tool"), text("ok")], hooks=Hooks(query_user_plan=_raises))
    paused = await agent.run("use a ghost")
    assert paused.status == "paused" and paused.gate is not None
    assert [i["code"] for i in paused.gate["issues"]] == ["TOOL_MISSING", "HOOK_ERROR"]
    assert "the query_user_plan hook raised ValueError" in paused.gate["prompt"]


@pytest.mark.parametrize("hook", ["finalize", "persist"])
async def test_a_hook_that_raises_after_the_gate_fails_the_run_resumably(
    make_agent: MakeAgent, hook: str
) -> None:
    calls: list[str] = []

    def flaky(*args: Any) -> Any:
        calls.append(hook)
        if len(calls) == 1:
            raise ValueError("not yet")
        return "fixed"

    agent = make_agent([text("done")], hooks=Hooks(**{hook: flaky}))
    failed = await agent.run("finish")  # no exception out of run()
    assert (failed.status, failed.stop_reason) == ("failed", "error")
    assert (
        failed.error
        == f"the {hook} hook raised ValueError: not yet; fix the hook, then resume the run"
    )
    done = await agent.resume(failed.thread_id)  # the stage runs again
    assert done.status == "completed" and calls == [hook, hook]


async def test_an_unexpected_error_is_stored_with_its_message_masked(
    make_agent: MakeAgent, db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A bug in a stage: the run's row said only "TypeError", which told a person nothing; its
    # message is kept now, masked (here it quotes the backend key) and on one line.
    import importlib

    discover = importlib.import_module("ai_agent.nodes.discover")  # the module, not its node
    key = "sk-canary-unexpected-77"
    monkeypatch.setenv("MAMBA_MODEL_BACKEND__API_KEY", key)

    def broken(*args: Any) -> list[Any]:
        raise TypeError(f"keyword match broke\non {key}")

    monkeypatch.setattr(discover, "keyword_proposals", broken)
    agent = make_agent([call("calculator", expression="1+1"), text("done")], tools=["calculator"])
    heard: list[RunFinished] = []
    agent.add_listener(heard.append, RunFinished)
    async with agent:
        with pytest.raises(TypeError):
            await agent.run("hello", thread_id="u1")
        row = await agent.get_result("u1")
    assert row.error == "TypeError: keyword match broke on ***"
    # Listeners hear the same words, masked (they heard only "TypeError" before).
    assert [event.result.error for event in heard] == [row.error]
    stored = b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*"))
    assert key.encode() not in stored
