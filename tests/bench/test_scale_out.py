"""The scale-out bench's model: it ships the order a task names, then says it is done."""

from __future__ import annotations

from ai_agent.testing import RecordedRequest
from bench.scale_out import MODEL_DELAY, answer


def _request(*messages: dict[str, str]) -> RecordedRequest:
    body = {"model": "bench-model", "messages": list(messages)}
    return RecordedRequest("POST", "/v1/chat/completions", {}, body)


def test_the_model_asks_to_ship_the_order_of_the_task() -> None:
    reply = answer(_request({"role": "user", "content": "ship order 1000017"}))
    assert reply.tool_calls == [{"name": "ship", "args": {"order": "1000017"}}]
    assert reply.delay == MODEL_DELAY


def test_once_the_tool_answered_the_model_is_done() -> None:
    reply = answer(
        _request(
            {"role": "user", "content": "ship order 3"},
            {"role": "tool", "content": "order 3 shipped"},
        )
    )
    assert reply.text == "done" and not reply.tool_calls
