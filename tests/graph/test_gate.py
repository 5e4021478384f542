"""The critical gate: the worked examples of the pipeline spec, plans, approvals and grants."""

from __future__ import annotations

from typing import Any, Literal

import pytest

from ai_agent import Hooks, ToolCategory, ToolSpec, UserPlan
from ai_agent.errors import ModelRateLimitError
from ai_agent.graph import RunResult
from ai_agent.state import GateReport
from ai_agent.testing import FunctionModel
from tests.graph.conftest import MakeAgent, call, recorder, text


def report(result: RunResult) -> GateReport:
    """The gate report of a paused run."""
    assert result.gate is not None, result
    return result.gate


def failing_tool(error: str, code: str | None = None) -> ToolSpec:
    def fn(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        return {"status": "error", "error": error, "meta": {"code": code} if code else {}}

    return ToolSpec("api", fn, description="Call the API.", category=ToolCategory.READ_ONLY)


async def gate_outcome(make_agent: MakeAgent, tool: ToolSpec, threshold: float) -> Any:
    agent = make_agent([call("api"), text("done")], tools=[tool], gate_threshold=threshold)
    return await agent.run("call the api")


# The worked examples of the pipeline spec -------------------------------------------------------


async def test_missing_active_tool_is_0_80_and_interrupts_at_0_70(make_agent: MakeAgent) -> None:
    agent = make_agent([call("read_file", path="a.txt"), text("done")])
    result = await agent.run("read a.txt")
    assert result.status == "paused"
    assert result.gate is not None
    assert [(i["code"], i["severity"]) for i in report(result)["issues"]] == [
        ("TOOL_MISSING", 0.80)
    ]
    relaxed = make_agent([call("read_file", path="a.txt"), text("done")], gate_threshold=0.81)
    assert (await relaxed.run("read a.txt")).status == "completed"


@pytest.mark.parametrize(
    ("threshold", "status"), [(0.70, "paused"), (0.95, "paused"), (0.96, "completed")]
)
async def test_401_is_auth_0_95_and_interrupts_unless_threshold_is_0_96(
    make_agent: MakeAgent, threshold: float, status: str
) -> None:
    result = await gate_outcome(make_agent, failing_tool("HTTP 401 Unauthorized"), threshold)
    assert result.status == status
    if status == "paused":
        assert [(i["code"], i["severity"]) for i in report(result)["issues"]] == [("AUTH", 0.95)]


@pytest.mark.parametrize(("threshold", "status"), [(0.70, "paused"), (0.90, "completed")])
async def test_429_is_rate_limit_0_85(make_agent: MakeAgent, threshold: float, status: str) -> None:
    result = await gate_outcome(make_agent, failing_tool("429 Too Many Requests"), threshold)
    assert result.status == status
    if status == "paused":
        assert [(i["code"], i["severity"]) for i in report(result)["issues"]] == [
            ("RATE_LIMIT", 0.85)
        ]


@pytest.mark.parametrize(("threshold", "status"), [(0.70, "paused"), (0.71, "completed")])
async def test_bad_file_path_is_data_missing_0_70(
    make_agent: MakeAgent, threshold: float, status: str
) -> None:
    tool = failing_tool("[Errno 2] No such file or directory: 'nope.txt'")
    result = await gate_outcome(make_agent, tool, threshold)
    assert result.status == status
    if status == "paused":
        assert report(result)["issues"][0]["code"] == "DATA_MISSING"
        assert report(result)["issues"][0]["severity"] == 0.70


async def test_generic_tool_error_is_0_90(make_agent: MakeAgent) -> None:
    result = await gate_outcome(make_agent, failing_tool("boom"), 0.7)
    assert [(i["code"], i["severity"]) for i in report(result)["issues"]] == [("TOOL_ERROR", 0.90)]


async def test_explicit_error_codes_beat_keywords(make_agent: MakeAgent) -> None:
    result = await gate_outcome(make_agent, failing_tool("whatever", code="NOT_FOUND"), 0.7)
    assert report(result)["issues"][0]["code"] == "DATA_MISSING"


async def test_model_rate_limit_becomes_a_gate_issue_and_resume_retries(
    make_agent: MakeAgent,
) -> None:
    attempts: list[int] = []

    def reply(messages: list[Any], info: dict[str, Any]) -> str:
        attempts.append(info["turn"])
        if len(attempts) == 1:
            raise ModelRateLimitError("the model server is rate limiting (429)")
        return "recovered"

    agent = make_agent(model=FunctionModel(reply))
    paused = await agent.run("x")
    assert paused.status == "paused"
    assert [i["code"] for i in report(paused)["issues"]] == ["RATE_LIMIT"]
    done = await agent.resume(paused.thread_id, UserPlan())
    assert done.status == "completed" and done.final_text == "recovered"


# Missing environment keys ---------------------------------------------------------------------


async def test_missing_env_pauses_before_the_tool_runs_and_resume_runs_it(
    make_agent: MakeAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    log: list[dict[str, Any]] = []
    tool = recorder(log, requires_env=("MY_API_KEY",))
    agent = make_agent([call("note", text="x"), text("done")], tools=[tool])
    paused = await agent.run("fetch")
    assert paused.status == "paused" and log == []
    issue = report(paused)["issues"][0]
    assert (issue["code"], issue["severity"]) == ("MISSING_ENV", 0.95)
    assert "MY_API_KEY" in issue["message"]
    assert report(paused)["pending"][0]["blocked"] == "MISSING_ENV"
    # Resuming without the key pauses again; the call still has not run.
    again = await agent.resume(paused.thread_id, UserPlan())
    assert again.status == "paused" and log == []
    monkeypatch.setenv("MY_API_KEY", "set-now")
    done = await agent.resume(paused.thread_id, UserPlan())
    assert done.status == "completed" and len(log) == 1


async def test_missing_env_below_threshold_gives_the_structured_error(
    make_agent: MakeAgent,
) -> None:
    log: list[dict[str, Any]] = []
    tool = recorder(log, requires_env=("MY_API_KEY",))
    agent = make_agent([call("note", text="x"), text("done")], tools=[tool], gate_threshold=0.96)
    result = await agent.run("fetch")
    assert result.status == "completed" and log == []
    messages = (await agent.get_state(result.thread_id))["messages"]
    assert messages[2]["content"] == "Tool execution cancelled: nobody approved it"


async def test_denying_a_waiting_call_cancels_only_that_call(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    tool = recorder(log, requires_env=("NEVER_SET_KEY",))
    agent = make_agent([call("note", text="x"), text("done without it")], tools=[tool])
    paused = await agent.run("fetch")
    done = await agent.resume(paused.thread_id, UserPlan(deny=["*"], instructions="skip it"))
    assert done.status == "completed" and done.final_text == "done without it"
    messages = (await agent.get_state(done.thread_id))["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "user", "assistant"]
    assert messages[2]["content"] == "Tool execution cancelled"
    assert messages[3] == {"role": "user", "content": "skip it", "kind": "plan"}


# Missing tools and activation ------------------------------------------------------------------


async def test_a_plan_can_activate_the_missing_tool(make_agent: MakeAgent) -> None:
    agent = make_agent([call("calculator", expression="2*21"), text("42")])
    paused = await agent.run("multiply")
    assert report(paused)["pending"][0]["call"]["name"] == "calculator"
    assert "activate calculator (--activate calculator)" in report(paused)["options"]
    done = await agent.resume(paused.thread_id, UserPlan(activate_tools=["calculator"]))
    assert done.status == "completed"
    state = await agent.get_state(done.thread_id)
    assert state["active_tools"] == ["calculator"]
    assert state["results"][0]["call"]["name"] == "calculator"


async def test_continuing_without_activation_tells_the_model(make_agent: MakeAgent) -> None:
    agent = make_agent([call("calculator", expression="2*21"), text("fine")])
    paused = await agent.run("multiply")
    done = await agent.resume(paused.thread_id, UserPlan(instructions="do it in your head"))
    messages = (await agent.get_state(done.thread_id))["messages"]
    assert messages[2]["content"] == "Error: tool 'calculator' is not available in this run"
    assert messages[3]["content"] == "do it in your head"


async def test_calls_to_tools_nobody_has_never_run(make_agent: MakeAgent) -> None:
    agent = make_agent([call("ghost"), text("ok")])
    paused = await agent.run("x")
    assert report(paused)["issues"][0]["code"] == "TOOL_MISSING"
    done = await agent.resume(paused.thread_id, UserPlan())
    messages = (await agent.get_state(done.thread_id))["messages"]
    assert "no tool named 'ghost' exists" in messages[2]["content"]


# Approvals and grants -------------------------------------------------------------------------


def writes(n: int) -> list[Any]:
    return [call("note", text=f"w{i}") for i in range(n)] + [text("done")]


async def test_modification_needs_approval_with_a_preview(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    tool = recorder(log, category=ToolCategory.MODIFICATION)
    agent = make_agent(writes(1), tools=[tool])
    paused = await agent.run("write")
    assert [(i["code"], i["severity"]) for i in report(paused)["issues"]] == [
        ("APPROVAL_REQUIRED", 1.0)
    ]
    assert report(paused)["pending"][0]["preview"] == 'note({"text": "w0"})'
    assert "approve c1.0 (--approve c1.0)" in report(paused)["options"]
    done = await agent.resume(paused.thread_id, UserPlan(approve=["c1.0"]))
    assert done.status == "completed" and [e["args"] for e in log] == [{"text": "w0"}]


@pytest.mark.parametrize(("scope", "pauses"), [("call", 2), ("tool", 1)])
async def test_grant_scopes(
    make_agent: MakeAgent, scope: Literal["call", "tool"], pauses: int
) -> None:
    log: list[dict[str, Any]] = []
    agent = make_agent(writes(2), tools=[recorder(log, category=ToolCategory.MODIFICATION)])
    result = await agent.run("write twice")
    seen = 0
    while result.status == "paused":
        seen += 1
        result = await agent.resume(result.thread_id, UserPlan(approve=["*"], grant_scope=scope))
    assert seen == pauses
    assert len(log) == 2


async def test_args_scope_only_covers_identical_arguments(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    turns = [
        call("note", text="same"),
        call("note", text="same"),
        call("note", text="other"),
        text("done"),
    ]
    agent = make_agent(
        turns,
        tools=[recorder(log, category=ToolCategory.MODIFICATION)],
        hooks=Hooks(reflect=lambda task, ctx: None),
    )
    first = await agent.run("write")
    second = await agent.resume(first.thread_id, UserPlan(approve=["*"], grant_scope="args"))
    assert second.status == "paused"  # the third call has other arguments
    assert report(second)["pending"][0]["call"]["args"] == {"text": "other"}
    assert len(log) == 2


async def test_unattended_mode_grants_approvals_but_not_denials(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    tool = recorder(log, category=ToolCategory.MODIFICATION)
    agent = make_agent(writes(1), tools=[tool], unattended=True)
    assert (await agent.run("write")).status == "completed" and len(log) == 1
    denied = make_agent(
        writes(1), tools=[tool], unattended=True, approvals={"modification": "deny"}
    )
    result = await denied.run("write")
    assert result.status == "completed" and len(log) == 1
    messages = (await denied.get_state(result.thread_id))["messages"]
    assert (
        messages[2]["content"] == "Tool execution cancelled: the policy denies modification tools"
    )


async def test_external_tools_need_confirmation(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    agent = make_agent(writes(1), tools=[recorder(log, category=ToolCategory.EXTERNAL)])
    paused = await agent.run("call out")
    assert report(paused)["issues"][0]["code"] == "APPROVAL_REQUIRED"
    assert "external tool" in report(paused)["issues"][0]["message"]


async def test_continuing_without_approving_cancels_the_call(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    agent = make_agent(writes(1), tools=[recorder(log, category=ToolCategory.MODIFICATION)])
    paused = await agent.run("write")
    done = await agent.resume(paused.thread_id, UserPlan(instructions="no writes please"))
    assert done.status == "completed" and log == []
    messages = (await agent.get_state(done.thread_id))["messages"]
    assert messages[2]["content"] == "Tool execution cancelled"
    assert messages[3]["content"] == "no writes please"


async def test_gate_prompt_names_the_thread_and_how_to_resume(make_agent: MakeAgent) -> None:
    agent = make_agent([call("ghost"), text("x")])
    paused = await agent.run("x", thread_id="t-42")
    prompt = report(paused)["prompt"]
    assert prompt.startswith("Run t-42 paused at iteration 1: severity 0.80")
    assert "ai-agent resume t-42 --plan" in prompt
    assert report(paused)["options"][-1] == "stop the run (--deny)"
