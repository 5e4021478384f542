"""Engine logging: nothing configured by default, redaction at the source, both formats."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from ai_agent.config import LoggingConfig
from ai_agent.observability import (
    CorrelationFilter,
    JsonFormatter,
    Redactor,
    Telemetry,
    TextFormatter,
    configure_logging,
    current_ids,
    logging_configured,
    unconfigure_logging,
)
from ai_agent.observability.logs import engine_logger
from tests.observability.conftest import Logs

SECRET = "sk-canary-5d1e0c93"


def test_importing_and_building_an_agent_configures_no_logging() -> None:
    code = (
        "import logging\n"
        "from ai_agent import Agent, AgentSettings\n"
        "Agent(settings=AgentSettings(_env_file=None))\n"
        "root, own = logging.getLogger(), logging.getLogger('ai_agent')\n"
        "print(len(root.handlers), root.level, len(own.handlers), own.level)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["0", str(logging.WARNING), "0", str(logging.NOTSET)]


def test_text_lines_carry_level_logger_ids_and_the_redacted_message(logs: Logs) -> None:
    logs.start("INFO", structured=False)
    telemetry = Telemetry(secrets=[SECRET])
    log = engine_logger("ai_agent.test")
    with telemetry.run("thread-9") as run:
        log.info("calling %s?api_key=%s with %s", "/v1", "abc", SECRET)
        run.finish("completed", iterations=0)
    log.debug("not shown at INFO")
    line = next(x for x in logs.text.splitlines() if "calling" in x)
    assert f"INFO    ai_agent.test [thread=thread-9 run={run.run_id}] " in line
    assert line.endswith("calling /v1?api_key=*** with ***")
    assert "not shown" not in logs.text
    assert SECRET not in logs.text


def test_json_lines_carry_ids_fields_and_a_redacted_traceback(logs: Logs) -> None:
    logs.start("DEBUG", structured=True)
    log = engine_logger("ai_agent.test")
    telemetry = Telemetry(secrets=[SECRET])
    with telemetry.run("thread-1") as run:
        try:
            raise ValueError(f"bad key {SECRET}")
        except ValueError as exc:
            log.warning("failed", fields={"url": "/x?token=abc", "n": 2}, exc=exc)
        run.finish("completed")
    record = logs.where(message="failed")[0]
    assert record["level"] == "WARNING" and record["logger"] == "ai_agent.test"
    assert record["thread_id"] == "thread-1" and record["run_id"] == run.run_id
    assert len(record["trace_id"]) == 32 and len(record["span_id"]) == 16
    assert record["url"] == "/x?token=***" and record["n"] == 2
    assert "ValueError: bad key ***" in record["exc"]
    assert SECRET not in logs.text


def test_a_text_record_is_one_line_with_nothing_hidden_whatever_it_quotes(logs: Logs) -> None:
    logs.start("INFO", structured=False)
    log = engine_logger("ai_agent.test")
    forged = "2025-01-01T00:00:00.000Z ERROR   ai_agent.run run failed"
    log.info("tool said: %s", f"ok\x1b[2K\r\u202edone\n{forged}")
    try:
        raise ValueError("bad\x1b]0;title\x07 value")
    except ValueError as exc:
        log.warning("failed: %s", "x\x9by", exc=exc)
    lines = logs.text.splitlines()
    assert lines[0].endswith(r"tool said: ok\x1b[2K\r\u202edone\n" + forged)
    assert lines[1].endswith(r"failed: x\x9by")
    assert r"ValueError: bad\x1b]0;title\x07 value" in lines[-1]
    assert not [c for c in logs.text if c != "\n" and (c < " " or "\x7f" <= c <= "\x9f")]


def test_json_records_write_bidi_and_c1_as_escapes(logs: Logs) -> None:
    logs.start("INFO", structured=True)
    engine_logger("ai_agent.test").info("said %s", "a\u202eb\x9bc\x7f", fields={"k": "\u2066"})
    assert not [c for c in logs.text if c in "\u202e\x9b\x7f\u2066"]
    record = logs.records()[0]
    assert (record["message"], record["k"]) == ("said a\u202eb\x9bc\x7f", "\u2066")


def test_records_name_the_engine_code_that_logged(logs: Logs) -> None:
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    handler = Keep()
    logger = logging.getLogger("ai_agent.test")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        engine_logger("ai_agent.test").info("here")
    finally:
        logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
    assert Path(seen[0].pathname).name == "test_logs.py"
    assert seen[0].funcName == "test_records_name_the_engine_code_that_logged"


def test_nothing_is_formatted_below_the_level() -> None:
    class Loud:
        def __str__(self) -> str:
            raise AssertionError("formatted although the level is off")

    engine_logger("ai_agent.quiet").debug("value %s", Loud())


def test_a_message_that_does_not_format_is_logged_as_is(logs: Logs) -> None:
    logs.start("INFO")
    engine_logger("ai_agent.test").info("%d items", "many")
    assert logs.records()[0]["message"] == "%d items ('many',)"


def test_configure_logging_replaces_its_handler_and_unconfigure_removes_it() -> None:
    logger = logging.getLogger("ai_agent")
    first = configure_logging(stream=io.StringIO())
    second = configure_logging(LoggingConfig(level="ERROR"), stream=io.StringIO())
    try:
        assert first not in logger.handlers and second in logger.handlers
        assert logger.level == logging.ERROR
    finally:
        unconfigure_logging()
    assert second not in logger.handlers and logger.level == logging.NOTSET


def test_logging_configured_restores_the_logger() -> None:
    logger = logging.getLogger("ai_agent")
    mine = logging.NullHandler()
    logger.addHandler(mine)
    logger.setLevel(logging.WARNING)
    try:
        with logging_configured(level="debug", stream=io.StringIO()) as handler:
            assert logger.level == logging.DEBUG and handler in logger.handlers
        assert logger.handlers == [mine] and logger.level == logging.WARNING
    finally:
        logger.removeHandler(mine)
        logger.setLevel(logging.NOTSET)


def test_without_a_stream_the_handler_follows_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    with logging_configured(level="INFO"):
        engine_logger("ai_agent.test").info("to stderr")
    assert "to stderr" in capsys.readouterr().err


def test_correlation_ids_can_be_turned_off(logs: Logs) -> None:
    logs.start("INFO", include_correlation_id=False)
    with Telemetry().run("thread-2") as run:
        engine_logger("ai_agent.test").info("plain")
        run.finish("completed")
    assert "thread_id" not in logs.where(message="plain")[0]


def test_third_party_records_routed_to_the_formatters_are_redacted() -> None:
    record = logging.LogRecord("httpx", logging.INFO, "f.py", 1, "GET %s", ("/x?key=k",), None)
    CorrelationFilter().filter(record)
    text = TextFormatter(redactor=Redactor())
    assert text.format(record).endswith("httpx GET /x?key=***")
    try:
        raise RuntimeError("Bearer abc")
    except RuntimeError:
        failing = logging.LogRecord("lib", logging.ERROR, "f.py", 1, "boom", (), sys.exc_info())
    data = json.loads(JsonFormatter().format(failing))
    assert "Bearer ***" in data["exc"] and data["message"] == "boom"


def test_current_ids_outside_a_run_are_empty_and_inside_name_the_run() -> None:
    assert current_ids() == {}
    with Telemetry().run("t") as run:
        assert current_ids()["run_id"] == run.run_id
        run.finish("completed")
    assert current_ids() == {}


def test_a_database_urls_password_is_a_known_secret() -> None:
    from ai_agent import Agent, AgentSettings

    url = "postgresql://app:pw-canary-4471@127.0.0.1:9/runs?sslmode=disable"
    agent = Agent(settings=AgentSettings(_env_file=None), checkpoint_url=url)
    assert agent.telemetry.redactor("connected with pw-canary-4471") == "connected with ***"
