"""Time travel in the console: fork at a checkpoint, replay offline, diff two runs."""

from __future__ import annotations

import asyncio
import html
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from ai_agent import Agent
from ai_agent.console import travel
from ai_agent.errors import RunError
from ai_agent.graph import Worker
from tests.console.conftest import MakeAgent, write_call

Open = Callable[[Agent], httpx.AsyncClient]


def _csrf(page: str) -> str:
    marker = 'name="csrf" value="'
    start = page.index(marker) + len(marker)
    return page[start : page.index('"', start)]


async def test_fork_at_the_gate_with_a_new_plan_and_see_the_fork_complete(
    make_agent: MakeAgent, signed_in: Open, tmp_path: Path
) -> None:
    agent = make_agent([write_call("original"), {"text": "written"}])
    async with agent:
        paused = await agent.run("write the file", thread_id="f1")
        gate = next(e for e in await agent.ahistory("f1") if e.paused)
        http = signed_in(agent)
        page = (await http.get("/runs/f1/checkpoints", params={"id": gate.checkpoint_id})).text
        assert 'name="plan"' in page  # a paused gate takes a new plan
        instructions = "go ahead"
        forked = await http.post(
            "/runs/f1/fork",
            data={
                "csrf": _csrf(page),
                "checkpoint": gate.checkpoint_id,
                "update": "",
                "plan": '{"approve": ["*"], "instructions": "go ahead"}',
            },
        )
        assert forked.status_code == 303
        new = forked.headers["location"].removeprefix("/runs/")
        (outcome,) = await Worker(agent).run(once=True)
        fork_page = (await http.get(f"/runs/{new}")).text
        original = await agent.get_result("f1")
    assert paused.status == "paused" and original.status == "paused"  # the original is as it was
    assert outcome.thread_id == new and outcome.run_status == "completed"
    assert (await asyncio.to_thread(Path("out.txt").read_text)) == "original"  # the fork wrote it
    assert '<dd id="status" class="status-completed">completed</dd>' in fork_page
    assert 'Forked from <a href="/runs/f1">f1</a>' in fork_page
    assert instructions in fork_page


async def test_fork_with_edited_state_resumes_the_fork_and_refuses_bad_edits(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    agent = make_agent([{"text": "first answer"}])
    async with agent:
        await agent.run("answer", thread_id="e1")
        recall = next(e for e in await agent.ahistory("e1") if e.stage == "recall")
        http = signed_in(agent)
        csrf = _csrf((await http.get("/runs/e1")).text)
        base = {"csrf": csrf, "checkpoint": recall.checkpoint_id, "plan": ""}
        not_json = await http.post("/runs/e1/fork", data={**base, "update": "{nope"})
        not_key = await http.post("/runs/e1/fork", data={**base, "update": '{"nope": 1}'})
        plan_off_gate = await http.post(
            "/runs/e1/fork", data={**base, "update": "", "plan": "approve it"}
        )
        no_csrf = await http.post("/runs/e1/fork", data={**base, "csrf": "", "update": ""})
        forked = await http.post(
            "/runs/e1/fork", data={**base, "update": '{"task": "answer, edited"}'}
        )
        new = forked.headers["location"].removeprefix("/runs/")
        await asyncio.gather(*travel._running)
        result = await agent.get_result(new)
        state = await agent.archive.get_state(new)
    assert not_json.status_code == 400 and "is not JSON" in not_json.text
    assert not_key.status_code == 400 and "the state has no key &#39;nope&#39;" in not_key.text
    assert plan_off_gate.status_code == 400
    assert "is not a paused gate" in html.unescape(plan_off_gate.text)
    assert no_csrf.status_code == 403
    assert forked.status_code == 303 and result.status == "completed"
    assert state["task"] == "answer, edited"


def test_an_edit_must_be_an_object_of_state_keys() -> None:
    with pytest.raises(RunError, match="must be a JSON object"):
        travel.parse_update("[1, 2]")
    with pytest.raises(RunError, match="longer than"):
        travel.parse_update("{" + " " * travel.MAX_UPDATE_CHARS + "}")
    assert travel.parse_plan("  ", 1000) is None
    assert travel.parse_plan('"just text"', 1000) == {"instructions": '"just text"'}


async def test_replay_shows_no_divergence_then_a_divergence(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    turns: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "calculator", "args": {"expression": "6*7"}}]},
        {"text": "42"},
    ]
    agent = make_agent(turns, tools=["calculator"])
    async with agent:
        await agent.run("what is 6*7", thread_id="r1")
        http = signed_in(agent)
        csrf = _csrf((await http.get("/runs/r1")).text)
        same = (await http.post("/runs/r1/replay", data={"csrf": csrf})).text
    other = make_agent([], tools=["calculator"], system_prompt="You answer in French.")
    async with other:
        http = signed_in(other)
        csrf = _csrf((await http.get("/runs/r1")).text)
        diverged = (await http.post("/runs/r1/replay", data={"csrf": csrf})).text
    assert "No divergence" in same and "the same answer" in same
    assert "Diverged at step" in diverged and "(draft)" in diverged
    assert "You answer in French." in diverged  # the diff quotes the new request


async def test_diff_shows_two_runs_side_by_side(make_agent: MakeAgent, signed_in: Open) -> None:
    calc = [{"tool_calls": [{"name": "calculator", "args": {"expression": "6*7"}}]}]
    first = make_agent([*calc, {"text": "42"}], tools=["calculator"])
    async with first:
        await first.run("what is 6*7", thread_id="left")
    second = make_agent([{"text": "about forty"}], tools=["calculator"])
    async with second:
        await second.run("what is 6*7", thread_id="right")
        http = signed_in(second)
        page = (await http.get("/diff", params={"a": "left", "b": "right"})).text
        itself = (await http.get("/diff", params={"a": "left", "b": "left"})).text
        missing = await http.get("/diff", params={"a": "left"})
        unknown = await http.get("/diff", params={"a": "left", "b": "nobody"})
    assert "Rows that differ are marked." in page
    answer = page[page.index('<th scope="row">answer') :]
    answer = answer[: answer.index("</tr>")]
    assert 'aria-label="differs"' in answer and "42" in answer and "about forty" in answer
    call = page[page.index('<th scope="row">call 1') :]
    call = call[: call.index("</tr>")]
    assert "calculator({&#34;expression&#34;: &#34;6*7&#34;}) → ok" in call
    assert "The two runs are the same." in itself
    assert missing.status_code == 400 and unknown.status_code == 404


async def test_a_fork_at_the_gate_without_a_plan_waits_there_and_bad_targets_say_why(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    agent = make_agent([write_call("x")])
    async with agent:
        await agent.run("write it", thread_id="g1")
        gate = next(e for e in await agent.ahistory("g1") if e.paused)
        http = signed_in(agent)
        csrf = _csrf((await http.get("/runs/g1")).text)
        waits = await http.post(
            "/runs/g1/fork", data={"csrf": csrf, "checkpoint": gate.checkpoint_id}
        )
        new = waits.headers["location"].removeprefix("/runs/")
        status = (await agent.get_result(new)).status
        no_checkpoint = await http.post("/runs/g1/fork", data={"csrf": csrf, "checkpoint": ""})
        unknown = await http.post("/runs/g1/fork", data={"csrf": csrf, "checkpoint": "1f0-no"})
        replay_nobody = await http.post("/runs/nobody/replay", data={"csrf": csrf})
    assert waits.status_code == 303 and status == "paused" and not travel._running
    assert no_checkpoint.status_code == 400 and "say which checkpoint" in no_checkpoint.text
    assert unknown.status_code == 404
    assert replay_nobody.status_code == 404


async def test_a_replay_the_console_cannot_drive_is_a_conflict(
    make_agent: MakeAgent, signed_in: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = make_agent([{"text": "hi"}])
    async with agent:
        await agent.run("greet", thread_id="p1")
        http = signed_in(agent)
        csrf = _csrf((await http.get("/runs/p1")).text)

        async def refuse(*args: object, **kwargs: object) -> None:
            raise RunError("replay needs an Agent")

        monkeypatch.setattr(agent, "replay", refuse)
        refused = await http.post("/runs/p1/replay", data={"csrf": csrf})
    assert refused.status_code == 409 and "not replayed: replay needs an Agent" in refused.text


@pytest.mark.parametrize(
    ("field", "text", "problem"),
    [
        # JSON that Python refuses: a number of 4,300+ digits, nesting deeper than it recurses.
        ("update", '{"reflection": ' + "1" * 5000 + "}", "Exceeds the limit (4300 digits)"),
        ("update", "[" * 50_000, "the edited state is not JSON we can read (it is nested"),
        ("plan", '{"approve": ' + "1" * 5000 + "}", "Exceeds the limit (4300 digits)"),
        # A plan with a typo is refused, never sent to the model as instructions instead.
        ("plan", '{"approve": ["*"],}', "the plan is not JSON we can read (Expecting"),
    ],
)
async def test_an_edit_or_plan_that_cannot_be_read_is_refused_and_nothing_is_forked(
    make_agent: MakeAgent, signed_in: Open, field: str, text: str, problem: str
) -> None:
    agent = make_agent([write_call("x")])
    async with agent:
        await agent.run("write it", thread_id="u1")
        gate = next(e for e in await agent.ahistory("u1") if e.paused)
        http = signed_in(agent)
        csrf = _csrf((await http.get("/runs/u1")).text)
        refused = await http.post(
            "/runs/u1/fork", data={"csrf": csrf, "checkpoint": gate.checkpoint_id, field: text}
        )
        runs = await agent.archive.list_runs(limit=None)
        plans = await agent.list_plans()
    assert refused.status_code == 400 and "not forked: " in refused.text
    assert problem in html.unescape(refused.text)
    assert [r["thread_id"] for r in runs] == ["u1"] and plans == []


@pytest.mark.parametrize(
    ("update", "problem"),
    [
        ('{"task": null}', "task must be a valid string (it is null)"),
        ('{"iteration": "abc"}', 'iteration must be a valid integer (it is "abc")'),
        ('{"iteration": 1.5}', "iteration must be a valid integer (it is 1.5)"),
        ('{"messages": [{"role": "bot", "content": "hi"}]}', "messages.0.role must be 'system'"),
    ],
)
async def test_an_edited_value_of_the_wrong_type_is_refused_and_nothing_is_forked(
    make_agent: MakeAgent, signed_in: Open, update: str, problem: str
) -> None:
    # Accepted, the fork would resume in the background and fail in a stage with a TypeError.
    agent = make_agent([{"text": "first answer"}])
    async with agent:
        await agent.run("answer", thread_id="w1")
        recall = next(e for e in await agent.ahistory("w1") if e.stage == "recall")
        http = signed_in(agent)
        csrf = _csrf((await http.get("/runs/w1")).text)
        refused = await http.post(
            "/runs/w1/fork",
            data={"csrf": csrf, "checkpoint": recall.checkpoint_id, "update": update},
        )
        runs = await agent.archive.list_runs(limit=None)
    assert not travel._running  # nothing set going
    assert refused.status_code == 400
    said = html.unescape(refused.text)
    assert "not forked: cannot apply the update to the fork: " in said and problem in said
    assert "fix the value and fork again" in said
    assert [r["thread_id"] for r in runs] == ["w1"]
    # The checkpoint's page again, what was typed still in the form to fix.
    assert 'class="fork-form"' in refused.text
    typed = re.search(r'<textarea name="update"[^>]*>(.*?)</textarea>', refused.text, re.S)
    assert typed is not None and html.unescape(typed.group(1)) == update


async def test_a_refused_fork_shows_what_was_typed_as_text_only(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    agent = make_agent([{"text": "first answer"}])
    hostile = '{"task": "</textarea><script>alert(1)</script>", "iteration": "x"}'
    async with agent:
        await agent.run("answer", thread_id="w2")
        recall = next(e for e in await agent.ahistory("w2") if e.stage == "recall")
        http = signed_in(agent)
        csrf = _csrf((await http.get("/runs/w2")).text)
        refused = await http.post(
            "/runs/w2/fork",
            data={"csrf": csrf, "checkpoint": recall.checkpoint_id, "update": hostile},
        )
    assert refused.status_code == 400 and "<script>alert" not in refused.text
    typed = re.search(r'<textarea name="update"[^>]*>(.*?)</textarea>', refused.text, re.S)
    assert typed is not None and html.unescape(typed.group(1)) == hostile


async def test_a_resumed_fork_that_fails_is_logged_and_its_exception_retrieved(
    make_agent: MakeAgent,
    signed_in: Open,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    import gc

    agent = make_agent([{"text": "first answer"}])

    async def broken(thread_id: str, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("unsupported operand type(s) for +: 'NoneType' and 'int'")

    async with agent:
        await agent.run("answer", thread_id="b1")
        recall = next(e for e in await agent.ahistory("b1") if e.stage == "recall")
        http = signed_in(agent)
        csrf = _csrf((await http.get("/runs/b1")).text)
        monkeypatch.setattr(agent, "resume", broken)
        forked = await http.post(
            "/runs/b1/fork", data={"csrf": csrf, "checkpoint": recall.checkpoint_id, "update": ""}
        )
        # Waited for, not awaited: awaiting would retrieve the exception in the test's place.
        await asyncio.wait(list(travel._running))
        await asyncio.sleep(0)  # the done-callbacks run
        gc.collect()  # a task whose exception nobody retrieved complains when it is collected
    new = forked.headers["location"].removeprefix("/runs/")
    assert forked.status_code == 303 and not travel._running
    assert "never retrieved" not in caplog.text
    (record,) = [r for r in caplog.records if r.name == "ai_agent.console"]
    assert record.levelname == "ERROR"
    assert record.getMessage() == (
        f"fork {new} stopped with an error: TypeError: unsupported operand type(s) for +: "
        "'NoneType' and 'int'; its page shows it as failed"
    )
