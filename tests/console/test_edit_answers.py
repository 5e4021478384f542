"""Approve with edited arguments in the inbox: a JSON editor, checked server-side, errors inline."""

from __future__ import annotations

import html
from collections.abc import Callable

import httpx
import pytest

from ai_agent import Agent
from ai_agent.console.answers import edited_args, plan_of
from ai_agent.errors import InvalidPlanError
from ai_agent.graph import Worker
from tests.console.conftest import MakeAgent, appender, form_fields

Open = Callable[[Agent], httpx.AsyncClient]


def append(line: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "append_line", "args": {"line": line}}]}


async def test_the_editor_shows_the_calls_arguments_and_an_edit_runs_as_written(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    lines: list[str] = []
    agent = make_agent([append("<b>one</b>\x1b"), {"text": "ok"}], tools=[appender(lines)])
    async with agent:
        await agent.run("append", thread_id="e1")
        http = signed_in(agent)
        page = (await http.get("/inbox")).text
        # The current arguments, as JSON whose hidden and markup characters are escapes.
        assert '<textarea name="args" class="args-editor"' in page
        assert '"line": "\\u003cb\\u003eone\\u003c/b\\u003e\\u001b"' in html.unescape(page)
        hidden = form_fields(page, "e1")
        response = await http.post(
            "/inbox/e1/answer",
            data={**hidden, "action": "edit", "args": '{"line": "two"}', "message": "not one"},
        )
        assert response.status_code == 303
        (plan,) = await agent.list_plans(thread_id="e1")
        assert plan["plan"]["edit_args"] == {"c1.0": {"line": "two"}}
        (outcome,) = await Worker(agent).run(once=True)
        view = (await http.get("/runs/e1")).text
    assert (outcome.run_status, lines) == ("completed", ["two"])
    assert '<pre class="edited-from">edited by a person; the model asked for' in view


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ('{"line": 5}', "edit_args.c1.0.line: 5 is not of type 'string'"),
        ('{"line": ', "not JSON (line 1, column 10"),
        ('["two"]', "a JSON list, not an object"),
        ("{}", "edit_args.c1.0.arguments: 'line' is a required property"),
        # JSON, but a number Python refuses to read (4,300+ digits): a mistake, not a crash.
        ('{"line": ' + "1" * 5000 + "}", "the edited arguments cannot be read"),
        # A key given twice: the last one used to win without a word.
        (
            '{"line": "two", "line": "rm"}',
            "the edited arguments cannot be read: the key 'line' is given twice in one object",
        ),
    ],
)
async def test_bad_edited_arguments_are_shown_inline_and_what_was_typed_is_kept(
    make_agent: MakeAgent, signed_in: Open, args: str, problem: str
) -> None:
    lines: list[str] = []
    agent = make_agent([append("one"), {"text": "ok"}], tools=[appender(lines)])
    async with agent:
        await agent.run("append", thread_id="e2")
        http = signed_in(agent)
        hidden = form_fields((await http.get("/inbox")).text, "e2")
        response = await http.post(
            "/inbox/e2/answer", data={**hidden, "action": "edit", "args": args}
        )
        assert response.status_code == 400
        page = html.unescape(response.text)
        assert '<p class="problem edit-problem" role="alert">' in response.text
        assert problem in page
        # The editor holds what the person typed, open, to fix it.
        assert f'spellcheck="false">{args}</textarea>' in page
        assert '<details class="edit" open>' in response.text
        assert (await agent.get_result("e2")).status == "paused"
        assert await agent.list_plans(thread_id="e2") == []
    assert lines == []


def test_the_edit_form_makes_an_edit_plan() -> None:
    form = {"action": "edit", "call": "c1.0", "args": '{"a": 1}', "gate": "t"}
    assert plan_of(form) == {
        "edit_args": {"c1.0": {"a": 1}},
        "instructions": None,
        "gate_token": "t",
    }
    with pytest.raises(InvalidPlanError, match="needs the call's id"):
        plan_of({"action": "edit", "args": "{}"})
    with pytest.raises(InvalidPlanError, match="nested too deeply"):
        edited_args("[" * 100_000)
