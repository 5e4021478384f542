"""A model-written summary of a long tool output, by the real local model (llama.cpp).

At temperature 0 and a fixed seed the 0.5B model writes some summary of a test log. Only the
protocol is asserted: the request carries the instructions, the task and the log's head and
tail; the summary comes back under its header within the limit, or, where the model's answer
cannot be used, the extractive summary says why; the call's usage is the server's count.
"""

from __future__ import annotations

from typing import Any

import pytest

from ai_agent.context import ModelReply
from ai_agent.local import LocalModelServer
from ai_agent.models import ChatModelCaller, make_chat_model
from ai_agent.state import Message, ToolResult
from ai_agent.tools.extractive import HEADER_START
from ai_agent.tools.model_summary import MODEL_HEADER_START, OutputSummarizer
from ai_agent.tools.results import bound_output, is_bounded
from tests.graph.test_output_summary import LOG, WHERE

from .test_local_streaming_tokens import backend

pytestmark = pytest.mark.local_model


async def test_the_real_model_summarizes_a_long_log(local_server: LocalModelServer) -> None:
    caller = ChatModelCaller(make_chat_model(backend(local_server, max_tokens=96)), max_retries=0)
    usage: list[dict[str, Any]] = []
    requests: list[list[Message]] = []

    def on_reply(reply: ModelReply, iteration: int, request: list[Message]) -> dict[str, Any]:
        requests.append(request)
        usage.append(dict(reply["usage"]))
        return {"iteration": iteration, "at": 0.0, **reply["usage"]}

    # The server's window is 2,048 tokens: about 3,000 characters of the log are sent.
    summarizer = OutputSummarizer(caller, timeout=300, input_chars=3000, on_reply=on_reply)
    result = ToolResult(status="ok", content=LOG)
    shown, bounded = await bound_output(
        None, WHERE, LOG, result, 1500, "model", summarizer=summarizer, task="run the tests"
    )
    again, _ = await bound_output(
        None, WHERE, LOG, result, 1500, "model", summarizer=summarizer, task="run the tests"
    )
    meta = bounded["meta"]
    assert len(shown) <= 1500 and is_bounded(shown, bounded, 1500)
    assert again == shown  # temperature 0, fixed seed: the same summary twice
    if meta["summary"] == "model":
        assert shown.startswith(f"{MODEL_HEADER_START}{len(LOG):,}-character output (402 lines)")
        assert shown.split("\n", 1)[1].strip()
    else:  # the model's answer could not be used: extractive, saying why
        assert shown.startswith(HEADER_START) and meta["summary_failure"] in shown
    sent = requests[0][1]["content"]
    assert sent.startswith("Task: run the tests\nOutput of the tool dump:\ncollected 400 items")
    assert sent.endswith("== 399 passed, 1 failed in 12.3s ==")
    assert usage[0]["prompt_tokens"] > 500 and 0 < usage[0]["completion_tokens"] <= 96
    assert meta["summary_usage"]["prompt_tokens"] == usage[0]["prompt_tokens"]
    print(meta["summary"], repr(shown.split("\n", 1)[1][:300]))
