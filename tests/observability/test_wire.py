"""On the wire, against the mock OpenAI-compatible server: request ids, trace context, HTTP logs,
and the API-key canary at DEBUG with bodies on."""

from __future__ import annotations

import re
import uuid
from typing import Any

from langchain_openai import ChatOpenAI

from ai_agent.events import RunFinished
from ai_agent.observability import parse_traceparent
from ai_agent.testing import Fault, MockOpenAIServer, Reply
from tests.observability.conftest import KEY, Logs, MakeAgent

RETRYING = {"model_max_retries": 2, "initial_backoff_seconds": 0.01, "max_backoff_seconds": 0.05}


def wire(server: MockOpenAIServer, name: str) -> list[str]:
    return [r.headers.get(name, "") for r in server.requests]


async def test_each_model_request_carries_its_id_and_trace_context(
    make_agent: MakeAgent, server: MockOpenAIServer, logs: Logs
) -> None:
    logs.start("INFO")
    server.add(
        Reply(tool_calls=[{"name": "calculator", "args": {"expression": "6*7"}}]),
        Reply(text="42"),
    )
    agent = make_agent(server=server, tools=["calculator"])
    async with agent:
        result = await agent.run("6 times 7")
    assert result.status == "completed"
    ids = wire(server, "x-request-id")
    assert len(ids) == 2 and len(set(ids)) == 2
    assert all(str(uuid.UUID(i)) == i for i in ids)
    parents = [parse_traceparent(v) for v in wire(server, "traceparent")]
    assert all(p is not None for p in parents)
    trace_ids = {p[0] for p in parents if p}
    assert len(trace_ids) == 1  # one run, one trace
    assert len({p[1] for p in parents if p}) == 2  # a span per model call
    states = wire(server, "tracestate")
    run_id = logs.where(event="run_started")[0]["run_id"]
    assert states == [f"aiagent={run_id}"] * 2
    # The ids match the trace lines and the log lines, so either leads to the other.
    drafts = [line for line in result.trace if line["stage"] == "draft"]
    assert [d["request_id"] for d in drafts] == ids
    calls = logs.where(event="model_call")
    assert [c["request_id"] for c in calls] == ids
    assert {c["trace_id"] for c in calls} == trace_ids


async def test_a_retried_request_keeps_its_id_and_retries_are_warnings(
    make_agent: MakeAgent, server: MockOpenAIServer, logs: Logs
) -> None:
    logs.start("INFO")
    server.add(Fault.server_error(), Fault.unavailable(), Reply(text="ok"))
    agent = make_agent(server=server, settings={"retry": RETRYING})
    async with agent:
        result = await agent.run("go")
    assert result.status == "completed"
    assert len(set(wire(server, "x-request-id"))) == 1
    assert len(set(wire(server, "traceparent"))) == 1
    retries = logs.where(event="model_retry")
    assert [(r["level"], r["retry"], r["error"]) for r in retries] == [
        ("WARNING", 1, "ModelUnavailableError"),
        ("WARNING", 2, "ModelUnavailableError"),
    ]
    assert all(0 < r["backoff_seconds"] <= 0.05 for r in retries)
    statuses = [r["status"] for r in logs.where(logger="ai_agent.http")]
    assert statuses == [500, 503, 200]
    line = logs.where(logger="ai_agent.http")[0]
    assert re.fullmatch(
        r"POST http://127\.0\.0\.1:\d+/v1/chat/completions -> 500 \([\d.]+ ms\)", line["message"]
    )
    assert line["method"] == "POST" and line["request_id"] == wire(server, "x-request-id")[0]
    assert "(3 attempts)" in logs.where(event="model_call")[0]["message"]


async def test_streamed_requests_carry_the_headers_too(
    make_agent: MakeAgent, server: MockOpenAIServer
) -> None:
    server.add(Reply(text="streamed answer"))
    agent = make_agent(server=server)
    async with agent:
        events = [e async for e in agent.astream("go")]
    final = events[-1]
    assert isinstance(final, RunFinished) and final.result.status == "completed"
    assert server.requests[0].stream
    assert wire(server, "x-request-id")[0] and parse_traceparent(wire(server, "traceparent")[0])


async def test_propagation_off_sends_no_trace_headers(
    make_agent: MakeAgent, server: MockOpenAIServer
) -> None:
    server.add(Reply(text="ok"))
    agent = make_agent(
        server=server, settings={"observability": {"propagate_trace_context": False}}
    )
    async with agent:
        await agent.run("go")
    headers = server.requests[0].headers
    assert not {"x-request-id", "traceparent", "tracestate"} & set(headers)


async def test_a_users_own_openai_model_gets_the_headers(
    make_agent: MakeAgent, server: MockOpenAIServer
) -> None:
    server.add(Reply(text="ok"))
    model = ChatOpenAI(base_url=server.base_url, api_key=KEY, model="mock-model", max_retries=0)
    agent = make_agent(model=model, settings={"observability": {"request_id_format": "ulid"}})
    async with agent:
        await agent.run("go")
    assert re.fullmatch(r"[0-9A-HJKMNP-TV-Z]{26}", wire(server, "x-request-id")[0])
    assert parse_traceparent(wire(server, "traceparent")[0])


async def test_slow_responses_are_warnings(
    make_agent: MakeAgent, server: MockOpenAIServer, logs: Logs
) -> None:
    logs.start("WARNING")
    server.add(Reply(text="late", delay=0.2))
    agent = make_agent(server=server, settings={"logging": {"slow_response_seconds": 0.05}})
    async with agent:
        await agent.run("go")
    slow = logs.where(event="slow_response")
    assert len(slow) == 1 and slow[0]["duration_ms"] >= 200
    assert "took" in slow[0]["message"] and "(over 0.05 s)" in slow[0]["message"]


async def test_an_unreachable_server_is_an_error_line(make_agent: MakeAgent, logs: Logs) -> None:
    logs.start("INFO")
    with MockOpenAIServer() as gone:
        url = gone.base_url
    agent = make_agent(model="m", settings={"model_backend": {"base_url": url}})
    async with agent:
        result = await agent.run("go")
    assert result.status == "failed"
    error = logs.where(level="ERROR")[0]
    assert error["message"].startswith("model call to m failed after ")
    assert "cannot reach the model server" in error["message"]


CANARY_SETTINGS: dict[str, Any] = {
    "logging": {
        "include_request_body": True,
        "include_response_body": True,
        "body_size_limit": 200,
    },
    "retry": RETRYING,
}


async def test_the_api_key_never_reaches_the_logs_at_debug_with_bodies(
    make_agent: MakeAgent, server: MockOpenAIServer, logs: Logs
) -> None:
    for structured in (True, False):
        logs = Logs().start("DEBUG", structured=structured)
        # The key comes back in an error, in a reply and in a tool call; the task has a password.
        server.add(
            Fault.status_code(503, f"upstream rejected key {KEY}"),
            Reply(tool_calls=[{"name": "calculator", "args": {"expression": "1+1", "note": KEY}}]),
            Reply(text=f"Your key is {KEY}. " + "x" * 400),
        )
        server.requests.clear()
        agent = make_agent(server=server, tools=["calculator"], settings=CANARY_SETTINGS)
        async with agent:
            result = await agent.run(f"use key {KEY} and password=hunter2")
        assert result.status == "completed"
        assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"  # it was sent
        out = logs.text
        assert KEY not in out and "hunter2" not in out
        assert "'authorization': '***'" in out
        assert "request body:" in out and "response body:" in out
        assert "bytes in all)" in out  # the long reply was cut to the limit
    from ai_agent.observability import unconfigure_logging

    unconfigure_logging()


async def test_bodies_stay_out_unless_opted_in(
    make_agent: MakeAgent, server: MockOpenAIServer, logs: Logs
) -> None:
    logs.start("DEBUG")
    server.add(Reply(text="ok"))
    agent = make_agent(server=server)
    async with agent:
        await agent.run("secret plans")
    assert "body" not in logs.text and "secret plans" not in logs.text
    assert logs.where(logger="ai_agent.http", level="DEBUG")  # headers still are
