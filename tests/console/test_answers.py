"""Answering a gate in the console: the plan a form makes, queued and served as a worker does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from ai_agent import Agent
from ai_agent.console.answers import plan_of
from ai_agent.errors import InvalidPlanError
from ai_agent.graph import Worker
from tests.console.conftest import MakeAgent, appender, form_fields, write_call

Open = Callable[[Agent], httpx.AsyncClient]


def append(line: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "append_line", "args": {"line": line}}]}


async def answer(http: httpx.AsyncClient, thread: str, **fields: str) -> httpx.Response:
    """Post the first answer form of ``thread`` in the inbox, with these fields."""
    hidden = form_fields((await http.get("/inbox")).text, thread)
    return await http.post(f"/inbox/{thread}/answer", data={**hidden, **fields})


async def test_approve_queues_the_plan_and_the_worker_completes_the_run(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    lines: list[str] = []
    agent = make_agent([append("one"), {"text": "appended"}], tools=[appender(lines)])
    async with agent:
        await agent.run("append one", thread_id="a1")
        http = signed_in(agent)
        response = await answer(http, "a1", action="approve")
        assert response.status_code == 303
        assert response.headers["location"] == "/runs/a1?answered=1"
        queued = (await http.get("/inbox")).text
        assert "An answer (plan 1) is queued" in queued
        assert lines == []  # queued, not run: the worker runs it, with the lease
        (outcome,) = await Worker(agent).run(once=True)
        view = (await http.get("/runs/a1?answered=1")).text
    assert (outcome.status, outcome.run_status, lines) == ("done", "completed", ["one"])
    assert "Your answer was queued as plan 1." in view
    assert '<pre class="final" id="final">appended</pre>' in view


async def test_reject_with_a_reason_reaches_the_model(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    lines: list[str] = []
    agent = make_agent([append("one"), {"text": "understood"}], tools=[appender(lines)])
    async with agent:
        await agent.run("append one", thread_id="r1")
        http = signed_in(agent)
        response = await answer(http, "r1", action="reject", message="not on a Friday")
        assert response.status_code == 303
        (outcome,) = await Worker(agent).run(once=True)
        calls = await agent.store.model_calls("r1")
        request = await agent.store.model_request(calls[-1]["seq"])
        view = (await http.get("/runs/r1")).text
    assert (outcome.run_status, lines) == ("completed", [])
    sent = [(m["role"], m["content"]) for m in request["messages"]]
    assert ("user", "not on a Friday") in sent  # what the model read after the cancelled call
    assert '<li class="message role-user kind-plan">' in view and "not on a Friday" in view


async def test_approval_scopes_instructions_stop_and_activate(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    agent = make_agent([append("one"), {"text": "ok"}], tools=[appender([])])
    async with agent:
        await agent.run("append", thread_id="s1")
        http = signed_in(agent)
        form = form_fields((await http.get("/inbox")).text, "s1")
        first = await http.post(
            "/inbox/s1/answer", data={**form, "action": "approve", "scope": "tool"}
        )
        assert first.status_code == 303
        (plan,) = await agent.list_plans(thread_id="s1")
        assert plan["plan"]["grant_scope"] == "tool" and plan["plan"]["approve"] == ["c1.0"]
        # Answered already: the inbox shows the queued answer, and the old form is refused.
        again = await http.post("/inbox/s1/answer", data={**form, "action": "stop"})
        assert again.status_code == 409
        assert "Not sent: " in again.text and "already queued" in again.text
    assert plan_of({"action": "instruct", "message": " use B "}) == {"instructions": "use B"}
    assert plan_of({"action": "stop", "message": ""}) == {
        "allow_continue": False,
        "instructions": None,
    }
    assert plan_of({"action": "activate", "tool": "calculator"}) == {
        "activate_tools": ["calculator"]
    }


@pytest.mark.parametrize(
    ("form", "problem"),
    [
        ({"action": "destroy"}, "unknown answer 'destroy'"),
        ({"action": "approve"}, "approve needs the id of the call it decides"),
        ({"action": "approve", "call": "c1.0", "scope": "forever"}, "unknown scope 'forever'"),
        ({"action": "activate"}, "activate needs a tool's name"),
        ({"action": "instruct", "message": "  "}, "write the instructions"),
    ],
)
def test_a_malformed_form_says_what_to_fix(form: dict[str, str], problem: str) -> None:
    with pytest.raises(InvalidPlanError, match=problem):
        plan_of(form)


async def test_a_bad_answer_is_shown_at_the_gate_and_the_run_stays_paused(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    agent = make_agent([write_call()])
    async with agent:
        await agent.run("write", thread_id="b1")
        http = signed_in(agent)
        unknown = await answer(http, "b1", action="approve", call="c9.9")
        assert unknown.status_code == 400
        assert "Not sent: invalid plan: no pending call &#39;c9.9&#39;" in unknown.text
        empty = await answer(http, "b1", action="instruct")
        assert empty.status_code == 400
        long = await answer(http, "b1", action="instruct", message="x" * 100_000)
        assert long.status_code == 400 and "max_plan_chars" in long.text
        assert (await agent.get_result("b1")).status == "paused"
        assert await agent.list_plans(thread_id="b1") == []


async def test_an_answer_to_a_gate_the_run_has_left_is_refused(
    make_agent: MakeAgent, signed_in: Open, tmp_path: Path
) -> None:
    lines: list[str] = []
    turns = [append("one"), append("two"), {"text": "done"}]
    agent = make_agent(turns, tools=[appender(lines)])
    async with agent:
        await agent.run("append", thread_id="g1")
        http = signed_in(agent)
        stale = form_fields((await http.get("/inbox")).text, "g1")
        # Someone else answers first (here: directly, as `ai-agent resume` does)...
        second = await agent.resume("g1", {"approve": ["*"]})
        assert second.status == "paused"  # ...and the run waits at its next gate now
        late = await http.post("/inbox/g1/answer", data={**stale, "action": "approve"})
        assert late.status_code == 409
        assert "Not sent:" in late.text and "earlier gate" in late.text
        assert await agent.list_plans(thread_id="g1") == []
    assert lines == ["one"]  # the second call waits for its own answer


async def test_an_answer_to_a_run_no_longer_in_the_inbox_says_why_it_was_not_sent(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    # A page left open: the run was answered elsewhere and finished, and so left the inbox. The
    # refusal's reason has no run of the inbox to sit beside; it must still be said.
    agent = make_agent([write_call(), {"text": "written"}])
    async with agent:
        await agent.run("write", thread_id="f1")
        http = signed_in(agent)
        stale = form_fields((await http.get("/inbox")).text, "f1")
        assert (await agent.resume("f1", {"approve": ["*"]})).status == "completed"
        late = await http.post("/inbox/f1/answer", data={**stale, "action": "approve"})
        assert await agent.list_plans(thread_id="f1") == []
    assert late.status_code == 409
    assert "Not sent to run" in late.text and "run f1 has completed" in late.text
