"""The runs page and the inbox read a page at once: the rows, their summaries, no graph per row."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from ai_agent import Agent
from tests.console.conftest import MakeAgent, write_call

Open = Callable[[Agent], httpx.AsyncClient]


def count_graphs(agent: Agent, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every graph session the agent's database opens from now on, by kind."""
    database = agent.archive.database
    real = database.graph
    opened: list[str] = []

    @contextlib.asynccontextmanager
    async def counted(*, reading: bool = False) -> AsyncIterator[Any]:
        opened.append("reading" if reading else "writing")
        async with real(reading=reading) as graph:
            yield graph

    monkeypatch.setattr(database, "graph", counted)
    return opened


def row_of(page: str, thread: str) -> str:
    row = page[page.index(f'<tr data-thread="{thread}"') :]
    return row[: row.index("</tr>")]


async def test_the_runs_page_reads_stored_summaries_without_a_graph(
    make_agent: MakeAgent, signed_in: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = make_agent([{"text": "four"}, write_call()] + [{"text": "again"}] * 3)
    async with agent:
        await agent.run("add two and two", thread_id="done")
        await agent.run("write it", thread_id="paused")
        for i in range(3):
            await agent.run(f"more {i}", thread_id=f"more-{i}")
        opened = count_graphs(agent, monkeypatch)
        page = (await signed_in(agent).get("/runs")).text
    assert opened == []
    done = row_of(page, "done")
    assert '<td class="status">completed</td>' in done and "<td>finished</td>" in done
    assert "<td>scripted</td>" in done
    assert "<td>scripted</td>" in row_of(page, "paused")  # paused runs have their figures too


async def test_a_running_run_is_read_from_its_checkpoint_and_shows_running(
    make_agent: MakeAgent, signed_in: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = make_agent([{"text": "four"}, {"text": "five"}, {"text": "six"}])
    async with agent:
        first = await agent.run("add two and two", thread_id="resumed")
        await agent.run("add two and three", thread_id="other")
        await agent.run("add three and three", thread_id="third")
        # As a resume does: the row says running, its stored summary is of the earlier stop.
        await agent.store.update_run("resumed", status="running")
        await agent.store.update_run("third", status="running")
        opened = count_graphs(agent, monkeypatch)
        page = (await signed_in(agent).get("/runs")).text
    assert opened == ["reading"]  # both running runs, in one graph session
    row = row_of(page, "resumed")
    assert '<td class="status">running</td>' in row
    assert f'<td class="num">{first.usage["total_tokens"]}</td>' in row  # from the checkpoint
    assert '<td class="status">completed</td>' in row_of(page, "other")


async def test_a_run_without_a_readable_summary_falls_back_to_its_checkpoint(
    make_agent: MakeAgent, signed_in: Open, tmp_path: Path
) -> None:
    agent = make_agent([{"text": "four"}])
    async with agent:
        done = await agent.run("add two and two", thread_id="damaged")
        with sqlite3.connect(tmp_path / "c.sqlite") as conn:
            conn.execute("UPDATE agent_run_summaries SET tokens = 'lots'")
        await agent.store.create_run("no-checkpoint", "crashed before its first step")
        page = (await signed_in(agent).get("/runs")).text
    row = row_of(page, "damaged")
    assert f'<td class="num">{done.usage["total_tokens"]}</td>' in row
    assert "<td>finished</td>" in row
    assert "no run with thread id no-checkpoint" in row_of(page, "no-checkpoint")


async def test_the_inbox_reads_the_rows_gate_and_the_open_plans_without_a_graph(
    make_agent: MakeAgent, signed_in: Open, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = make_agent([write_call("one"), write_call("two")])
    async with agent:
        first = await agent.run("write one", thread_id="i1")
        second = await agent.run("write two", thread_id="i2")
        assert first.gate is not None and second.gate is not None
        queued = await agent.submit_plan(
            "i1", {"approve": ["*"], "gate_token": first.gate["token"]}
        )
        opened = count_graphs(agent, monkeypatch)
        page = (await signed_in(agent).get("/inbox")).text
    assert opened == []
    assert f"An answer (plan {queued['id']}) is queued" in page
    assert f'name="gate" value="{second.gate["token"]}"' in page
    assert page.count('<pre class="preview">write_file out.txt (new file):') == 1  # i2's only


async def test_a_paused_row_with_a_damaged_gate_is_read_from_its_checkpoint(
    make_agent: MakeAgent, signed_in: Open, tmp_path: Path
) -> None:
    agent = make_agent([write_call("one")])
    async with agent:
        paused = await agent.run("write one", thread_id="i1")
        with sqlite3.connect(tmp_path / "c.sqlite") as conn:
            conn.execute("""UPDATE agent_runs SET gate = '{"severity": "high"}'""")
        page = (await signed_in(agent).get("/inbox")).text
    assert paused.gate is not None
    assert f'name="gate" value="{paused.gate["token"]}"' in page
    assert '<pre class="preview">write_file out.txt (new file):' in page


async def test_a_gate_issue_whose_severity_is_not_a_number_is_read_from_its_checkpoint(
    make_agent: MakeAgent, signed_in: Open, tmp_path: Path
) -> None:
    # The inbox prints each issue's severity as a number: a row edited by hand to say "high"
    # is damaged like any other, and must not take the whole inbox down with it.
    agent = make_agent([write_call("one"), write_call("two")])
    async with agent:
        first = await agent.run("write one", thread_id="i1")
        second = await agent.run("write two", thread_id="i2")
        assert first.gate is not None and second.gate is not None
        issues = [{**first.gate["issues"][0], "severity": "high"}]
        with sqlite3.connect(tmp_path / "c.sqlite") as conn:
            conn.execute(
                "UPDATE agent_runs SET gate = ? WHERE thread_id = 'i1'",
                (json.dumps({**first.gate, "issues": issues}),),
            )
        response = await signed_in(agent).get("/inbox")
    assert response.status_code == 200
    assert f'name="gate" value="{first.gate["token"]}"' in response.text
    assert f'name="gate" value="{second.gate["token"]}"' in response.text


async def test_a_paused_row_without_a_report_or_a_checkpoint_is_listed_with_the_reason(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    agent = make_agent([{"text": "done"}])
    async with agent:
        await agent.run("finish", thread_id="done")
        await agent.store.create_run("ghost", "paused before its first checkpoint")
        await agent.store.update_run("ghost", status="paused")
        await agent.store.update_run("done", status="paused")  # a row that says paused, no gate
        page = (await signed_in(agent).get("/inbox")).text
    ghost = page[page.index('data-thread="ghost"') :]
    assert "no run with thread id ghost" in ghost[: ghost.index("</article>")]
    done = page[page.index('data-thread="done"') :]
    assert "paused without a gate report" in done[: done.index("</article>")]


@pytest.mark.parametrize("when", ["'2026-01-01'", "'abc'", "x'00'"])
async def test_a_run_row_whose_times_are_not_numbers_is_shown_with_its_times_unknown(
    make_agent: MakeAgent, signed_in: Open, tmp_path: Path, when: str
) -> None:
    # SQLite keeps text (or bytes) written into a REAL column by hand; the pages that subtract
    # or compare the times must still show the run, and everything else about it.
    agent = make_agent([write_call("one"), write_call("two")])
    async with agent:
        first = await agent.run("write one", thread_id="i1")
        second = await agent.run("write two", thread_id="i2")
        assert first.gate is not None and second.gate is not None
        with sqlite3.connect(tmp_path / "c.sqlite") as conn:
            conn.execute(
                f"UPDATE agent_runs SET created_at = {when}, updated_at = {when} "
                "WHERE thread_id = 'i1'"
            )
        http = signed_in(agent)
        runs, inbox, run = [await http.get(p) for p in ("/runs", "/inbox", "/runs/i1")]
    assert (runs.status_code, inbox.status_code, run.status_code) == (200, 200, 200)
    row = row_of(runs.text, "i1")
    assert "write one" in row and row.count(">unknown</td>") == 2  # its duration, its age
    assert "write two" in row_of(runs.text, "i2")
    for gate in (first.gate, second.gate):
        assert f'name="gate" value="{gate["token"]}"' in inbox.text
    assert "waiting since an unknown time" in inbox.text
    assert "<dt>Duration</dt><dd>unknown</dd>" in run.text and "write one" in run.text
