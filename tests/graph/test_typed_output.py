"""Typed outputs: ``Agent(output_type=...)``, whole runs against scripted and function models.

Each test runs the real pipeline on a real SQLite file; the function models record every request
(its tools and its ``response_format``), so the tests assert what was asked of the model, not
only what came back.
"""

from __future__ import annotations

import dataclasses
import json
import signal
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict  # pydantic's rule on Python < 3.12

from ai_agent import Agent, UserPlan
from ai_agent.config import AgentSettings
from ai_agent.errors import OutputSchemaError, OutputValidationError
from ai_agent.events import FinalDelta
from ai_agent.testing import FunctionModel
from tests.graph.conftest import MakeAgent, call, text
from tests.graph.test_processes import finish, lines, result_of, start


class Total(BaseModel):
    amount: float
    currency: str


GOOD = '{"amount": 68.055, "currency": "EUR"}'
TOTAL = Total(amount=68.055, currency="EUR")


class Requests:
    """A function model's replies, one per request, with every request kept."""

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.seen: list[dict[str, Any]] = []

    def __call__(self, messages: list[Any], info: dict[str, Any]) -> Any:
        self.seen.append({"messages": messages, **info})
        return self.replies[len(self.seen) - 1]

    def model(self) -> FunctionModel:
        return FunctionModel(self)

    def tool_names(self, n: int) -> list[str]:
        return [t["function"]["name"] for t in self.seen[n]["tools"]]


async def test_an_answer_that_fits_is_the_typed_output(make_agent: MakeAgent) -> None:
    agent = make_agent([text(GOOD)], output_type=Total)
    async with agent:
        res = await agent.run("total?")
        state = await agent.get_state(res.thread_id)
        calls = await agent.store.model_calls(res.thread_id)
    assert res.status == "completed"
    assert res.output == TOTAL and isinstance(res.output, Total)
    assert json.loads(res.final_text or "") == {"amount": 68.055, "currency": "EUR"}
    # Kept as data, with the schema it was checked against; the last text fitted: one request.
    assert state["output"] == {"amount": 68.055, "currency": "EUR"}
    assert state["output_schema"] == {"name": "Total", "schema": Total.model_json_schema()}
    assert len(calls) == 1
    assert res.to_dict()["output"] == {"amount": 68.055, "currency": "EUR"}


async def test_tool_turns_then_the_typed_answer_through_response_format(
    make_agent: MakeAgent,
) -> None:
    requests = Requests(call("calculator", expression="19.5% of 349"), "It is 68.055 euros.", GOOD)
    agent = make_agent(model=requests.model(), tools=["calculator"], output_type=Total)
    async with agent:
        res = await agent.run("19.5% of 349 euros, as a total")
        calls = await agent.store.model_calls(res.thread_id)
        last_request = await agent.store.model_request(calls[-1]["seq"])
    assert res.status == "completed" and res.output == TOTAL
    # The drafts offer the tools and no response format; the answer's request is the reverse.
    assert [r["response_format"] for r in requests.seen[:2]] == [None, None]
    assert requests.tool_names(0) == ["calculator"] == requests.tool_names(1)
    final = requests.seen[2]
    assert final["tools"] == []
    assert final["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Total", "schema": Total.model_json_schema()},
    }
    assert final["messages"][-1]["role"] == "user"
    assert '"currency"' in final["messages"][-1]["content"]  # the schema, in words too
    # Recorded with its response format, which is part of the request hash.
    assert last_request["params"]["response_format"] == final["response_format"]
    assert [c["request_hash"] for c in calls] == list(
        dict.fromkeys(c["request_hash"] for c in calls)
    )


async def test_an_answer_that_does_not_fit_goes_back_with_its_errors(make_agent: MakeAgent) -> None:
    requests = Requests("It is 68 euros.", '{"amount": "many", "currency": "EUR"}', GOOD)
    agent = make_agent(model=requests.model(), output_type=Total)
    async with agent:
        res = await agent.run("total?")
    assert res.status == "completed" and res.output == TOTAL
    retry = requests.seen[2]["messages"]
    assert retry[-2] == {"role": "assistant", "content": '{"amount": "many", "currency": "EUR"}'}
    assert retry[-1]["role"] == "user"
    assert "amount: Input should be a valid number" in retry[-1]["content"]
    assert requests.seen[2]["response_format"] is not None


async def test_a_last_text_that_is_json_but_does_not_fit_counts_as_the_first_try(
    make_agent: MakeAgent,
) -> None:
    requests = Requests('{"amount": 1}', GOOD)
    agent = make_agent(model=requests.model(), output_type=Total)
    async with agent:
        res = await agent.run("total?")
    assert res.output == TOTAL and len(requests.seen) == 2
    assert "currency: Field required" in requests.seen[1]["messages"][-1]["content"]


async def test_an_answer_with_a_key_twice_or_nan_goes_back_not_taken(make_agent: MakeAgent) -> None:
    """json.loads takes both: the last of two keys, and NaN (invalid JSON in the final text)."""
    twice = '{"amount": 1, "currency": "USD", "currency": "EUR"}'
    requests = Requests("68 euros", twice, '{"amount": NaN, "currency": "EUR"}', GOOD)
    agent = make_agent(model=requests.model(), output_type=Total)
    async with agent:
        res = await agent.run("total?")
    assert res.status == "completed" and res.output == TOTAL
    assert "the key 'currency' is given twice" in requests.seen[2]["messages"][-1]["content"]
    assert "NaN is not a JSON number" in requests.seen[3]["messages"][-1]["content"]
    json.loads(res.final_text or "", parse_constant=pytest.fail)


async def test_an_answer_nested_too_deeply_is_a_problem_then_a_gate(make_agent: MakeAgent) -> None:
    """It used to raise RecursionError out of finalize: the run failed with a traceback."""
    deep = "[" * 100_000 + "]" * 100_000
    agent = make_agent([text(deep)] * 3, output_type=Total)
    async with agent:
        res = await agent.run("total?")
    assert res.status == "paused" and res.gate is not None
    message = res.gate["issues"][0]["message"]
    assert res.gate["issues"][0]["code"] == "OUTPUT_INVALID"
    assert "after 3 tries: the answer is not JSON: it is nested too deeply to read" in message


def _stubborn(messages: list[Any], info: dict[str, Any]) -> str:
    """Prose to a draft; a bad answer to every typed request, until a plan says EUR."""
    if any(m["role"] == "user" and "say EUR" in m["content"] for m in messages):
        return GOOD if info["response_format"] else "68.055 EUR"
    return '{"amount": "lots"}' if info["response_format"] else "It is a lot."


async def test_an_answer_that_never_fits_pauses_at_the_gate_and_a_plan_fixes_it(
    db: Path, tmp_path: Path
) -> None:
    seen: list[dict[str, Any]] = []

    def model_fn(messages: list[Any], info: dict[str, Any]) -> str:
        seen.append(info)
        return _stubborn(messages, info)

    def agent(output_type: Any = Total) -> Agent:
        return Agent(
            model=FunctionModel(model_fn),
            checkpoint_path=db,
            memory_path=None,
            settings=AgentSettings(output={"max_retries": 1}),
            output_type=output_type,
        )

    async with agent() as first:
        paused = await first.run("total?")
    assert paused.status == "paused" and paused.output is None
    assert paused.gate is not None
    (found,) = paused.gate["issues"]
    assert found["code"] == "OUTPUT_INVALID" and found["severity"] == 1.0
    assert "after 2 tries" in found["message"]
    assert "amount: Input should be a valid number" in found["message"]
    assert "currency: Field required" in found["message"]
    assert '{"amount": "lots"}' in found["message"]  # the last answer, quoted
    assert any(
        "output.max_retries" not in o and "instructions" in o for o in paused.gate["options"]
    )
    # 1 draft, then 1 answer and 1 retry (max_retries=1): then the gate.
    assert [s["response_format"] is not None for s in seen] == [False, True, True]

    # A second Agent object, without the type: the run's stored schema still types the answer.
    async with agent(output_type=None) as second:
        done = await second.resume(paused.thread_id, UserPlan(instructions="say EUR"))
    assert done.status == "completed"
    assert done.output == {"amount": 68.055, "currency": "EUR"}
    # Read with the type, the same run's output is the typed value again.
    async with agent() as third:
        assert (await third.get_result(paused.thread_id)).output == TOTAL


async def test_the_person_may_stop_a_run_whose_answer_does_not_fit(make_agent: MakeAgent) -> None:
    agent = make_agent(
        model=FunctionModel(_stubborn),
        output_type=Total,
        settings=AgentSettings(output={"max_retries": 0}),
    )
    async with agent:
        paused = await agent.run("total?")
        stopped = await agent.resume(paused.thread_id, UserPlan(allow_continue=False))
    assert stopped.status == "cancelled" and stopped.output is None
    assert "OUTPUT_INVALID" not in (stopped.final_text or "")
    assert "does not fit Total" in (stopped.final_text or "")


async def test_the_final_answer_tool_where_response_format_is_not_used(
    make_agent: MakeAgent,
) -> None:
    answer = {"tool_calls": [{"name": "final_answer", "args": {"amount": 68.055}}]}
    fixed = {"tool_calls": [{"name": "final_answer", "args": json.loads(GOOD)}]}
    requests = Requests("It is 68 euros.", answer, fixed)
    agent = make_agent(
        model=requests.model(),
        output_type=Total,
        settings=AgentSettings(output={"mode": "tool"}),
    )
    async with agent:
        res = await agent.run("total?")
    assert res.status == "completed" and res.output == TOTAL
    assert [s["response_format"] for s in requests.seen] == [None, None, None]
    assert requests.tool_names(1) == ["final_answer"] == requests.tool_names(2)
    assert requests.seen[1]["tools"][0]["function"]["parameters"] == Total.model_json_schema()
    # The refused call is answered (a tool message), so the conversation stays valid.
    last = requests.seen[2]["messages"]
    assert last[-1]["role"] == "tool" and "currency: Field required" in last[-1]["content"]


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Pair(TypedDict):
    left: str
    right: str


@pytest.mark.parametrize(
    ("output_type", "answer", "expected"),
    [
        (Point, '{"x": 1, "y": "2"}', Point(1, 2)),
        (Pair, '{"left": "a", "right": "b"}', {"left": "a", "right": "b"}),
        (
            {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
            '{"n": 3}',
            {"n": 3},
        ),
    ],
)
async def test_dataclasses_typeddicts_and_json_schemas_type_the_answer_too(
    make_agent: MakeAgent, output_type: Any, answer: str, expected: Any
) -> None:
    agent = make_agent([text(answer)], output_type=output_type)
    async with agent:
        res = await agent.run("go")
    assert res.status == "completed" and res.output == expected


@pytest.mark.parametrize(
    ("output_type", "says"),
    [
        (int, "must describe a JSON object"),
        (list[Total], "must describe a JSON object"),
        ({"type": "array"}, "must describe a JSON object"),
        ({"type": "object", "properties": {"n": {"type": "nonsense"}}}, "not a valid JSON Schema"),
        (object(), "cannot be described as a JSON Schema"),
    ],
)
def test_a_type_that_cannot_type_an_answer_is_refused_when_the_agent_is_built(
    make_agent: MakeAgent, output_type: Any, says: str
) -> None:
    with pytest.raises(OutputSchemaError, match=says):
        make_agent(output_type=output_type)


async def test_reading_a_run_with_another_type_says_so(make_agent: MakeAgent) -> None:
    async with make_agent([text(GOOD)], output_type=Total) as agent:
        res = await agent.run("total?")

    class Other(BaseModel):
        name: str

    async with make_agent(output_type=Other) as other:
        with pytest.raises(OutputValidationError, match="name: Field required") as caught:
            await other.get_result(res.thread_id)
    # Both causes named: another type, or the stored state changed outside ai-agent.
    assert "the run was made with another type" in str(caught.value)
    assert "changed outside ai-agent" in str(caught.value)


async def test_a_recorded_replay_gives_the_same_typed_output_offline(
    make_agent: MakeAgent,
) -> None:
    turns = [call("calculator", expression="19.5% of 349"), text("68 euros"), text(GOOD)]
    async with make_agent(turns, tools=["calculator"], output_type=Total) as agent:
        res = await agent.run("total?")
    # Replayed by an Agent whose model has nothing left to say: every reply is the recording's.
    async with make_agent([], tools=["calculator"], output_type=Total) as replayer:
        replay = await replayer.replay(res.thread_id, mode="recorded")
        calls = await replayer.store.model_calls(replay.thread_id)
    assert replay.status == "completed" and replay.output == TOTAL
    assert replay.thread_id != res.thread_id
    assert [c["replayed"] for c in calls] == [True, True, True]


def test_a_typed_run_killed_while_asking_for_its_answer_resumes_in_another_process(
    tmp_path: Path,
) -> None:
    db = tmp_path / "c.sqlite"
    proc = start(db, tmp_path, "run", "t", UNATTENDED="1", TYPED="1", CRASH_AT="answer")
    proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL
    assert len(lines(tmp_path / "effects.txt")) == 1
    code, out = finish(start(db, tmp_path, "resume", "t", UNATTENDED="1", TYPED="1"))
    assert code == 0, out
    assert result_of(out)["output"] == {"written": "hello"}
    assert lines(tmp_path / "effects.txt") == [lines(tmp_path / "effects.txt")[0]]


async def test_a_server_that_refuses_the_typed_request_is_a_model_issue_naming_the_setting(
    make_agent: MakeAgent,
) -> None:
    def refusing(messages: list[Any], info: dict[str, Any]) -> str:
        if info["response_format"] is not None:
            raise ValueError("response_format is not supported")
        return "68 euros"

    settings = AgentSettings(model_backend={"max_retries": 0})
    agent = make_agent(model=FunctionModel(refusing), output_type=Total, settings=settings)
    async with agent:
        res = await agent.run("total?")
    assert res.status == "paused" and res.gate is not None
    (found,) = res.gate["issues"]
    assert found["code"] == "MODEL_ERROR"
    assert "asking for the typed final answer" in found["message"]
    assert "set output.mode to tool" in found["message"]


async def test_a_model_failure_the_gate_cannot_help_with_fails_the_run(
    make_agent: MakeAgent,
) -> None:
    agent = make_agent([text("68 euros")], output_type=Total)  # nothing left for the answer
    async with agent:
        res = await agent.run("total?")
    assert res.status == "failed" and res.output is None
    assert "the script has 1 turn(s)" in (res.error or "")


async def test_the_typed_request_keeps_to_the_budget(make_agent: MakeAgent) -> None:
    spent = {"text": "68 euros", "usage": {"prompt_tokens": 900, "completion_tokens": 100}}
    settings = AgentSettings(budget={"max_tokens": 1100})
    agent = make_agent([spent, text(GOOD)], output_type=Total, settings=settings)
    async with agent:
        res = await agent.run("total?")
        calls = await agent.store.model_calls(res.thread_id)
    assert res.status == "paused" and res.gate is not None
    assert [i["code"] for i in res.gate["issues"]] == ["BUDGET"]
    assert len(calls) == 1  # the typed request was not made


async def test_a_finalize_hook_writes_the_text_and_the_output_is_still_typed(
    make_agent: MakeAgent,
) -> None:
    agent = make_agent([text(GOOD)], output_type=Total, hooks={"finalize": lambda t, c: "done"})
    async with agent:
        res = await agent.run("total?")
    assert res.final_text == "done" and res.output == TOTAL


async def test_tools_called_instead_of_the_final_answer_are_answered_and_asked_again(
    make_agent: MakeAgent,
) -> None:
    other = {"tool_calls": [{"name": "calculator", "args": {"expression": "1+1"}}]}
    fixed = {"tool_calls": [{"name": "final_answer", "args": json.loads(GOOD)}]}
    requests = Requests("68 euros", other, fixed)
    settings = AgentSettings(output={"mode": "tool"})
    agent = make_agent(model=requests.model(), output_type=Total, settings=settings)
    async with agent:
        res = await agent.run("total?")
    assert res.output == TOTAL
    sent = requests.seen[2]["messages"]
    assert sent[-2]["role"] == "tool" and sent[-2]["content"].startswith("Skipped")
    assert sent[-1]["role"] == "user" and "Call final_answer now" in sent[-1]["content"]


async def test_a_stream_gives_the_typed_answer_as_the_final_answer_not_the_prose(
    make_agent: MakeAgent,
) -> None:
    prose = "It comes to sixty-eight euros. " * 20  # past the length that streams live
    agent = make_agent([text(prose), text(GOOD)], output_type=Total)
    async with agent:
        events = [e async for e in agent.astream("total?")]
    final = "".join(e.text for e in events if isinstance(e, FinalDelta))
    assert json.loads(final) == json.loads(GOOD)
    assert events[-1].result.output == TOTAL  # type: ignore[union-attr]


async def test_a_recorded_replay_asked_for_another_type_diverges_at_the_typed_request(
    make_agent: MakeAgent,
) -> None:
    async with make_agent([text("68 euros"), text(GOOD)], output_type=Total) as agent:
        res = await agent.run("total?")

    class Other(BaseModel):
        amount: float

    async with make_agent([], output_type=Other) as replayer:
        replay = await replayer.replay(res.thread_id, mode="recorded")
    assert replay.divergence is not None and replay.output is None
    assert replay.divergence.stage == "finalize"


async def test_a_typed_request_compacted_to_fit_is_recorded_as_a_drafts_is(
    make_agent: MakeAgent,
) -> None:
    """The last draft's long prose is not JSON: the typed request asks again, over the trigger."""
    settings = AgentSettings(
        context={
            "strategy": "sliding_window",
            "trigger_threshold_tokens": 1200,
            "target_tokens": 800,
            "preserve_recent_turns": 1,
        }
    )
    prose = "The total comes to sixty-eight euros and six cents. " * 150  # about 1,650 tokens
    asked = Requests(text(prose), text("not JSON"), text(GOOD))
    agent = make_agent(model=asked.model(), output_type=Total, settings=settings)
    async with agent:
        res = await agent.run("total?")
        context = await agent.get_context_state(res.thread_id)
    assert res.status == "completed" and res.output == TOTAL
    compactions = context["compactions"]
    assert len(compactions) == 1  # the retry asked on the compacted conversation
    assert compactions[0]["strategy"] == "sliding_window"
    assert compactions[0]["tokens_after"] <= 800 < compactions[0]["tokens_before"]
    # What the model saw: the prose went out of the typed requests, the task stayed.
    for request in asked.seen[1:]:
        assert all(prose not in str(m) for m in request["messages"])
