"""Requests and rows that look almost right: numbers in other scripts, a report without its token,
a plan that does not fit the fork it was meant for.

The numbers are sent to a real console server on 127.0.0.1 (`serving`, the server ``ai-agent ui``
runs), where an exception in a route is a bare "Internal Server Error"; the rest is fetched
in-process (conftest's ``signed_in``) over real SQLite files, edited with sqlite3 where a row is.
"""

from __future__ import annotations

import html
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import httpx

from ai_agent import Agent
from ai_agent.console.auth import Access
from tests.conftest import tool_rule
from tests.console.conftest import TOKEN, MakeAgent, form_fields, write_call
from tests.console.test_hostile_clients import serving
from tests.console.test_hostile_clients import signed_in as client_of

Open = Callable[[Agent], httpx.AsyncClient]

CSRF = Access(TOKEN).csrf


async def test_a_number_in_an_address_is_ascii_digits_or_a_page_in_words(
    make_agent: MakeAgent,
) -> None:
    # str.isdigit says yes to a superscript two (int refuses it: a 500) and to an Arabic-Indic
    # one (int reads 1: rule 1 was revoked).
    agent = make_agent([write_call()])
    async with agent:
        await agent.run("write", thread_id="p1")
        rule = await agent.store.add_rule(tool_rule("write_file", "k1"))
        async with serving(agent) as (_, base), client_of(base) as http:
            answers = {
                "cycle ²": await http.get("/runs/p1", params={"last": "²"}),
                "cycle \u0661": await http.get("/runs/p1", params={"last": "\u0661"}),
                "step ²": await http.get("/runs/p1/steps/%C2%B2/context"),
                "rule ²": await http.post("/rules/%C2%B2/revoke", data={"csrf": CSRF}),
                "rule \u0661": await http.post("/rules/%D9%A1/revoke", data={"csrf": CSRF}),
                "version of 5,000 digits": await http.post(
                    "/tools/calc/" + "9" * 5000 + "/approve", data={"csrf": CSRF}
                ),
            }
        rules = await agent.store.list_rules()
    said = {what: (r.status_code, html.unescape(r.text)) for what, r in answers.items()}
    assert said["cycle ²"][0] == 400 and "is not a cycle number" in said["cycle ²"][1]
    assert said["cycle \u0661"][0] == 400  # before: read as cycle 1, a number nobody wrote
    assert said["step ²"][0] == 400 and "is not a step number" in said["step ²"][1]
    assert said["rule ²"][0] == 404 and "there is no rule" in said["rule ²"][1]
    assert said["rule \u0661"][0] == 404 and rule["id"] == 1 and [r["id"] for r in rules] == [1]
    version = said["version of 5,000 digits"]
    assert version[0] == 404 and "there is no version" in version[1], version


async def test_a_gate_report_without_its_token_leaves_the_inbox_working(
    make_agent: MakeAgent, signed_in: Open, tmp_path: Path
) -> None:
    # An older ai-agent's report has no token (GateReport.token is NotRequired), nor has a row
    # edited by hand: the inbox failed as a whole (jinja2's UndefinedError, a 500) for it.
    agent = make_agent([write_call(), write_call()])
    async with agent:
        await agent.run("write", thread_id="old")
        await agent.run("write", thread_id="fine")
        with sqlite3.connect(tmp_path / "c.sqlite") as con:
            (text,) = con.execute("SELECT gate FROM agent_runs WHERE thread_id = 'old'").fetchone()
            report = json.loads(text)
            del report["token"]
            con.execute(
                "UPDATE agent_runs SET gate = ? WHERE thread_id = 'old'", (json.dumps(report),)
            )
        con.close()
        inbox = await signed_in(agent).get("/inbox")
    assert inbox.status_code == 200
    assert form_fields(inbox.text, "old")["gate"] == ""
    assert form_fields(inbox.text, "fine")["gate"] != ""  # the other run's forms as before


async def test_a_fork_whose_plan_does_not_fit_says_the_fork_was_made(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    # The plan is checked against the fork's own gate, so the fork exists when it is refused:
    # the page said "not forked", and each try left another paused fork in the inbox.
    agent = make_agent([write_call()])
    async with agent:
        await agent.run("write", thread_id="f1")
        gate = next(e for e in await agent.ahistory("f1") if e.paused)
        refused = await signed_in(agent).post(
            "/runs/f1/fork",
            data={"csrf": CSRF, "checkpoint": gate.checkpoint_id, "plan": '{"approve": ["c9.9"]}'},
        )
        runs = [r["thread_id"] for r in await agent.archive.list_runs(limit=None)]
        (fork,) = set(runs) - {"f1"}
        status = (await agent.get_result(fork)).status
    said = html.unescape(refused.text)
    assert refused.status_code == 400 and "no pending call 'c9.9'" in said
    assert "not forked" not in said
    assert f"forked as run {fork}, but its plan was not queued" in said
    assert status == "paused"  # it waits for an answer, in the inbox
