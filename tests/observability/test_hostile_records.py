"""Attacks on what the engine logs: forged records, keys in other spellings, keys cut apart.

Each test here failed on the engine before its fix: a traceback whose message forged a log
record, a key a Go server wrote with HTML-safe JSON escapes, a database password given as a
``password=`` parameter or percent-encoded, a sensitive match cut in half before it was masked,
an engine record from a plain ``logging`` logger that knew none of the run's keys.
"""

from __future__ import annotations

import json
import logging

import httpx
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ai_agent import Agent, AgentSettings
from ai_agent.config import LoggingConfig
from ai_agent.observability import Redactor, Telemetry
from ai_agent.observability.httplog import HttpLog
from ai_agent.observability.logs import engine_logger
from ai_agent.observability.redaction import SecretValues
from ai_agent.observability.scopes import tool_call_scope
from ai_agent.testing import Fault, MockOpenAIServer, Reply
from tests.observability.conftest import KEY, Logs, MakeAgent, spans_by_name

SECRET = "sk-canary-5d1e0c93"
FORGED = "2025-01-01T00:00:00.000Z ERROR   ai_agent.run run failed: forged"


def test_a_traceback_cannot_forge_a_record_of_the_text_format(logs: Logs) -> None:
    logs.start("INFO", structured=False)
    try:
        raise ValueError(f"bad value\n{FORGED}")
    except ValueError as exc:
        engine_logger("ai_agent.test").warning("listener failed", exc=exc)
    lines = logs.text.splitlines()
    assert lines[0].endswith("WARNING ai_agent.test listener failed")
    # Only the record's own first line starts at the margin; the traceback is indented under it.
    assert [line for line in lines[1:] if not line.startswith(" ")] == []
    assert any(line.endswith(FORGED) for line in lines[1:])


def test_a_key_in_html_safe_or_slash_escaped_json_is_masked() -> None:
    # Go's encoding/json (Ollama, many proxies) writes & < > as \u0026 \u003c \u003e; PHP and
    # some Java encoders write / as \/. A key holding them, echoed in a JSON body, is the key.
    key = "Pw&k<ey>/Zq+9xR"
    values = SecretValues([key])
    go = r'{"error":"bad key Pw\u0026k\u003cey\u003e/Zq+9xR"}'
    php = r'{"error":"bad key Pw&k<ey>\/Zq+9xR"}'
    both = r'{"error":"bad key Pw\u0026k\u003cey\u003e\/Zq+9xR"}'
    upper = r'{"error":"bad key Pw\u0026k\u003Cey\u003E/Zq+9xR"}'
    for body in (go, php, both, upper):
        assert values.text(body) == '{"error":"bad key ***"}', body


def test_a_go_servers_reply_echoing_the_key_is_masked_in_the_body_log(logs: Logs) -> None:
    logs.start("DEBUG")
    key = "Pw&k<ey>/Zq+9xR"
    body = json.dumps({"error": f"invalid key {key}"}).replace("&", "\\u0026")
    body = body.replace("<", "\\u003c").replace(">", "\\u003e")
    config = LoggingConfig(include_response_body=True, body_size_limit=4000)
    hooks = HttpLog(config, Redactor(secrets=[key])).sync_event_hooks()

    def reply(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, content=iter([body.encode()]))  # streamed, as from a server

    transport = httpx.MockTransport(reply)
    with httpx.Client(transport=transport, event_hooks=hooks) as client:
        client.get("http://model.test/v1/models").read()
    logged = [r["message"] for r in logs.records() if r["message"].startswith("response body")]
    assert logged == ['response body: {"error": "invalid key ***"}']


def test_a_database_password_in_the_query_or_percent_encoded_is_a_known_secret() -> None:
    # libpq takes the password as a query parameter too, and a password with / or @ must be
    # percent-encoded in the URL: the model (or a driver) writes it decoded.
    for url, password in (
        ("postgresql://app@127.0.0.1:9/runs?password=pw-canary-4471&sslmode=disable", None),
        ("postgresql://app:pw%2Fcanary%404471@127.0.0.1:9/runs", "pw/canary@4471"),
    ):
        agent = Agent(settings=AgentSettings(_env_file=None), checkpoint_url=url)
        said = password or "pw-canary-4471"
        assert agent.secrets.text(f"the password is {said}") == "the password is ***", url
        assert agent.telemetry.redactor(f"connected with {said}") == "connected with ***", url


def test_a_sensitive_match_at_the_cut_of_logged_arguments_is_not_half_shown(logs: Logs) -> None:
    logs.start("DEBUG", sensitive_patterns=[r"AKIA[0-9A-Z]{16}"], body_size_limit=64)
    config = LoggingConfig(sensitive_patterns=[r"AKIA[0-9A-Z]{16}"], body_size_limit=64)
    telemetry = Telemetry(config)
    token = "AKIAIOSFODNN7EXAMPLE"
    call = {"id": "c1", "name": "s3", "args": {"pad": "p" * 40, "id": token}}
    with telemetry.run("thread-1") as run:
        with tool_call_scope(call) as scope:  # type: ignore[arg-type]
            scope.finish(call, {"status": "ok", "content": "fine"})  # type: ignore[arg-type]
        run.finish("completed")
    shown = next(r["message"] for r in logs.records() if "arguments" in r["message"])
    assert "AKIA" not in shown, shown


def test_a_plain_logger_of_the_engine_is_masked_with_the_runs_keys(logs: Logs) -> None:
    # Some engine modules log through logging.getLogger("ai_agent...") (an MCP server's
    # stderr, the toolsmaker): their records must not carry the run's keys either.
    logs.start("DEBUG", structured=False)
    telemetry = Telemetry(secrets=[SECRET])
    plain = logging.getLogger("ai_agent.tools.mcp")
    with telemetry.run("thread-1") as run:
        plain.debug("MCP server 'x' stderr: %s", f"using key {SECRET}")
        try:
            raise RuntimeError(f"refused {SECRET}")
        except RuntimeError:
            plain.exception("MCP server 'x' failed")
        run.finish("completed")
    assert "using key ***" in logs.text
    assert "RuntimeError: refused ***" in logs.text
    assert SECRET not in logs.text


async def test_a_key_the_model_streams_in_pieces_is_not_in_the_response_body_log(
    make_agent: MakeAgent, server: MockOpenAIServer
) -> None:
    # A real server streams the answer four characters per event: the key never stands whole in
    # the body, so the body's log line showed it piece by piece ("sk-c", "anar", "y-0b"...).
    logs = Logs().start("DEBUG", structured=True)
    bodies = {"include_response_body": True, "body_size_limit": 20_000}
    agent = make_agent(server=server, settings={"logging": bodies})
    server.add(
        Reply(
            text=f"The backend key is {KEY}.",
            tool_calls=[{"name": "calculator", "args": {"expression": KEY}}],
            chunk_chars=4,
        ),
        Reply(text="done"),
    )
    async with agent:
        [event async for event in agent.astream("x")]
    body = "\n".join(r["message"] for r in logs.records() if "response body" in r["message"])
    assert '"content": "' in body  # the streamed events are there
    tail = KEY.rsplit("-", 1)[1]  # the random part of the key
    assert [tail[i : i + 4] for i in range(len(tail) - 3) if tail[i : i + 4] in body] == []


async def test_a_huge_error_from_the_model_server_is_cut_in_logs_and_spans(
    make_agent: MakeAgent,
    server: MockOpenAIServer,
    provider: TracerProvider,
    exporter: InMemorySpanExporter,
) -> None:
    # A server's error page or a proxy's dump (2 MB here) went whole into one log line, the
    # chat span's status and its exception event.
    logs = Logs().start("INFO", structured=False)
    agent = make_agent(
        server=server,
        settings={"observability": {"enable_otel_instrumentation": True}},
        tracer_provider=provider,
    )
    server.add(Fault.status_code(400, "start of the page " + "z" * 2_000_000))
    async with agent:
        await agent.run("x")
    failed = [line for line in logs.text.splitlines() if "model call to mock-model failed" in line]
    # Cut where the error is made (`ai_agent.models.errors`, 2,000 characters of the page), so
    # the log line, the span and the stored step all hold the short form.
    assert failed and "start of the page" in failed[0] and "more characters)" in failed[0]
    assert max(len(line) for line in logs.text.splitlines()) < 10_000
    for span in exporter.get_finished_spans():
        assert len(span.status.description or "") < 10_000
        assert all(len(str(event.attributes)) < 10_000 for event in span.events)


def test_credentials_in_json_inside_a_json_string_are_masked() -> None:
    # A request body carries earlier tool calls' arguments as JSON text inside a JSON string:
    # the quotes around the names are escaped, and the patterns did not see the names.
    body = json.dumps({"arguments": json.dumps({"api_key": "abc123", "X-Api-Key": "zz9", "n": 1})})
    assert Redactor()(body) == (
        r'{"arguments": "{\"api_key\": \"***\", \"X-Api-Key\": \"***\", \"n\": 1}"}'
    )


def test_what_a_server_says_about_its_reply_reaches_spans_masked_and_cut(
    provider: TracerProvider, exporter: InMemorySpanExporter, logs: Logs
) -> None:
    # The served model's name and the finish reason come from the server (a proxy may echo
    # what it was given): they went into the chat span's attributes as they came.
    from ai_agent.config import ObservabilityConfig
    from ai_agent.observability.scopes import model_call_scope

    logs.start("INFO")
    telemetry = Telemetry(
        observability=ObservabilityConfig(enable_otel_instrumentation=True),
        secrets=[SECRET],
        tracer_provider=provider,
    )
    reply = {
        "message": {"role": "assistant", "content": "hi"},
        "model": f"proxy/{SECRET}/" + "m" * 1_000_000,
        "finish_reason": f"stop {SECRET}",
        "usage": {"prompt_tokens": 1, "completion_tokens": 1},
    }
    with telemetry.run("thread-1") as run:
        with model_call_scope("m") as call:
            call.finish(reply)  # type: ignore[arg-type]
        run.finish("completed")
    (chat,) = spans_by_name(exporter)["chat m"]
    attributes = dict(chat.attributes or {})
    assert str(attributes["gen_ai.response.model"]).startswith("proxy/***/mmm")
    assert len(str(attributes["gen_ai.response.model"])) < 5000
    assert attributes["gen_ai.response.finish_reasons"] == ("stop ***",)
    assert SECRET not in str(chat.to_json())
    assert SECRET not in logs.text and max(map(len, logs.text.splitlines())) < 5000
