"""The run view's depth: the state at a checkpoint and the context window of a model call."""

from __future__ import annotations

import html
import re
from collections.abc import Callable

import httpx
import pytest

from ai_agent import Agent
from ai_agent.console import depth
from ai_agent.tokens import TokenCounter
from tests.console.conftest import MakeAgent

Open = Callable[[Agent], httpx.AsyncClient]

HOSTILE = "<script>alert(1)</script> \x1b[2K password=hunter2 Authorization: Bearer abc.def"


async def test_every_checkpoint_of_the_window_is_linked_and_shows_its_state(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    agent = make_agent([{"text": HOSTILE}])
    async with agent:
        await agent.run(f"answer {HOSTILE}", thread_id="d1")
        history = await agent.ahistory("d1")
        http = signed_in(agent)
        page = (await http.get("/runs/d1")).text
        draft = next(e for e in history if e.stage == "draft")
        state = (await http.get("/runs/d1/checkpoints", params={"id": draft.checkpoint_id})).text
    picker = page[page.index('<form method="get" action="/runs/d1/checkpoints"') :]
    picker = picker[: picker.index("</form>")]
    offered = re.findall(r'<option value="([^"]+)">', picker)
    listed = [e.checkpoint_id for e in history if e.stage != "input"]
    assert offered == listed
    assert f'href="/runs/d1/checkpoints?id={draft.checkpoint_id}"' in page  # the step's link
    assert f'<dd id="step">{draft.step}</dd>' in state
    value = state[state.index('<dt id="key-final_text">') :]
    assert value[: value.index("</dd>")].endswith('<pre class="value">null</pre>')  # not yet
    assert '<dt id="key-task">task</dt>' in state
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in state and "<script>alert" not in state
    assert "\\x1b[2K" in state and "\x1b" not in state
    assert "hunter2" not in state and "abc.def" not in state  # masked on the page


async def test_a_missing_or_unknown_checkpoint_is_a_clear_error(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    agent = make_agent([{"text": "hi"}])
    async with agent:
        await agent.run("greet", thread_id="d1")
        http = signed_in(agent)
        missing = await http.get("/runs/d1/checkpoints")
        unknown = await http.get("/runs/d1/checkpoints", params={"id": "1f0-nope"})
        nobody = await http.get("/runs/nobody/checkpoints", params={"id": "1f0-nope"})
    assert missing.status_code == 400 and "say which checkpoint" in missing.text
    assert unknown.status_code == 404
    assert "thread d1 has no checkpoint 1f0-nope" in html.unescape(unknown.text)
    assert nobody.status_code == 404 and "no run with thread id nobody" in nobody.text


async def test_the_context_window_of_a_draft_shows_each_message_with_its_tokens(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    turns = [{"tool_calls": [{"name": "calculator", "args": {"expression": "6*7"}}]}]
    agent = make_agent([*turns, {"text": f"42 {HOSTILE}"}], tools=["calculator"])
    async with agent:
        await agent.run("what is 6*7", thread_id="c1")
        calls = await agent.store.model_calls("c1")
        second = calls[-1]
        request = await agent.store.model_request(second["seq"])
        http = signed_in(agent)
        run_page = (await http.get("/runs/c1")).text
        page = (await http.get(f"/runs/c1/steps/{second['step']}/context")).text
        none = await http.get("/runs/c1/steps/0/context")
        bad = await http.get("/runs/c1/steps/x1/context")
    assert f'href="/runs/c1/steps/{second["step"]}/context">context</a>' in run_page
    counter = TokenCounter(agent.settings.token_tracking, model=agent.settings.model_backend.model)
    shown = [int(t) for t in re.findall(r'<td class="num tokens">(\d+)</td>', page)]
    assert shown == [counter.count_message(m) for m in request["messages"]]
    assert [m["role"] for m in request["messages"]][-1] == "tool"  # the calculator's answer
    assert "what is 6*7" in page and "calculator" in page
    assert '<pre class="reply">' in page and "&lt;script&gt;" in page and "hunter2" not in page
    total = sum(shown) + sum(counter.count_tools([s]) for s in request["tools"])
    assert f'<dd id="total">{total} (counted here' in page
    assert none.status_code == 404 and "no model call recorded at step 0" in none.text
    assert bad.status_code == 400


async def test_a_long_value_is_cut_with_a_note(
    make_agent: MakeAgent, signed_in: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(depth, "MAX_VALUE_CHARS", 50)
    agent = make_agent([{"text": "x" * 80}])
    async with agent:
        await agent.run("say x", thread_id="x1")
        last = (await agent.ahistory("x1"))[-1]
        state = (
            await signed_in(agent).get("/runs/x1/checkpoints", params={"id": last.checkpoint_id})
        ).text
    assert "more characters not shown." in state
    assert "x" * 80 not in state


def test_a_tool_schema_is_named_in_either_shape() -> None:
    assert depth._tool_name({"type": "function", "function": {"name": "calc"}}) == "calc"
    assert depth._tool_name({"name": "plain"}) == "plain"
    assert depth._tool_name(["not", "a", "schema"]) == "?"
