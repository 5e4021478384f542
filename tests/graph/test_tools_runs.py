"""Tools in whole runs: namespaces on the wire, per-cycle snapshots, forms, repair, clipping."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from langchain_core.tools import StructuredTool
from pydantic import BaseModel

from ai_agent import Agent, BaseTool, ToolCategory, ToolResult, ToolSpec, UserPlan, tool
from ai_agent.config import AgentSettings
from ai_agent.errors import (
    ApprovalRequiredError,
    ConfigError,
    ToolPolicyViolation,
    UnknownOutputError,
    UnknownToolError,
)
from ai_agent.events import ToolOutput
from ai_agent.testing import FunctionModel
from tests.graph.conftest import MakeAgent, call, recorder, text

OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@tool(category=ToolCategory.READ_ONLY)
def shout(text: str) -> str:
    """Upper-case a text.

    Args:
        text: What to shout.
    """
    return text.upper()


async def test_a_namespaced_tool_end_to_end(make_agent: MakeAgent) -> None:
    seen: list[list[str]] = []

    def reply(messages: list[dict[str, Any]], info: dict[str, Any]) -> dict[str, Any]:
        names = [t["function"]["name"] for t in info["tools"]]
        seen.append(names)
        assert all(OPENAI_NAME.match(n) for n in names)
        if info["turn"] == 0:
            wire = next(n for n in names if n.endswith("shout"))
            return {"tool_calls": [{"name": wire, "args": {"text": "hi"}}]}
        return text(f"got {messages[-1]['content']}")

    agent = make_agent(model=FunctionModel(reply))
    agent.register_tool(shout, namespace="fun")
    result = await agent.run("shout hi")
    assert result.status == "completed" and result.final_text == "got HI"
    assert seen[0] == ["fun__shout"]
    state = await agent.get_state(result.thread_id)
    assert state["messages"][1]["tool_calls"][0]["name"] == "fun__shout"  # what the model said
    assert state["results"][0]["call"]["name"] == "fun.shout"  # what the engine uses
    assert state["active_tools"] == ["fun.shout"]
    act = next(t for t in result.trace if t["stage"] == "act")
    assert act["tool"] == "fun.shout" and act["detail"] == "fun.shout: HI"


async def test_namespaced_approvals_and_grants_use_the_dotted_name(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    spec = recorder(log, category=ToolCategory.MODIFICATION, name="fs.note")
    turns = [call("fs__note", text="a"), call("fs__note", text="b"), text("done")]
    agent = make_agent(turns, tools=[spec])
    paused = await agent.run("write twice")
    assert paused.gate is not None
    assert paused.gate["pending"][0]["call"]["name"] == "fs.note"
    done = await agent.resume(paused.thread_id, UserPlan(approve=["*"], grant_scope="tool"))
    assert done.status == "completed" and len(log) == 2
    state = await agent.get_state(done.thread_id)
    assert state["grants"][0]["tool"] == "fs.note"


class Counter(BaseTool):
    name = "counter"
    description = "Count the words of a text."
    category = ToolCategory.READ_ONLY

    async def execute(self, text: str) -> ToolResult:
        """Count.

        Args:
            text: The text.
        """
        return {"status": "ok", "content": len(text.split())}

    def format_result(self, result: ToolResult) -> str:
        return f"{result['content']} words"


class Repeat(BaseModel):
    """Repeat a word."""

    word: str
    times: int = 2

    def __call__(self) -> str:
        return " ".join([self.word] * self.times)


def _reverse(text: str) -> str:
    """Reverse a text."""
    return text[::-1]


async def test_every_form_of_tool_in_one_run(make_agent: MakeAgent) -> None:
    plain = ToolSpec(
        "plain",
        lambda a, c: {"status": "ok", "content": "plain ok"},
        description="A plain spec.",
        category=ToolCategory.READ_ONLY,
    )
    turn = {
        "tool_calls": [
            {"name": "plain", "args": {}},
            {"name": "shout", "args": {"text": "x"}},
            {"name": "counter", "args": {"text": "a b c"}},
            {"name": "repeat", "args": {"word": "hey"}},
            {"name": "lc__reverse", "args": {"text": "abc"}},
        ]
    }
    agent = make_agent(
        [turn, text("done")],
        tools=[plain, shout, Counter(), tool(category=ToolCategory.READ_ONLY)(Repeat)],
        execute_all_tool_calls=True,
        settings=AgentSettings(max_tool_calls=5),
    )
    agent.register_tool(
        StructuredTool.from_function(_reverse, name="reverse"), namespace="lc", category="read_only"
    )
    result = await agent.run("use everything")
    assert result.status == "completed", result.gate
    state = await agent.get_state(result.thread_id)
    assert [r["result"]["content"] for r in state["results"]] == [
        "plain ok",
        "X",
        3,
        "hey hey",
        "cba",
    ]
    details = [t["detail"] for t in result.trace if t["stage"] == "act"]
    assert "3 words" in details


async def test_the_tool_set_is_stable_within_a_cycle(make_agent: MakeAgent) -> None:
    agent: Agent

    def version(tag: str) -> ToolSpec:
        return ToolSpec(
            "ver",
            lambda a, c: tag,
            description="Say the version.",
            category=ToolCategory.READ_ONLY,
        )

    gone = ToolSpec(
        "gone", lambda a, c: "ran", description="Vanish.", category=ToolCategory.READ_ONLY
    )

    def reply(messages: list[dict[str, Any]], info: dict[str, Any]) -> dict[str, Any]:
        turn = info["turn"]
        if turn == 0:
            # The model has seen v1; while its cycle runs, the registry changes under it.
            agent.register_tool(version("v2"), replace=True)
            agent.unregister_tool("gone")
            return {"tool_calls": [{"name": "ver", "args": {}}]}
        if turn == 1:
            assert [t["function"]["name"] for t in info["tools"]] == ["ver"]
            return {"tool_calls": [{"name": "ver", "args": {}}, {"name": "gone", "args": {}}]}
        return text("done")

    agent = make_agent(
        model=FunctionModel(reply), tools=[version("v1"), gone], execute_all_tool_calls=True
    )
    result = await agent.run("versions")
    assert result.status == "completed"
    state = await agent.get_state(result.thread_id)
    outcomes = [
        (r["call"]["name"], r["result"]["status"], r["result"]["content"]) for r in state["results"]
    ]
    assert outcomes == [
        ("ver", "ok", "v1"),  # what the model saw when it asked
        ("ver", "ok", "v2"),
        ("gone", "skipped", "Error: no tool named 'gone' exists; use one of the available tools"),
    ]


async def test_tools_by_group_glob_and_mapping(make_agent: MakeAgent) -> None:
    agent = make_agent(tools=["search", "math"])
    assert agent.initial_tools == ["glob_search", "grep_search", "calculator"]
    aliased = make_agent(tools={"yell": shout})
    assert aliased.initial_tools == ["yell"]
    assert aliased.registry["yell"].description == "Upper-case a text."
    every_file_tool = make_agent(tools=["*_file"])
    assert set(every_file_tool.initial_tools) == {
        "read_file",
        "write_file",
        "append_file",
        "delete_file",
        "move_file",
        "copy_file",
    }
    with pytest.raises(ConfigError, match=r"unknown tool 'nope'; tools: .*groups: files"):
        make_agent(tools=["nope"])


async def test_settings_name_tools_approvals_and_limits(make_agent: MakeAgent) -> None:
    settings = AgentSettings(
        tools=["calculator", "files"],
        approvals={"modification": "deny"},
        unattended=True,
        tool_config={"max_output_chars": 500, "first_use_gate": False, "timeout": 7},
    )
    agent = make_agent(settings=settings)
    assert agent.initial_tools[0] == "calculator" and "write_file" in agent.initial_tools
    assert agent.policy.approvals["modification"] == "deny"
    assert agent.policy.unattended and not agent.policy.first_use_gate
    assert agent.policy.max_output_chars == 500 and agent.registry.timeout == 7
    explicit = make_agent(settings=settings, approvals={"modification": "approve"})
    assert explicit.policy.approvals["modification"] == "approve"


# Schema repair ---------------------------------------------------------------------------------


def counted(log: list[Any]) -> ToolSpec:
    def fn(args: dict[str, Any], ctx: dict[str, Any]) -> str:
        log.append(args)
        return f"n={args['n']}"

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    return ToolSpec(
        "count", fn, description="Count.", parameters=schema, category=ToolCategory.READ_ONLY
    )


async def test_a_malformed_call_gets_one_repair_retry(make_agent: MakeAgent) -> None:
    log: list[Any] = []
    turns = [call("count", n="three"), call("count", n=3), text("three")]
    agent = make_agent(turns, tools=[counted(log)])
    result = await agent.run("count")
    assert result.status == "completed" and log == [{"n": 3}]
    messages = (await agent.get_state(result.thread_id))["messages"]
    assert messages[2]["content"] == (
        "Error: SchemaViolation: the arguments for count do not match its schema: n: 'three' is "
        "not of type 'integer'. Call count again with corrected arguments."
    )
    assert all(t.get("gate_score", 0) == 0 for t in result.trace if t["stage"] == "gate")


async def test_a_second_malformed_call_is_a_clear_error_at_the_gate(make_agent: MakeAgent) -> None:
    log: list[Any] = []
    turns = [call("count", n="three"), call("count"), text("gave up")]
    agent = make_agent(turns, tools=[counted(log)])
    paused = await agent.run("count")
    assert paused.status == "paused" and paused.gate is not None and log == []
    issue = paused.gate["issues"][0]
    assert (issue["code"], issue["severity"]) == ("TOOL_ERROR", 0.90)
    assert issue["message"] == (
        "the model called count with invalid arguments again after being told what was wrong: "
        "arguments: 'n' is a required property"
    )
    messages = (await agent.get_state(paused.thread_id))["messages"]
    assert messages[4]["content"].endswith(
        "The one repair attempt is used up; the call was not run."
    )


# Clipping --------------------------------------------------------------------------------------


async def test_large_outputs_are_clipped_and_kept_in_the_run_store(make_agent: MakeAgent) -> None:
    big = "HEAD" + "x" * 30_000 + "TAIL"
    seen: list[str] = []

    def reply(messages: list[dict[str, Any]], info: dict[str, Any]) -> dict[str, Any]:
        if info["turn"] == 0:
            return call("dump")
        seen.append(messages[-1]["content"])
        return text("ok")

    dump = ToolSpec("dump", lambda a, c: big, description="Dump.", category=ToolCategory.READ_ONLY)
    # clip: head and tail (the default summary is tests/graph/test_output_summary.py's)
    settings = AgentSettings(tool_config={"max_output_chars": 1000, "output_summary": "clip"})
    agent = make_agent(model=FunctionModel(reply), tools=[dump], settings=settings)
    result = await agent.run("dump it")
    shown = seen[0]
    assert len(shown) < 1200 and shown.startswith("HEAD") and shown.endswith("TAIL")
    ref = "out-1-c1.0"
    assert f"the full output is kept as {ref} (ai-agent output {result.thread_id} {ref})" in shown
    state = await agent.get_state(result.thread_id)
    kept = state["results"][0]["result"]
    assert kept["content"] == shown
    assert kept["meta"] == {
        "clipped": True,
        "full_chars": len(big),
        "output_ref": ref,
        "summary": "clip",
    }
    assert await agent.tool_output(result.thread_id, ref) == big
    with pytest.raises(UnknownOutputError, match=f"kept outputs: {ref}"):
        await agent.tool_output(result.thread_id, "out-9-x")


async def test_clipped_errors_are_clipped_too(make_agent: MakeAgent) -> None:
    failing = ToolSpec(
        "fail",
        lambda a, c: {"status": "error", "error": "E" * 5000},
        description="Fail loudly.",
        category=ToolCategory.READ_ONLY,
    )
    settings = AgentSettings(tool_config={"max_output_chars": 300})
    agent = make_agent([call("fail"), text("x")], tools=[failing], settings=settings)
    result = await agent.run("fail")
    kept = (await agent.get_state(result.thread_id))["results"][0]["result"]
    assert len(str(kept["error"])) < 500 and kept["meta"]["clipped"] is True


# Timeouts --------------------------------------------------------------------------------------


async def test_a_timeout_reaches_the_model_with_a_hint(make_agent: MakeAgent) -> None:
    import time

    slow = ToolSpec(
        "slow", lambda a, c: time.sleep(1), description="Slow.", category=ToolCategory.READ_ONLY
    )
    settings = AgentSettings(tool_config={"timeout": 0.1})
    agent = make_agent([call("slow"), text("x")], tools=[slow], settings=settings)
    result = await agent.run("be slow")
    messages = (await agent.get_state(result.thread_id))["messages"]
    assert messages[2]["content"].startswith(
        "Error: ToolTimeoutError: slow did not finish within 0.1s and was stopped. Narrow the scope"
    )


# Direct calls ----------------------------------------------------------------------------------


async def test_call_tool_runs_under_the_same_policy(make_agent: MakeAgent, tmp_path: Path) -> None:
    agent = make_agent()
    ok = await agent.call_tool("calculator", {"expression": "2*21"})
    assert ok["content"] == "42" and ok["summary"] == "calculator: 42"
    with pytest.raises(
        ApprovalRequiredError, match=r"write_file needs a person's approval"
    ) as info:
        await agent.call_tool("write_file", {"path": "a.txt", "content": "hi"})
    assert "write_file a.txt (new file):" in str(info.value)
    assert not Path("a.txt").exists()
    written = await agent.call_tool("write_file", {"path": "a.txt", "content": "hi"}, approved=True)
    assert written["status"] == "ok" and Path("a.txt").read_text() == "hi"
    bad = await agent.call_tool("calculator", {})
    assert bad["meta"]["code"] == "SCHEMA_VIOLATION"
    with pytest.raises(UnknownToolError, match="no enabled tool named 'ghost'"):
        await agent.call_tool("ghost", {})
    agent.disable_tools("math")
    with pytest.raises(UnknownToolError):
        await agent.call_tool("calculator", {"expression": "1"})
    assert agent.enable_tools("calculator") == ["calculator"]


async def test_call_tool_deny_escalation_and_unattended(make_agent: MakeAgent) -> None:
    Path("doomed.txt").write_text("x")
    lenient = make_agent(approvals={"modification": "auto"})
    with pytest.raises(ApprovalRequiredError, match="asks for confirmation before deleting"):
        await lenient.call_tool("delete_file", {"path": "doomed.txt"})
    assert Path("doomed.txt").exists()
    denied = make_agent(approvals={"modification": "deny"}, unattended=True)
    with pytest.raises(ToolPolicyViolation, match="policy denies modification tools"):
        await denied.call_tool("delete_file", {"path": "doomed.txt"}, approved=True)
    events: list[Any] = []
    trusted = make_agent(unattended=True, on_event=events.append)
    result = await trusted.call_tool("delete_file", {"path": "doomed.txt"})
    assert result["status"] == "ok" and not Path("doomed.txt").exists()
    assert [e["type"] for e in events] == ["tool_started", "tool_finished"]


async def test_tool_management_on_the_agent(make_agent: MakeAgent) -> None:
    agent = make_agent(tools=["calculator"])
    spec = agent.register_tool(shout, namespace="fun", group="fun")
    assert spec.name == "fun.shout" and "fun.shout" in agent.initial_tools
    agent.register_tool(Counter(), activate=False)
    assert "counter" not in agent.initial_tools
    assert agent.tool_groups()["fun"] == ["fun.shout"]
    assert agent.disable_tools("fun") == ["fun.shout"]
    listing = {t["name"]: t for t in agent.list_tools()}
    assert listing["fun.shout"]["enabled"] is False and listing["fun.shout"]["active"] is True
    assert listing["fun.shout"]["wire_name"] == "fun__shout"
    assert listing["write_file"]["policy"] == "approve"
    assert listing["web_search"]["category"] == "external"
    assert "fun.shout" not in {t["name"] for t in agent.list_tools(include_disabled=False)}
    agent.unregister_tool("fun.shout")
    assert "fun.shout" not in agent.initial_tools and "fun.shout" not in agent.registry
    unattended = make_agent(unattended=True)
    assert {t["name"]: t["policy"] for t in unattended.list_tools()}["write_file"] == (
        "auto (unattended)"
    )


async def test_built_in_tools_stream_their_output_through_astream(make_agent: MakeAgent) -> None:
    Path("notes.txt").write_text("line one\n")
    turns = [
        call("run_bash", command="echo from-bash; echo oops >&2"),
        call("read_file", path="notes.txt"),
        text("done"),
    ]
    agent = make_agent(turns, tools=["run_bash", "read_file"], unattended=True)
    outputs = [
        (e.tool, e.stream, e.text)
        async for e in agent.astream("show output")
        if isinstance(e, ToolOutput)
    ]
    assert ("run_bash", "stdout", "from-bash\n") in outputs
    assert ("run_bash", "stderr", "oops\n") in outputs
    assert ("read_file", "content", "line one\n") in outputs
