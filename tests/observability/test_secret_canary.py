"""A tool's secret the model repeats, streamed to us four characters at a time over real HTTP.

The value of a tool's ``requires_env`` variable (a name that does not look secret) is known to
the Agent only by the tool's declaration. The model says it in text (cut across chunks), passes it
as a tool argument, and the tool echoes it back: no log line (JSON or text, DEBUG, bodies on), no
span, no event, no streamed text and no byte of the database may hold it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ai_agent import ToolCategory, ToolSpec
from ai_agent.events import FinalDelta, ModelDelta, RunFinished, ToolOutput
from ai_agent.testing import MockOpenAIServer, Reply
from tests.observability.conftest import KEY, Logs, MakeAgent

SECRET = "peek-canary-3f9a1c7e52"
SETTINGS: dict[str, Any] = {
    "observability": {"enable_otel_instrumentation": True},
    "logging": {"include_request_body": True, "include_response_body": True},
}


def peek() -> ToolSpec:
    """A tool that needs PEEK_ACCESS, streams what it got and returns it (and the key)."""

    def run(args: dict[str, Any], ctx: dict[str, Any]) -> str:
        key = ctx["env"]["PEEK_ACCESS"]
        for piece in (key[:5], key[5:12], key[12:]):  # live output, the key cut in three
            ctx["on_output"](piece)
        return f"given {args['value']}; the key {'works' if key == SECRET else 'is wrong'}: {key}"

    return ToolSpec(
        "peek",
        run,
        description="Peek at a value.",
        category=ToolCategory.READ_ONLY,
        requires_env=("PEEK_ACCESS",),
        parameters={"type": "object", "properties": {"value": {"type": "string"}}},
    )


def replies() -> list[Reply]:
    return [
        Reply(
            text=f"I will pass {SECRET} on.",
            tool_calls=[{"name": "peek", "args": {"value": SECRET}}],
            chunk_chars=4,
        ),
        Reply(text=f"Done: {SECRET}, and the backend key {KEY}.", chunk_chars=4),
    ]


def span_text(exporter: InMemorySpanExporter) -> str:
    parts = []
    for span in exporter.get_finished_spans():
        parts.append(f"{span.name} {dict(span.attributes or {})} {span.status.description}")
        parts += [f"{e.name} {dict(e.attributes or {})}" for e in span.events]
    return "\n".join(parts)


@pytest.mark.parametrize("structured", [True, False])
async def test_a_tool_secret_the_model_streams_reaches_no_log_span_event_or_byte(
    make_agent: MakeAgent,
    server: MockOpenAIServer,
    provider: TracerProvider,
    exporter: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    structured: bool,
) -> None:
    monkeypatch.setenv("PEEK_ACCESS", SECRET)
    logs = Logs().start("DEBUG", structured=structured)
    events: list[Any] = []
    agent = make_agent(
        server=server,
        tools=[peek()],
        settings=SETTINGS,
        tracer_provider=provider,
        on_event=events.append,
    )
    agent.add_listener(events.append)
    server.add(*replies(), *replies())
    async with agent:
        streamed = [event async for event in agent.astream("peek")]  # token deltas
        last = streamed[-1]
        assert isinstance(last, RunFinished)
        finished = last.result
        plain = await agent.run("peek again")  # whole replies: the key in one response body
        state = await agent.get_state(finished.thread_id)
    assert (finished.status, plain.status) == ("completed", "completed")
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"  # still sent
    # The tool had the real key from its environment and the mask where the model wrote it.
    assert state["results"][0]["result"]["content"] == "given ***; the key works: ***"
    answer = "".join(e.text for e in streamed if isinstance(e, FinalDelta))
    assert answer == "Done: ***, and the backend key ***."
    deltas = "".join(e.text for e in streamed if isinstance(e, ModelDelta))
    assert deltas.startswith("I will pass *** on.")
    assert "".join(e.text for e in streamed if isinstance(e, ToolOutput)) == "***"
    places = {
        "logs": logs.text,
        "spans": span_text(exporter),
        "events": repr(events) + repr(streamed),
        "results": json.dumps([finished.to_dict(), plain.to_dict()]),
    }
    for path in tmp_path.rglob("*"):
        if path.is_file():
            places[path.name] = path.read_bytes().decode("latin-1")
    assert "response body:" in places["logs"]
    leaks = [where for where, content in places.items() if SECRET in content or KEY in content]
    assert leaks == []
