"""OpenTelemetry spans, read back from the SDK's in-memory exporter."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from ai_agent import ToolCategory, ToolSpec, UserPlan
from ai_agent.errors import ConfigError
from ai_agent.observability import Telemetry, parse_traceparent
from ai_agent.observability.ids import thread_span_context
from ai_agent.testing import MockOpenAIServer, Reply
from tests.observability.conftest import KEY, Logs, MakeAgent, call, spans_by_name, text

OTEL = {"observability": {"enable_otel_instrumentation": True}}


def hexid(value: int, width: int) -> str:
    return f"{value:0{width}x}"


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent else None


async def test_spans_nest_run_stage_and_calls_with_tokens_and_cost(
    make_agent: MakeAgent,
    server: MockOpenAIServer,
    provider: TracerProvider,
    exporter: InMemorySpanExporter,
) -> None:
    server.add(
        Reply(
            tool_calls=[{"name": "calculator", "args": {"expression": "6*7"}}],
            usage={"prompt_tokens": 1000, "completion_tokens": 200},
        ),
        Reply(text="42", usage={"prompt_tokens": 1500, "completion_tokens": 10}),
    )
    settings = {
        **OTEL,
        "budget": {"rates": {"mock": {"prompt_per_1m": 2.0, "completion_per_1m": 8.0}}},
    }
    agent = make_agent(
        server=server, tools=["calculator"], settings=settings, tracer_provider=provider
    )
    async with agent:
        result = await agent.run("6 times 7")
    spans = spans_by_name(exporter)
    (run,) = spans["ai_agent.run"]
    assert run.parent is None
    assert run.attributes is not None
    assert run.attributes["ai_agent.thread_id"] == result.thread_id
    assert run.attributes["ai_agent.run.status"] == "completed"
    assert run.attributes["ai_agent.iterations"] == 2
    assert run.attributes["gen_ai.usage.input_tokens"] == 2500
    stages = [s for s in exporter.get_finished_spans() if s.name.startswith("ai_agent.stage.")]
    assert len(stages) == 11 and {parent_of(s) for s in stages} == {run.context.span_id}
    assert all(s.context.trace_id == run.context.trace_id for s in exporter.get_finished_spans())
    drafts = spans["ai_agent.stage.draft"]
    chats = spans["chat mock-model"]
    assert [parent_of(c) for c in chats] == [d.context.span_id for d in drafts]
    first = chats[0]
    assert first.kind is SpanKind.CLIENT
    assert first.attributes is not None
    assert first.attributes["gen_ai.operation.name"] == "chat"
    assert first.attributes["gen_ai.usage.input_tokens"] == 1000
    assert first.attributes["gen_ai.usage.output_tokens"] == 200
    assert first.attributes["ai_agent.cost"] == pytest.approx(0.0036)
    assert first.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    (tool,) = spans["execute_tool calculator"]
    assert parent_of(tool) == spans["ai_agent.stage.act"][0].context.span_id
    assert tool.attributes is not None
    assert tool.attributes["gen_ai.tool.name"] == "calculator"
    assert tool.attributes["ai_agent.tool.status"] == "ok"
    assert tool.attributes["ai_agent.tool.chars"] == 2
    # On the wire, traceparent names the model-call span: the server's spans join this trace.
    for request, chat in zip(server.requests, chats, strict=True):
        parsed = parse_traceparent(request.headers["traceparent"])
        assert parsed == (hexid(chat.context.trace_id, 32), hexid(chat.context.span_id, 16), True)
        assert chat.attributes is not None
        assert request.headers["x-request-id"] == chat.attributes["ai_agent.request_id"]


async def test_a_paused_and_resumed_thread_is_two_run_spans_linked_to_it(
    make_agent: MakeAgent, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    writer = ToolSpec(
        "write_note",
        lambda args, ctx: {"status": "ok", "content": "written"},
        description="Write a note.",
        category=ToolCategory.MODIFICATION,
        parameters={"type": "object", "properties": {"text": {"type": "string"}}},
    )
    agent = make_agent(
        [call("write_note", text="hi"), text("done")],
        tools=[writer],
        settings=OTEL,
        tracer_provider=provider,
    )
    async with agent:
        paused = await agent.run("write")
        await agent.resume(paused.thread_id, UserPlan(approve=["*"]))
    spans = spans_by_name(exporter)
    first, second = spans["ai_agent.run"]
    assert first.attributes is not None and second.attributes is not None
    assert first.attributes["ai_agent.run.status"] == "paused"
    assert (
        first.attributes["ai_agent.run.resumed"],
        second.attributes["ai_agent.run.resumed"],
    ) == (
        False,
        True,
    )
    assert first.context.trace_id != second.context.trace_id
    thread_trace, thread_span = thread_span_context(paused.thread_id)
    for run in (first, second):
        (link,) = run.links
        assert hexid(link.context.trace_id, 32) == thread_trace
        assert hexid(link.context.span_id, 16) == thread_span
        assert link.attributes is not None and link.attributes["ai_agent.link"] == "thread"
    pause, resume, *_ = spans["ai_agent.stage.gate"]
    assert pause.attributes is not None and resume.attributes is not None
    assert pause.attributes["ai_agent.stage.status"] == "paused"
    assert pause.attributes["ai_agent.gate.issues"] == ("APPROVAL_REQUIRED",)
    assert pause.status.status_code is StatusCode.UNSET
    assert [e.name for e in pause.events] == ["gate.paused"]
    assert resume.attributes["ai_agent.gate.plan_source"] == "resume"
    assert resume.attributes["ai_agent.gate.allow_continue"] is True
    assert parent_of(resume) == second.context.span_id


async def test_a_run_inside_an_application_span_is_its_child(
    make_agent: MakeAgent, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    agent = make_agent(settings=OTEL, tracer_provider=provider)
    tracer = provider.get_tracer("app")
    async with agent:
        with tracer.start_as_current_span("handle request") as outer:
            await agent.run("go")
    (run,) = spans_by_name(exporter)["ai_agent.run"]
    assert parent_of(run) == outer.get_span_context().span_id


async def test_failures_are_error_spans_with_redacted_messages(
    make_agent: MakeAgent, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    with MockOpenAIServer() as gone:
        url = gone.base_url
    agent = make_agent(
        model="m",
        settings={**OTEL, "model_backend": {"base_url": url, "api_key": KEY}},
        tracer_provider=provider,
    )
    async with agent:
        result = await agent.run(f"use {KEY}")
    assert result.status == "failed"
    spans = spans_by_name(exporter)
    (chat,) = spans["chat m"]
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.events[0].name == "exception"
    assert chat.events[0].attributes is not None
    assert chat.events[0].attributes["exception.type"] == "ModelUnavailableError"
    (run,) = spans["ai_agent.run"]
    assert run.status.status_code is StatusCode.ERROR
    for span in exporter.get_finished_spans():
        assert KEY not in str(span.to_json())


async def test_tools_that_raise_and_tool_errors_are_error_spans(
    make_agent: MakeAgent, provider: TracerProvider, exporter: InMemorySpanExporter, logs: Logs
) -> None:
    logs.start("INFO")

    def failing(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        return {"status": "error", "error": "no such file", "meta": {"code": "NOT_FOUND"}}

    tool = ToolSpec(
        "open_file",
        failing,
        description="Open a file.",
        category=ToolCategory.READ_ONLY,
        parameters={"type": "object", "properties": {}},
    )
    agent = make_agent(
        [call("open_file"), text("gave up")],
        tools=[tool],
        settings=OTEL,
        tracer_provider=provider,
        gate_threshold=1.0,
    )
    async with agent:
        await agent.run("open it")
    (span,) = spans_by_name(exporter)["execute_tool open_file"]
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "NOT_FOUND: no such file"
    assert logs.where(event="tool_call")[0]["status"] == "error"


async def test_spans_are_off_by_default_even_with_a_provider(
    make_agent: MakeAgent, provider: TracerProvider, exporter: InMemorySpanExporter, logs: Logs
) -> None:
    logs.start("INFO")
    agent = make_agent(tracer_provider=provider)
    async with agent:
        await agent.run("go")
    assert exporter.get_finished_spans() == ()
    assert logs.where(
        message=(
            "a tracer provider was given but observability.enable_otel_instrumentation is off: "
            "no spans are created"
        )
    )


def test_the_opentelemetry_tracer_is_not_loaded_unless_enabled() -> None:
    # (LangSmith, under LangChain, imports OpenTelemetry by itself when it is installed: what the
    # engine controls is that its own tracer, and so any span, stays out.)
    code = (
        "import sys\n"
        "from ai_agent import Agent, AgentSettings\n"
        "Agent(settings=AgentSettings(_env_file=None))\n"
        "print('ai_agent.observability.otel' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_enabling_spans_without_opentelemetry_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ai_agent.config import ObservabilityConfig

    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    with pytest.raises(ConfigError, match=r"pip install 'ai-agent\[otel\]'"):
        Telemetry(observability=ObservabilityConfig(enable_otel_instrumentation=True))


def test_the_global_provider_is_used_when_none_is_given() -> None:
    from ai_agent.config import ObservabilityConfig

    telemetry = Telemetry(observability=ObservabilityConfig(enable_otel_instrumentation=True))
    # The global provider exports nothing until an application installs one; ids still work.
    with telemetry.run("t") as run:
        run.finish("completed")
    assert len(run.trace_id) == 32
