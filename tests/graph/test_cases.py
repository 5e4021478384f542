"""Recorded cases: a run kept in a JSON file, replayed in another database, compared with the run.

Real SQLite files in tmp_path; the original runs use a ScriptedModel, and every replay is
given a model whose script is empty, so a replay that asked it would fail.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from ai_agent import Agent, Hooks, UserPlan
from ai_agent.errors import ConfigError, RunError, UnknownThreadError
from ai_agent.graph import (
    CaseResult,
    check_case,
    export_case,
    import_case,
    read_case,
    replay_case,
    write_case,
)
from ai_agent.graph.testfile import AgentRecipe, case_file_names, regression_test_text
from ai_agent.testing import ScriptedModel
from tests.graph.conftest import MakeAgent, call, recorder, text

SCRIPT = [call("calculator", expression="6*7"), call("note", text="42"), text("it is 42")]


async def recorded(make_agent: MakeAgent, tools: list[Any]) -> tuple[str, dict[str, Any]]:
    """A run: calculator, then a note (approved at the gate), then the answer; and its case."""
    async with make_agent(SCRIPT, tools=tools) as agent:
        paused = await agent.run("compute and note it")
        assert paused.status == "paused"
        done = await agent.resume(paused.thread_id, UserPlan(approve=["*"]))
        assert done.status == "completed"
        return done.thread_id, await export_case(agent.archive.database, done.thread_id)


def note_tool(log: list[dict[str, Any]]) -> Any:
    from ai_agent import ToolCategory

    return recorder(log, category=ToolCategory.MODIFICATION)


def replayer(tmp_path: Path, tools: list[Any], **kwargs: Any) -> Agent:
    return Agent(
        model=ScriptedModel([]),
        tools=tools,
        checkpoint_path=tmp_path / "replay.sqlite",
        memory_path=None,
        **kwargs,
    )


async def test_a_case_replays_in_a_fresh_database_as_the_run_went(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    log: list[dict[str, Any]] = []
    thread, case = await recorded(make_agent, ["calculator", note_tool(log)])
    path = write_case(case, tmp_path / "case.recording.json")
    assert read_case(path) == json.loads(json.dumps(case))  # plain JSON, read back the same
    assert case["expected"]["tool_calls"] == [
        {"name": "calculator", "args": {"expression": "6*7"}},
        {"name": "note", "args": {"text": "42"}},
    ]
    assert len(case["checkpoints"]) == 2  # the first and the last, nothing in between
    log.clear()
    async with replayer(tmp_path, ["calculator", note_tool(log)]) as agent:
        result = await check_case(agent, path)
    assert result.same and result.diverged is None, result
    assert str(result) == f"case {thread}: same"
    assert result.tool_calls == [("calculator", {"expression": "6*7"}), ("note", {"text": "42"})]
    assert (result.final_text, result.status) == ("it is 42", "completed")
    assert log == []  # no tool ran: the results came from the recording
    assert result.to_dict()["same"] is True


async def test_a_changed_tool_result_is_the_first_divergence(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    _, case = await recorded(make_agent, ["calculator", note_tool([])])
    case["tool_calls"][0]["result"]["content"] = "41"
    async with replayer(tmp_path, ["calculator", note_tool([])]) as agent:
        result = await check_case(agent, case)
    assert not result.same
    assert result.where == "draft: the model request differs from the recorded one"
    assert "-[2] tool calculator #c1.0: 42" in result.detail
    assert "+[2] tool calculator #c1.0: 41" in result.detail
    assert result.diverged is not None and f"diverged at step {result.step}" in result.diverged


def test_a_changed_system_prompt_diverges_at_the_first_model_call(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    _, case = asyncio.run(recorded(make_agent, ["calculator", note_tool([])]))
    agent = replayer(tmp_path, ["calculator", note_tool([])], system_prompt="Be terse.")
    result = replay_case(agent, case)  # the synchronous form a generated test uses
    assert result.step == 2 and "+[0] system: Be terse." in result.detail


async def test_the_synchronous_form_refuses_a_running_event_loop(tmp_path: Path) -> None:
    with pytest.raises(RunError, match="await check_case"):
        replay_case(replayer(tmp_path, []), {})


async def test_a_changed_final_stage_is_told_as_a_different_answer(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    _, case = await recorded(make_agent, ["calculator", note_tool([])])
    hooks = Hooks(finalize=lambda task, ctx: "forty-two")
    async with replayer(tmp_path, ["calculator", note_tool([])], hooks=hooks) as agent:
        result = await check_case(agent, case)
    assert result.where == "the final answer differs"
    assert "-it is 42" in result.detail and "+forty-two" in result.detail


def compared(case: dict[str, Any], status: str, calls: list[Any], final: str | None) -> CaseResult:
    from ai_agent.graph.regression import _compare
    from ai_agent.graph.result import RunResult

    result = RunResult(status=status, thread_id="replay-1", final_text=final)  # type: ignore[arg-type]
    return _compare(case, result, calls)


def test_the_comparison_names_the_first_tool_call_that_differs() -> None:
    case = {
        "thread_id": "t",
        "expected": {
            "status": "completed",
            "final_text": "ok",
            "tool_calls": [{"name": "a", "args": {}}, {"name": "b", "args": {"x": 1}}],
        },
    }
    assert compared(case, "completed", [("a", {}), ("b", {"x": 1})], "ok").same
    other = compared(case, "completed", [("a", {}), ("b", {"x": 2})], "ok")
    assert (other.step, other.where) == (2, "tool call 2 differs")
    assert '-b {"x": 1}' in other.detail and '+b {"x": 2}' in other.detail
    more = compared(case, "completed", [("a", {}), ("b", {"x": 1}), ("c", {})], "ok")
    assert (more.step, more.where) == (3, "tool call 3: a tool call the recorded run did not make")
    fewer = compared(case, "completed", [("a", {})], "ok")
    assert fewer.where == "tool call 2: a recorded tool call the replay did not make"
    failed = compared(case, "failed", [("a", {}), ("b", {"x": 1})], None)
    assert failed.where == "the run ended failed, not completed" and failed.step is None
    assert str(failed).startswith("case t: diverged: the run ended failed")


async def test_a_case_of_a_run_still_paused_replays_to_the_same_pause(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    async with make_agent(SCRIPT, tools=["calculator", note_tool([])]) as agent:
        paused = await agent.run("compute and note it")
        case = await export_case(agent.archive.database, paused.thread_id)
    assert case["checkpoints"][-1]["interrupts"]  # the pending gate travels with the case
    async with replayer(tmp_path, ["calculator", note_tool([])]) as agent:
        result = await check_case(agent, case)
    assert result.same, result
    assert result.status == "paused" and result.final_text is None


async def test_exporting_an_unknown_run_says_so(make_agent: MakeAgent) -> None:
    async with make_agent() as agent:
        await agent.run("hello")
        with pytest.raises(UnknownThreadError, match="no run with thread id nope"):
            await export_case(agent.archive.database, "nope")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("not json", "not valid JSON|JSON"),
        ("[1, 2]", "is not a recorded case"),
        ('{"format": "ai-agent recorded case", "version": 9}', "has version 9"),
        ('{"format": "ai-agent recorded case", "version": 1}', r"is damaged \(no thread_id"),
    ],
)
def test_a_bad_case_file_is_refused_with_what_to_do(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = tmp_path / "bad.recording.json"
    path.write_text(text)
    with pytest.raises(ConfigError, match=problem):
        read_case(path)


async def test_a_damaged_part_of_a_case_is_a_config_error(tmp_path: Path) -> None:
    case = {"thread_id": "t", "task": "x", "expected": {}, "checkpoints": [{}]}
    async with replayer(tmp_path, []) as agent:
        await agent.archive.database.open()
        with pytest.raises(ConfigError, match="recorded case of run 't' is damaged"):
            await import_case(agent.archive.database, case)


HOSTILE = 'done"""\nimport os; os.system("echo owned")  # \x1b[2K\u202e'


def test_the_generated_test_quotes_every_stored_text_as_data(tmp_path: Path) -> None:
    case = {
        "thread_id": "run-1",
        "task": HOSTILE,
        "expected": {
            "status": "completed",
            "final_text": HOSTILE,
            "tool_calls": [{"name": "note", "args": {"text": HOSTILE}}],
        },
    }
    source = regression_test_text(case, "case.recording.json", AgentRecipe(tools=["note"]))
    namespace: dict[str, Any] = {"__file__": str(tmp_path / "test_x.py")}
    exec(compile(source, "test_x.py", "exec"), namespace)  # the point of the test: it runs
    assert namespace["TASK"] == HOSTILE
    assert "\x1b" not in source and "\u202e" not in source  # hidden characters as escapes
    assert "\\x1b[2K\\u202e" in source


def test_the_generated_test_builds_the_agent_as_told() -> None:
    case = {
        "thread_id": "abc",
        "task": "t",
        "expected": {"status": "failed", "final_text": None, "tool_calls": []},
    }
    with_prompt = regression_test_text(
        case, "r.json", AgentRecipe(tools=["a"], system_prompt="Be terse.")
    )
    assert 'system_prompt="Be terse.",' in with_prompt
    assert "assert replay.tool_calls == []" in with_prompt
    assert "assert replay.final_text == None" in with_prompt
    app = regression_test_text(case, "r.json", AgentRecipe(app="myproject.agents:make"))
    assert "from myproject.agents import make as make_app" in app
    assert "return make_app(str(checkpoint_path))" in app
    assert case_file_names("abc") == ("test_run_abc.py", "test_run_abc.recording.json")
    with pytest.raises(ValueError, match="must be a file name"):
        regression_test_text(case, "../r.json", AgentRecipe())


async def test_a_live_check_asks_the_model_again_and_gives_the_recorded_plans(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    log: list[dict[str, Any]] = []
    _, case = await recorded(make_agent, ["calculator", note_tool(log)])
    log.clear()
    # Another model: the same first two turns, then another answer.
    other = [*SCRIPT[:2], text("forty-two it is")]
    agent = Agent(
        model=ScriptedModel(other),
        tools=["calculator", note_tool(log)],
        checkpoint_path=tmp_path / "live.sqlite",
        memory_path=None,
    )
    async with agent:
        result = await check_case(agent, case, live=True)
    assert log == [{"args": {"text": "42"}, "ctx": log[0]["ctx"]}]  # the note ran, once
    assert result.tool_calls == [("calculator", {"expression": "6*7"}), ("note", {"text": "42"})]
    assert result.where == "the final answer differs"  # the paused gate got the recorded plan
    assert "+forty-two it is" in result.detail
