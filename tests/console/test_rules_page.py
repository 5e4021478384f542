"""Always-allow rules in the console: made from the inbox, listed on the Rules page, revoked."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from ai_agent import Agent
from ai_agent.console.answers import plan_of
from ai_agent.errors import InvalidPlanError
from ai_agent.graph import Worker
from tests.console.conftest import MakeAgent, appender, form_fields

Open = Callable[[Agent], httpx.AsyncClient]


def append(line: str) -> dict[str, object]:
    return {"tool_calls": [{"name": "append_line", "args": {"line": line}}]}


async def test_an_approval_with_always_makes_a_rule_listed_and_revoked_on_the_page(
    make_agent: MakeAgent, signed_in: Open, tmp_path: Path
) -> None:
    lines: list[str] = []
    agent = make_agent([append("one"), {"text": "ok"}], tools=[appender(lines)])
    async with agent:
        await agent.run("append", thread_id="a1")
        http = signed_in(agent)
        hidden = form_fields((await http.get("/inbox")).text, "a1")
        answer = {**hidden, "action": "approve", "always": "args"}
        assert (await http.post("/inbox/a1/answer", data=answer)).status_code == 303
        (outcome,) = await Worker(agent).run(once=True)
        assert outcome.run_status == "completed"
        page = (await http.get("/rules")).text
        assert 'id="rule-1"' in page
        assert (
            "append_line with these exact arguments, in any run: {&#34;line&#34;: &#34;one&#34;}"
            in page
        )
        assert "run a1, cycle 1, call c1.0" in page
        csrf = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        forged = await http.post("/rules/1/revoke", data={"csrf": "wrong"})
        assert forged.status_code == 403
        assert len(await agent.store.list_rules()) == 1
        revoked = await http.post("/rules/1/revoke", data={"csrf": csrf})
        assert revoked.status_code == 200 and "Revoked rule 1" in revoked.text
        assert await agent.store.list_rules() == []
        again = await http.post("/rules/1/revoke", data={"csrf": csrf})
        assert again.status_code == 409 and "revoked already" in again.text
        missing = await http.post("/rules/x1/revoke", data={"csrf": csrf})
        assert missing.status_code == 404


async def test_a_tool_rule_for_a_modification_tool_needs_the_checkbox(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    agent = make_agent([append("one"), {"text": "ok"}], tools=[appender([])])
    async with agent:
        await agent.run("append", thread_id="c1")
        http = signed_in(agent)
        hidden = form_fields((await http.get("/inbox")).text, "c1")
        unconfirmed = await http.post(
            "/inbox/c1/answer", data={**hidden, "action": "approve", "always": "tool"}
        )
        assert unconfirmed.status_code == 400
        assert "confirm it (confirm_always" in unconfirmed.text.replace("&#39;", "'")
        confirmed = await http.post(
            "/inbox/c1/answer",
            data={**hidden, "action": "approve", "always": "tool", "confirm_always": "yes"},
        )
        assert confirmed.status_code == 303


async def test_a_tampered_rule_is_listed_as_not_used(
    make_agent: MakeAgent, signed_in: Open, tmp_path: Path
) -> None:
    agent = make_agent([append("one"), {"text": "ok"}], tools=[appender([])])
    async with agent:
        await agent.run("append", thread_id="t1")
        await agent.resume("t1", {"approve": ["*"], "always_allow": "run"})
        with sqlite3.connect(tmp_path / "c.sqlite") as conn:
            conn.execute("UPDATE agent_rules SET thread_id = NULL")
        page = (await signed_in(agent).get("/rules")).text
    assert (
        'class="rule unusable"' in page and "NOT USED: rule 1 is for one run but names none" in page
    )


def test_an_unknown_always_scope_is_refused() -> None:
    with pytest.raises(InvalidPlanError, match="unknown always-allow scope 'forever'"):
        plan_of({"action": "approve", "call": "c1.0", "always": "forever"})
    assert plan_of({"action": "approve", "call": "c1.0", "always": "run"})["always_allow"] == "run"
