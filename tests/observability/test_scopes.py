"""Scopes on their own: outside a run they do nothing; inside, every ending is accounted for."""

from __future__ import annotations

import asyncio

import pytest

from ai_agent.observability import Telemetry, current_ids
from ai_agent.observability.scopes import (
    model_call_scope,
    note_gate_plan,
    request_headers,
    set_iteration,
    stage_scope,
    tool_call_scope,
)
from ai_agent.state import ToolCall
from tests.observability.conftest import Logs

CALL = ToolCall(id="c1", name="grep", args={"pattern": "x"})


def test_outside_a_run_every_scope_is_a_no_op() -> None:
    with stage_scope("draft", 1) as stage:
        stage.pause({"severity": 0.9})
        stage.finish(2)
        set_iteration(3)
        note_gate_plan({}, {}, "resume")
        with model_call_scope("m") as model:
            assert (model.request_id, model.headers, request_headers()) == ("", {}, {})
        with tool_call_scope(CALL) as tool:
            tool.finish(CALL, {"status": "ok"})
            assert tool.tool_call_id == "" and tool.telemetry == {}
    assert stage.paused and current_ids() == {}


def test_a_run_that_raises_is_a_failed_run_with_its_traceback(logs: Logs) -> None:
    logs.start("INFO")
    telemetry = Telemetry()
    with pytest.raises(ValueError, match="bug"), telemetry.run("t") as run:
        raise ValueError("bug")
    assert (run.status, run.error, run.thread_id) == ("failed", "ValueError", "t")
    line = logs.where(event="run_finished")[0]
    assert line["level"] == "ERROR" and "ValueError: bug" in line["exc"]
    assert telemetry.metrics is not None
    assert telemetry.metrics.stats("ai_agent.run.duration", status="failed").count == 1


def test_a_cancelled_run_is_a_warning_and_can_be_resumed(logs: Logs) -> None:
    logs.start("INFO")
    with pytest.raises(asyncio.CancelledError), Telemetry().run("t") as run:
        raise asyncio.CancelledError
    assert run.status == "cancelled"
    (line,) = logs.where(level="WARNING")
    assert "interrupted" in line["message"] and "can be resumed" in line["message"]


def test_a_run_that_never_says_how_it_ended_is_failed(logs: Logs) -> None:
    logs.start("INFO")
    with Telemetry().run("t") as run:
        pass
    assert (run.status, run.error) == ("failed", "the run ended without a result")


def test_stage_model_and_tool_failures_are_errors(logs: Logs) -> None:
    logs.start("DEBUG")
    telemetry = Telemetry()
    with telemetry.run("t") as run:
        with pytest.raises(RuntimeError), stage_scope("act", 1), tool_call_scope(CALL):
            raise RuntimeError("tool bug")
        with pytest.raises(OSError, match="socket"), stage_scope("draft", 1), model_call_scope("m"):
            raise OSError("socket closed")
        with pytest.raises(asyncio.CancelledError), model_call_scope("m"):
            raise asyncio.CancelledError
        with tool_call_scope(CALL):
            pass  # never finished: its status is unknown
        run.finish("failed", error="tool bug")
    errors = [r["message"] for r in logs.where(level="ERROR")]
    assert errors[0] == "tool grep raised RuntimeError: tool bug"
    assert errors[1].startswith("model call to m failed after ")
    assert errors[1].endswith(": socket closed")
    assert len(errors) == 3  # the cancelled call is not an error; the failed run is
    metrics = telemetry.metrics
    assert metrics is not None
    assert metrics.stats("ai_agent.tool.duration", status="error").count == 1
    assert metrics.stats("ai_agent.tool.duration", status="unknown").count == 1
    assert metrics.stats("ai_agent.stage.duration", status="error").count == 2
    assert metrics.stats("ai_agent.model.duration", status="error").count == 2
    assert logs.where(event="stage_finished")[0]["message"].startswith("stage act failed in ")


def test_ids_nest_and_unwind(logs: Logs) -> None:
    telemetry = Telemetry()
    with telemetry.run("t") as run:
        with stage_scope("draft", 0, step=4):
            set_iteration(1)
            set_iteration(1)
            with model_call_scope("m") as call:
                inner = current_ids()
                headers = request_headers()
            assert "request_id" not in current_ids() and current_ids()["iteration"] == 1
        run.finish("completed")
    assert inner["request_id"] == call.request_id and inner["step"] == 4
    assert headers["X-Request-ID"] == call.request_id
    assert headers["traceparent"].split("-")[1] == run.trace_id
    assert headers["tracestate"] == f"aiagent={run.run_id}"
