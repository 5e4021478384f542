"""The runs list, the inbox and the run view, over real runs in a SQLite file."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from ai_agent import Agent, ToolCategory, ToolSpec
from ai_agent.console import views
from ai_agent.console.live import run_changes
from tests.console.conftest import MakeAgent, write_call

Open = Callable[[Agent], httpx.AsyncClient]

HOSTILE = "<script>alert(1)</script><b>bold</b> \x1b[2K\rrm -rf ~ \u202eevil"


async def test_the_runs_page_lists_filters_and_searches(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    agent = make_agent([write_call()])
    async with agent:
        await agent.run("write the report", thread_id="r-paused")
        done = make_agent([{"text": "four"}])
        async with done:
            await done.run("add two and two", thread_id="r-done")
        http = signed_in(agent)
        page = (await http.get("/runs")).text
        assert page.index("r-done") < page.index("r-paused")  # most recently updated first
        row = page[page.index('<tr data-thread="r-done"') :]
        row = row[: row.index("</tr>")]
        assert '<td class="status">completed</td>' in row
        assert (
            "add two and two" in row and "<td>finished</td>" in row and "<td>scripted</td>" in row
        )
        assert '<td class="num">' in row  # tokens, counted from the run's usage
        paused = (await http.get("/runs", params={"status": "paused"})).text
        assert "r-paused" in paused and "r-done" not in paused
        found = (await http.get("/runs", params={"q": "TWO AND"})).text
        assert "r-done" in found and "r-paused" not in found
        none = (await http.get("/runs", params={"q": "nothing like it"})).text
        assert "No runs match." in none
        bad = await http.get("/runs", params={"status": "<nope>"})
        assert bad.status_code == 400
        assert "unknown status &#39;&lt;nope&gt;&#39;" in bad.text


async def test_a_run_whose_state_cannot_be_read_is_listed_with_the_reason(
    make_agent: MakeAgent, signed_in: Open, tmp_path: Path
) -> None:
    agent = make_agent([write_call()])
    async with agent:
        await agent.store.create_run("no-checkpoint", "crashed before its first step")
        page = (await signed_in(agent).get("/runs")).text
    assert "crashed before its first step" in page
    assert "no run with thread id no-checkpoint" in page


async def test_the_inbox_shows_the_gate_its_issues_and_the_preview(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    agent = make_agent([write_call("line one\nline two")])
    async with agent:
        paused = await agent.run("write two lines", thread_id="i1")
        page = (await signed_in(agent).get("/inbox")).text
    assert paused.gate is not None
    assert '<span class="code">APPROVAL_REQUIRED</span> <span class="severity">1.00</span>' in page
    assert "write_file is a modification tool and needs approval" in page
    assert "+++ b/out.txt\n@@ -0,0 +1,2 @@\n+line one\n+line two" in page  # the diff
    assert f'name="gate" value="{paused.gate["token"]}"' in page
    assert 'name="call" value="c1.0"' in page
    assert 'value="approve" class="approve"' in page and 'value="reject"' in page


async def test_model_and_tool_text_renders_inert(make_agent: MakeAgent, signed_in: Open) -> None:
    agent = make_agent([write_call(HOSTILE), {"text": HOSTILE}])
    async with agent:
        await agent.run(f"task {HOSTILE}", thread_id="h1")
        http = signed_in(agent)
        pages = [(await http.get(p)).text for p in ("/inbox", "/runs")]
        await agent.resume("h1", {"approve": ["*"]})
        pages.append((await http.get("/runs/h1")).text)
    for page in pages:
        assert "<script>alert" not in page and "<b>bold" not in page
        assert not {"\x1b", "\r", "\u202e"} & set(page)
        assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;b&gt;bold&lt;/b&gt;" in page
        assert "\\x1b[2K\\rrm -rf ~ \\u202eevil" in page
    assert '<pre class="final" id="final">&lt;script&gt;' in pages[2]


async def test_the_run_view_shows_timeline_calls_answers_and_conversation(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    agent = make_agent([write_call("x"), {"text": "written"}])
    async with agent:
        await agent.run("write x", thread_id="v1")
        await agent.submit_plan("v1", {"approve": ["c1.0"]})
        from ai_agent.graph import Worker

        (outcome,) = await Worker(agent).run(once=True)
        page = (await signed_in(agent).get("/runs/v1")).text
    assert outcome.run_status == "completed"
    assert '<dd id="status" class="status-completed">completed</dd>' in page
    assert '<pre class="final" id="final">written</pre>' in page
    for stage in ("draft", "act", "gate", "finalize"):
        assert f"<td>{stage}</td>" in page
    tool_row = page[page.index('<table class="tool-calls">') :]
    assert "<td>c1.0</td><td>write_file</td>" in tool_row
    assert '<td class="tool-status">ok</td>' in tool_row
    plans = page[page.index('<table class="plans">') :]
    assert '<tr id="plan-1" class="plan-done"><td>1</td><td class="plan-status">done</td>' in plans
    assert "<td>completed</td>" in plans
    assert '<li class="message role-user kind-task">' in page
    model_calls = page[page.index('<table class="model-calls">') :]
    model_calls = model_calls[: model_calls.index("</table>")]
    assert model_calls.count("<tr><td>") == 2  # two model calls, one row each
    assert "<td>scripted</td>" in model_calls


async def test_a_run_in_progress_shows_as_running_and_a_crashed_one_as_stopped(
    make_agent: MakeAgent, signed_in: Open, tmp_path: Path
) -> None:
    # The pages are fetched from inside a tool: the run holds its lease and its latest
    # checkpoint has work left, exactly what a console sees while a worker runs it.
    seen: dict[str, str] = {}

    async def look(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        seen["live"] = (await http.get("/runs/p1")).text
        with sqlite3.connect(tmp_path / "c.sqlite") as conn:  # as if its process were gone
            conn.execute("UPDATE agent_leases SET expires_at = expires_at - 1e6")
        seen["crashed"] = (await http.get("/runs/p1")).text
        with sqlite3.connect(tmp_path / "c.sqlite") as conn:
            conn.execute("UPDATE agent_leases SET expires_at = expires_at + 1e6")
        return {"status": "ok", "content": "looked"}

    spec = ToolSpec("look", look, description="Look.", category=ToolCategory.READ_ONLY)
    call = {"tool_calls": [{"name": "look", "args": {}}]}
    agent = make_agent([call, {"text": "done"}], tools=[spec])
    async with agent:
        http = signed_in(agent)
        result = await agent.run("look", thread_id="p1")
        after = (await http.get("/runs/p1")).text
    assert result.status == "completed"
    assert '<dd id="status" class="status-running">running</dd>' in seen["live"]
    assert "stopped before finishing" not in seen["live"]
    assert '<dd id="status" class="status-failed">failed</dd>' in seen["crashed"]
    assert "the run stopped before finishing" in seen["crashed"]
    assert '<dd id="status" class="status-completed">completed</dd>' in after


async def test_a_page_is_dated_from_before_its_reads(
    make_agent: MakeAgent, signed_in: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A run that changes while the page reads it may not be in what the page shows; the page's
    # date comes before the reads, so its live updates report that change.
    agent = make_agent([write_call()])
    async with agent:
        await agent.run("write", thread_id="d1")
        read = views.run_view

        async def slow_read(archive: Any, thread_id: str, **options: Any) -> views.RunView:
            shown = await read(archive, thread_id, **options)
            await agent.store.update_run("d1", status="cancelled")  # changed after the read
            return shown

        monkeypatch.setattr(views, "run_view", slow_read)
        page = (await signed_in(agent).get("/runs/d1")).text
        made = float(re.search(r'data-made="([0-9.]+)"', page)[1])  # type: ignore[index]
        stream = run_changes(agent.archive, interval=0, since=made)
        assert await anext(stream) == "retry: 2000\n\n"
        event = await anext(stream)
        await stream.aclose()
    assert '<dd id="status" class="status-paused">paused</dd>' in page
    assert json.loads(event.split("data: ", 1)[1]) == [{"thread_id": "d1", "status": "cancelled"}]


async def test_an_unknown_run_is_a_404_page(make_agent: MakeAgent, signed_in: Open) -> None:
    agent = make_agent([write_call()])
    async with agent:
        await agent.run("x", thread_id="k1")
        http = signed_in(agent)
        missing = await http.get("/runs/nope")
        assert missing.status_code == 404
        assert "no run with thread id nope" in missing.text
        bad = await http.get("/runs/bad%20id")
        assert bad.status_code == 404


async def test_an_empty_store_has_an_empty_inbox_and_runs_page(
    make_agent: MakeAgent, signed_in: Open, tmp_path: Path
) -> None:
    agent = make_agent([write_call()])
    async with agent:
        await agent.run("x", thread_id="e1")
        with sqlite3.connect(tmp_path / "c.sqlite") as db:
            db.execute("UPDATE agent_runs SET status = 'completed'")
        http = signed_in(agent)
        assert "Nothing is waiting." in (await http.get("/inbox")).text
        assert (await http.get("/")).headers["location"] == "/inbox"
