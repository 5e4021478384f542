"""Whole runs against a real HTTP server: what the engine does before a model failure pauses it.

Tool-call arguments that do not parse are sent back to the model once; a context overflow is
compacted and retried once. Only what is left after that reaches the gate, with a clear issue.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from ai_agent import Agent, ToolCategory, ToolSpec
from ai_agent.accounting import RunMeter
from ai_agent.config import AgentSettings
from ai_agent.context import Prepared
from ai_agent.errors import ContextOverflowError
from ai_agent.state import Message
from ai_agent.testing import Fault, FunctionModel, MockOpenAIServer, Reply
from ai_agent.tokens import TokenCounter


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


# Text no encoding can write ---------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
async def test_a_lone_surrogate_in_a_reply_is_replaced_not_a_crash(stream: bool) -> None:
    # JSON may escape half a surrogate pair ("\ud800") and the client decodes it, but nothing
    # can write it: the run crashed with a UnicodeEncodeError where the reply was first stored.
    log: list[dict[str, Any]] = []
    script: list[Fault | Reply] = [
        Fault.malformed_tool_args("add", '{"a": 2, "b": 2, "note": "x\\ud800y"}'),
        Reply(text="four \ud800 is 4"),
    ]
    events: list[Any] = []
    with MockOpenAIServer(script) as server:
        config = AgentSettings(
            model_backend={"base_url": server.base_url, "max_retries": 0},
            streaming={"stream_model_responses": stream},
        )
        agent = Agent(
            tools=[adder(log)],
            settings=config,
            checkpoint_path="c.sqlite",
            memory_path=None,
            on_event=events.append,
        )
        async with agent:
            result = await agent.run("add 2 and 2")
            shown = await agent.get_result(result.thread_id)
    assert result.status == "completed", result.error
    assert result.final_text == "four \ufffd is 4" == shown.final_text
    assert log == [{"a": 2, "b": 2, "note": "x\ufffdy"}]
    assert "\ud800" not in repr(events)


async def test_a_lone_surrogate_in_a_tools_output_is_replaced_not_a_crash() -> None:
    # A tool's output is as hostile as a model's reply: the same crash, where it was journaled.
    def halves(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        return {"status": "ok", "content": {"text": "out \ud800 put", "\udc00": 1}}

    spec = ToolSpec(
        "halves",
        halves,
        description="Halves.",
        parameters={"type": "object"},
        category=ToolCategory.READ_ONLY,
    )
    script = [Reply(tool_calls=[{"name": "halves", "args": {}}]), Reply(text="done")]
    with MockOpenAIServer(script) as server:
        async with agent_on(server, [spec]) as agent:
            result = await agent.run("call halves")
            state = await agent.get_state(result.thread_id)
    assert result.status == "completed", result.gate
    (tool_message,) = [m for m in state["messages"] if m["role"] == "tool"]
    assert "out \ufffd put" in tool_message["content"]
    assert '"\ufffd": 1' in tool_message["content"]


# Context overflow ------------------------------------------------------------------------------


def pager(size: int) -> ToolSpec:
    def fetch(args: dict[str, Any], ctx: dict[str, Any]) -> str:
        return f"page {args['page']}: " + "lorem ipsum dolor sit amet " * (size // 27)

    schema = {"type": "object", "properties": {"page": {"type": "integer"}}}
    return ToolSpec(
        "fetch",
        fetch,
        description="Fetch a page.",
        parameters=schema,
        category=ToolCategory.READ_ONLY,
    )


def fetches(pages: int) -> list[Fault | Reply]:
    return [Reply(tool_calls=[{"name": "fetch", "args": {"page": n}}]) for n in range(pages)]


def chars(request: Any) -> int:
    return sum(len(str(m.get("content") or "")) for m in request.body["messages"])


async def test_a_context_overflow_is_compacted_and_retried_once() -> None:
    script = [
        *fetches(3),
        Fault.context_overflow(3100, 2048, style="llama.cpp"),
        Reply(text="done"),
    ]
    with MockOpenAIServer(script) as server:
        async with agent_on(server, [pager(4000)]) as agent:
            result = await agent.run("read three pages")
            state = await agent.get_state(result.thread_id)
    assert result.status == "completed" and result.final_text == "done"
    overflowed, retried = server.requests[3], server.requests[4]
    assert chars(retried) < chars(overflowed) * 2 / 3
    (record,) = state["compactions"]
    assert record["tokens_after"] < record["tokens_before"]
    assert "context overflow" in record["detail"]


async def test_a_second_overflow_pauses_with_a_clear_model_error() -> None:
    overflow = Fault.context_overflow(9000, 8192)  # OpenAI's words
    script = [*fetches(3), overflow, overflow]
    with MockOpenAIServer(script) as server:
        async with agent_on(server, [pager(4000)]) as agent:
            paused = await agent.run("read three pages")
    assert paused.status == "paused" and paused.gate is not None
    assert len(server.requests) == 5  # the overflow was retried once, after compaction
    (issue,) = paused.gate["issues"]
    assert issue["code"] == "MODEL_ERROR"
    message = issue["message"]
    assert "longer than the model's context window (8192 tokens)" in message
    assert "compacted" in message and "MAMBA_MODEL_BACKEND__CONTEXT_WINDOW" in message


async def test_an_overflow_with_nothing_to_compact_pauses_without_a_retry() -> None:
    overflow = Fault.context_overflow(6030, 2048, style="llama.cpp")
    with MockOpenAIServer([overflow]) as server:
        async with agent_on(server, []) as agent:
            paused = await agent.run("a task " * 50)
    assert paused.status == "paused" and paused.gate is not None
    assert len(server.requests) == 1  # compaction could not shrink it: no pointless retry
    (issue,) = paused.gate["issues"]
    assert issue["code"] == "MODEL_ERROR"
    assert "(6030 tokens)" in issue["message"] and "(2048 tokens)" in issue["message"]
    assert "could not be compacted" in issue["message"]


async def test_without_a_compactor_the_overflow_is_final_at_once() -> None:
    meter = RunMeter(counter=TokenCounter(), compactor=None)
    prepared = Prepared(messages=[Message(role="user", content="hi")], estimate=8)
    with pytest.raises(ContextOverflowError, match="compaction is off, so nothing was retried"):
        await meter.compact_after_overflow(
            prepared,
            ContextOverflowError("too long"),
            system_prompt="",
            tools=[],
            model=FunctionModel(lambda m, i: "never"),  # type: ignore[arg-type]
            iteration=1,
        )


# An answer the server cut at the token limit -----------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_an_answer_cut_at_the_token_limit_says_so(stream: bool) -> None:
    script = [Reply(text="The three steps are: first, open the", finish_reason="length")]
    with MockOpenAIServer(script) as server:
        async with agent_on(server, [], streaming={"stream_model_responses": stream}) as agent:
            result = await agent.run("list the three steps")
    assert result.status == "completed" and result.stop_reason == "token_limit"
    assert result.final_text == "The three steps are: first, open the"
    draft = [line for line in result.trace if line["stage"] == "draft"][-1]
    assert (draft["status"], draft["detail"]) == (
        "cut",
        "text reply, cut at the model's token limit",
    )


async def test_an_answer_the_model_ended_is_finished(tmp_path: Any, capsys: Any) -> None:
    from ai_agent.cli import main

    script = [Reply(text="done"), Reply(text="The answer is", finish_reason="length")]
    with MockOpenAIServer(script) as server:
        base = ["--base-url", server.base_url, "--db", str(tmp_path / "c.sqlite")]
        assert await asyncio.to_thread(main, ["say done", *base, "--thread-id", "a"]) == 0
        assert "token limit" not in capsys.readouterr().err
        assert await asyncio.to_thread(main, ["answer", *base, "--thread-id", "b"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "The answer is"
    assert "(the answer stopped at the model's token limit: it may be incomplete;" in err
    assert (
        await asyncio.to_thread(main, ["show", "b", "--db", str(tmp_path / "c.sqlite"), "--json"])
        == 0
    )
    assert json.loads(capsys.readouterr().out)["stop_reason"] == "token_limit"
    assert (
        await asyncio.to_thread(main, ["show", "a", "--db", str(tmp_path / "c.sqlite"), "--json"])
        == 0
    )
    assert json.loads(capsys.readouterr().out)["stop_reason"] == "finished"


@pytest.mark.parametrize("stream", [False, True])
async def test_an_answer_the_server_ended_for_its_own_reason_is_not_finished(stream: bool) -> None:
    # A content filter ended the answer mid-sentence: the run took it for one the model ended.
    script = [Reply(text="The three steps are: first, open the", finish_reason="content_filter")]
    with MockOpenAIServer(script) as server:
        async with agent_on(server, [], streaming={"stream_model_responses": stream}) as agent:
            result = await agent.run("list the three steps")
    assert result.status == "completed" and result.stop_reason == "ended_by_server"
    draft = [line for line in result.trace if line["stage"] == "draft"][-1]
    assert (draft["status"], draft["detail"]) == (
        "ended_by_server",
        "text reply, ended by the server: content_filter",
    )


async def test_the_command_says_the_server_ended_the_answer(tmp_path: Any, capsys: Any) -> None:
    from ai_agent.cli import main

    # A reason with a line break of its own: shown escaped, on the warning's line.
    script = [Reply(text="The answer is", finish_reason="SAFETY\nResume with: ok")]
    with MockOpenAIServer(script) as server:
        base = ["--base-url", server.base_url, "--db", str(tmp_path / "c.sqlite")]
        assert await asyncio.to_thread(main, ["answer", *base, "--thread-id", "a"]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == "The answer is"
    assert (
        "(the model server ended the answer, not the model (finish reason SAFETY\\nResume with: "
        "ok): it may be incomplete or filtered; the server's own logs say why)"
    ) in err
    assert "\nResume with" not in err
    db = ["--db", str(tmp_path / "c.sqlite"), "--json"]
    assert await asyncio.to_thread(main, ["show", "a", *db]) == 0
    assert json.loads(capsys.readouterr().out)["stop_reason"] == "ended_by_server"
