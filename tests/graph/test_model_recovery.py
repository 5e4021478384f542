"""Whole runs against a real HTTP server: what the engine does before a model failure pauses it.

Tool-call arguments that do not parse are sent back to the model once; a context overflow is
compacted and retried once. Only what is left after that reaches the gate, with a clear issue.
"""

from __future__ import annotations

from typing import Any

from ai_agent import Agent, ToolCategory, ToolSpec
from ai_agent.config import AgentSettings
from ai_agent.testing import Fault, MockOpenAIServer, Reply


def adder(log: list[dict[str, Any]]) -> ToolSpec:
    def add(args: dict[str, Any], ctx: dict[str, Any]) -> str:
        log.append(args)
        return str(args["a"] + args["b"])

    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }
    return ToolSpec(
        "add", add, description="Add.", parameters=schema, category=ToolCategory.READ_ONLY
    )


def agent_on(server: MockOpenAIServer, tools: list[ToolSpec], **settings: Any) -> Agent:
    config = AgentSettings(
        model_backend={"base_url": server.base_url, "max_retries": 0}, **settings
    )
    return Agent(tools=tools, settings=config, checkpoint_path="c.sqlite", memory_path=None)


# Malformed tool-call arguments -----------------------------------------------------------------


async def test_malformed_arguments_go_back_to_the_model_once_and_the_run_completes() -> None:
    log: list[dict[str, Any]] = []
    script: list[Fault | Reply] = [
        Fault.malformed_tool_args("add", '{"a": 2, "b": '),
        Reply(tool_calls=[{"name": "add", "args": {"a": 2, "b": 2}}]),
        Reply(text="4"),
    ]
    with MockOpenAIServer(script) as server:
        async with agent_on(server, [adder(log)]) as agent:
            result = await agent.run("add 2 and 2")
    assert result.status == "completed" and result.final_text == "4"
    assert log == [{"a": 2, "b": 2}]
    told = server.requests[1].body["messages"][-1]
    assert told["role"] == "user" and "not valid JSON" in told["content"]


async def test_malformed_arguments_twice_pause_with_a_clear_model_error() -> None:
    log: list[dict[str, Any]] = []
    script = [Fault.malformed_tool_args("add", '{"a": 2, "b": ')] * 2
    with MockOpenAIServer(script) as server:
        async with agent_on(server, [adder(log)]) as agent:
            paused = await agent.run("add 2 and 2")
    assert paused.status == "paused" and paused.gate is not None and log == []
    assert len(server.requests) == 2
    (issue,) = paused.gate["issues"]
    assert issue["code"] == "MODEL_ERROR"
    assert "not a JSON object" in issue["message"]
    assert "again after the parse error was sent back to it once" in issue["message"]
