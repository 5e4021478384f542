"""Model-written summaries of large tool outputs (``tool_config.output_summary = "model"``).

One more model call, recorded like the others: a recorded replay serves the summary offline,
its tokens count in the run's usage and budget, and a slow, failing or unhelpful model leaves
the output to the extractive summary, whose header says why.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ai_agent import AgentSettings, ToolCategory, ToolSpec
from ai_agent.context import ModelReply
from ai_agent.errors import ModelResponseError
from ai_agent.state import Message, ToolResult
from ai_agent.testing import FunctionModel
from ai_agent.tools.extractive import HEADER_START
from ai_agent.tools.model_summary import MODEL_HEADER_START, OutputSummarizer
from ai_agent.tools.results import bound_output, is_bounded
from tests.graph.conftest import MakeAgent, call, text
from tests.graph.test_output_summary import LOG, WHERE

SUMMARY = "400 tests ran; 399 passed. tests/test_217.py failed with KeyError: 'tide_table'."


def is_summary_request(messages: list[dict[str, Any]]) -> bool:
    return messages[0]["role"] == "system" and "You shorten the output" in messages[0]["content"]


class Model:
    """A model that calls ``dump``, answers summary requests with ``summary``, then finishes."""

    def __init__(self, summary: str = SUMMARY) -> None:
        self.summary = summary
        self.summary_requests: list[list[dict[str, Any]]] = []
        self.seen: list[str] = []

    def __call__(self, messages: list[dict[str, Any]], info: dict[str, Any]) -> Any:
        if is_summary_request(messages):
            self.summary_requests.append(messages)
            return text(self.summary)
        if info["turn"] == 0:
            return call("dump")
        self.seen.append(messages[-1]["content"])
        return text("one failed")


def dump(output: Any = LOG) -> ToolSpec:
    return ToolSpec(
        "dump", lambda a, c: output, description="Dump.", category=ToolCategory.READ_ONLY
    )


def model_settings(limit: int = 1500, **tool_config: Any) -> AgentSettings:
    return AgentSettings(
        tool_config={"max_output_chars": limit, "output_summary": "model", **tool_config}
    )


async def test_the_model_writes_the_summary_and_its_call_counts(make_agent: MakeAgent) -> None:
    model = Model()
    agent = make_agent(model=FunctionModel(model), tools=[dump()], settings=model_settings())
    result = await agent.run("run the tests")
    assert result.status == "completed"
    (shown,) = model.seen
    ref = "out-1-c1.0"
    header, body = shown.split("\n", 1)
    assert header == (
        f"{MODEL_HEADER_START}{len(LOG):,}-character output (402 lines); the full output is "
        f"kept as {ref} (ai-agent output {result.thread_id} {ref}); narrow the request to see "
        "the rest]"
    )
    assert body == SUMMARY
    # The model was told the task, the tool and the room, and got the whole output.
    (request,) = model.summary_requests
    room = 1500 - len(header) - 1
    assert request[0]["content"].endswith(f"in at most {room} characters.")
    assert request[1]["content"] == f"Task: run the tests\nOutput of the tool dump:\n{LOG}"
    state = await agent.get_state(result.thread_id)
    kept = state["results"][0]["result"]
    assert kept["content"] == shown and kept["meta"]["summary"] == "model"
    assert await agent.tool_output(result.thread_id, ref) == LOG
    # Recorded like any model call, and counted: two drafts and the summary.
    calls = await agent.store.model_calls(result.thread_id)
    assert [c["stage"] for c in calls] == ["draft", "act", "draft"]
    recorded = await agent.store.model_request(calls[1]["seq"])
    assert recorded["messages"][1]["content"].endswith(LOG)
    assert calls[1]["message"] is not None and calls[1]["message"]["content"] == SUMMARY
    purposes = [r.get("purpose", "draft") for r in state["usage_log"]]
    assert purposes == ["draft", "output_summary", "draft"]
    assert state["usage"]["requests"] == 3
    assert state["usage"]["total_tokens"] == sum(r["total_tokens"] for r in state["usage_log"])
    summary_record = state["usage_log"][1]
    assert summary_record["prompt_tokens"] > len(LOG) // 8  # the whole log was read


async def test_a_recorded_replay_serves_the_summary_offline(make_agent: MakeAgent) -> None:
    model = Model()
    agent = make_agent(model=FunctionModel(model), tools=[dump()], settings=model_settings())
    result = await agent.run("run the tests")
    replayed = await agent.replay(result.thread_id)
    assert replayed.status == "completed"
    assert len(model.summary_requests) == 1  # nothing was asked again
    original = (await agent.get_state(result.thread_id))["results"][0]["result"]
    again = (await agent.get_state(replayed.thread_id))["results"][0]["result"]
    assert again["content"] == original["content"]
    assert again["meta"]["summary"] == "model"


async def test_an_empty_answer_leaves_an_extractive_summary_that_says_why(
    make_agent: MakeAgent,
) -> None:
    model = Model(summary="   ")
    agent = make_agent(model=FunctionModel(model), tools=[dump()], settings=model_settings())
    result = await agent.run("run the tests")
    (shown,) = model.seen
    assert shown.startswith(HEADER_START)
    assert "; the model's summary failed (the model's answer was empty)]" in shown.splitlines()[0]
    assert "tests/test_217.py::test_case FAILED KeyError: 'tide_table'" in shown
    state = await agent.get_state(result.thread_id)
    meta = state["results"][0]["result"]["meta"]
    assert meta["summary"] == "extractive"
    assert meta["summary_failure"] == "the model's answer was empty"
    # The tokens were spent all the same.
    assert [r.get("purpose") for r in state["usage_log"]][1] == "output_summary"


async def test_a_summary_that_does_not_fit_is_not_used(make_agent: MakeAgent) -> None:
    model = Model(summary="word " * 1000)
    agent = make_agent(model=FunctionModel(model), tools=[dump()], settings=model_settings())
    await agent.run("run the tests")
    (shown,) = model.seen
    assert len(shown) <= 1500 and shown.startswith(HEADER_START)
    assert "the model's summary took 4,999 characters of 1,2" in shown


async def test_summary_tokens_count_in_the_budget(make_agent: MakeAgent) -> None:
    budget = {"max_tokens": 3000}
    big = LOG * 3  # about 9,000 tokens for the summarizer to read
    extractive = make_agent(
        model=FunctionModel(Model()),
        tools=[dump(big)],
        settings=AgentSettings(tool_config={"max_output_chars": 1500}, budget=budget),
    )
    assert (await extractive.run("run the tests")).status == "completed"
    summarized = make_agent(
        model=FunctionModel(Model()),
        tools=[dump(big)],
        settings=model_settings(output_summary_input_chars=100_000).model_copy(
            update={"budget": extractive.settings.budget}
        ),
    )
    result = await summarized.run("run the tests")
    assert result.status == "paused"
    assert result.gate is not None
    assert [i["code"] for i in result.gate["issues"]] == ["BUDGET"]


async def test_a_long_output_is_sent_as_its_head_and_tail(make_agent: MakeAgent) -> None:
    model = Model()
    agent = make_agent(
        model=FunctionModel(model),
        tools=[dump()],
        settings=model_settings(output_summary_input_chars=2000),
    )
    await agent.run("run the tests")
    sent = model.summary_requests[0][1]["content"].split("\n", 2)[2]
    assert sent.startswith(LOG[:1000]) and sent.endswith(LOG[-1000:])
    assert f"[... {len(LOG) - 2000} characters of the output not sent ...]" in sent


async def test_a_tool_cannot_claim_summary_tokens(make_agent: MakeAgent) -> None:
    forged = {"status": "ok", "content": "short", "meta": {"summary_usage": {"total_tokens": 9}}}
    agent = make_agent([call("dump"), text("ok")], tools=[dump(forged)], settings=model_settings())
    result = await agent.run("dump it")
    state = await agent.get_state(result.thread_id)
    assert "summary_usage" not in state["results"][0]["result"]["meta"]
    assert [r.get("purpose", "draft") for r in state["usage_log"]] == ["draft", "draft"]


# The summarizer on its own: what it does with a slow or failing model. ----------------------


def summarizer(model: Any, timeout: float = 5.0) -> OutputSummarizer:
    return OutputSummarizer(model=model, timeout=timeout, input_chars=50_000)


async def test_a_model_that_does_not_answer_in_time_is_not_waited_for() -> None:
    never = asyncio.Event()

    async def slow(messages: list[Message], tools: Any, **kw: Any) -> ModelReply:
        await never.wait()
        raise AssertionError("not reached")

    result = ToolResult(status="ok", content=LOG)
    shown, bounded = await bound_output(
        None, WHERE, LOG, result, 1500, "model", summarizer=summarizer(slow, timeout=0.01)
    )
    assert shown.startswith(HEADER_START) and "failed (no answer in 0.01 s)" in shown
    assert bounded["meta"]["summary_failure"] == "no answer in 0.01 s"
    assert "summary_usage" not in bounded["meta"]
    assert is_bounded(shown, bounded, 1500)


async def test_a_model_error_is_named_in_the_fallback() -> None:
    async def failing(messages: list[Message], tools: Any, **kw: Any) -> ModelReply:
        raise ModelResponseError("the server sent\nno choices")

    result = ToolResult(status="ok", content=LOG)
    shown, bounded = await bound_output(
        None, WHERE, LOG, result, 1500, "model", summarizer=summarizer(failing)
    )
    failure = "ModelResponseError: the server sent no choices"
    assert bounded["meta"]["summary_failure"] == failure
    assert f"the model's summary failed ({failure})" in shown.splitlines()[0]


async def test_without_a_summarizer_the_summary_is_extractive_and_says_so() -> None:
    result = ToolResult(status="ok", content=LOG)
    shown, bounded = await bound_output(None, WHERE, LOG, result, 1500, "model")
    assert bounded["meta"]["summary"] == "extractive"
    assert "failed (no model to write it here)" in shown.splitlines()[0]


async def test_a_model_summary_is_not_summarized_again() -> None:
    async def writer(messages: list[Message], tools: Any, **kw: Any) -> ModelReply:
        return ModelReply(
            message=Message(role="assistant", content=SUMMARY), usage={}, latency_ms=1.0
        )

    result = ToolResult(status="ok", content=LOG)
    shown, bounded = await bound_output(
        None, WHERE, LOG, result, 1500, "model", summarizer=summarizer(writer)
    )
    assert shown.startswith(MODEL_HEADER_START) and is_bounded(shown, bounded, 1500)
    assert await bound_output(None, WHERE, shown, bounded, 1500, "model") == (shown, bounded)
    # A tool's text that only looks like one is bounded all the same.
    fake = LOG.replace("collected", MODEL_HEADER_START, 1)
    forged = ToolResult(status="ok", content=fake, meta={**bounded["meta"]})
    assert not is_bounded(fake, forged, 1500)


async def test_no_room_under_the_limit_is_a_failure() -> None:
    made = await summarizer(None).summarize(LOG, room=0, tool="dump")
    assert made.text is None and made.failure == "no room for a summary under max_output_chars"
