"""The toolsmaker's review in the console: the same registry, transitions and audit as the CLI."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from ai_agent import Agent
from ai_agent.tools.maker import ToolsmakerRegistry
from tests.console.conftest import MakeAgent, tools_console
from tests.maker.conftest import SHOUT

Open = Callable[[Agent], httpx.AsyncClient]
SNEAKY = SHOUT.replace("text.upper()", "text.upper()  # </pre><script>alert(1)</script>\x1b[2K")
INTENT: dict[str, Any] = {
    "name": "shout",
    "purpose": "Upper-case a text. <b>bold</b>",
    "inputs": {"text": "string"},
    "code": SNEAKY,
}


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found is not None
    return found.group(1)


async def test_a_pending_tool_is_shown_inert_and_approved_activated_and_rolled_back(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    async with tools_console(make_agent, signed_in, INTENT) as (maker, http):
        page = (await http.get("/tools")).text
        item = page[page.index('data-tool="shout@1"') :]
        assert "&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;\\x1b[2K" in item  # inert
        assert "<script>alert" not in page
        assert "Upper-case a text. &lt;b&gt;bold&lt;/b&gt;" in item
        assert '<dd class="valid">yes</dd>' in item
        assert re.search(r'<p id="audit" class="audit-ok">\s*Audit log intact', page)
        csrf = csrf_of(page)

        approved = await http.post("/tools/shout/1/approve", data={"csrf": csrf})
        assert approved.status_code == 303
        assert approved.headers["location"] == "/tools?done=approved%20shout%401"
        assert maker.record("shout", 1).history[-1]["by"] == "console"
        activated = await http.post("/tools/shout/1/activate", data={"csrf": csrf})
        assert activated.status_code == 303 and maker.active_versions() == {"shout": 1}

        maker.build_from_intent({**INTENT, "code": SHOUT})
        maker.approve("shout", 2, by="cli")
        maker.activate("shout", 2, by="cli")
        listed = (await http.get("/tools")).text
        assert "Roll back to this" in listed
        back = await http.post("/tools/shout/1/rollback", data={"csrf": csrf})
        assert back.status_code == 303 and maker.active_versions() == {"shout": 1}
        shown = (await http.get(back.headers["location"])).text
        assert "shout is back at v1" in shown
    by_console = [
        (e["event"], e["version"])
        for e in maker.audit_log.events()
        if (e.get("data") or {}).get("by") == "console"
    ]
    assert by_console == [("tool_approved", 1), ("tool_activated", 1), ("tool_rolled_back", 1)]
    assert maker.verify_audit().ok


async def test_reject_needs_a_reason_and_refused_transitions_are_told(
    make_agent: MakeAgent, signed_in: Open
) -> None:
    async with tools_console(make_agent, signed_in, INTENT) as (maker, http):
        csrf = csrf_of((await http.get("/tools")).text)
        bare = await http.post("/tools/shout/1/reject", data={"csrf": csrf})
        assert bare.status_code == 409 and "say why it is rejected" in bare.text
        early = await http.post("/tools/shout/1/activate", data={"csrf": csrf})
        assert early.status_code == 409 and "approval_required" in early.text
        unknown = await http.post("/tools/nosuch/1/approve", data={"csrf": csrf})
        assert unknown.status_code == 409 and "nosuch" in unknown.text
        odd = await http.post("/tools/shout/1/explode", data={"csrf": csrf})
        assert odd.status_code == 404 and "unknown action" in odd.text
        forged = await http.post("/tools/shout/1/approve", data={"csrf": "forged"})
        assert forged.status_code == 403
        assert maker.record("shout", 1).status.value == "approval_required"
        rejected = await http.post(
            "/tools/shout/1/reject", data={"csrf": csrf, "reason": "no network, please"}
        )
        assert rejected.status_code == 303
    assert maker.record("shout", 1).history[-1]["reason"] == "no network, please"


async def test_a_tampered_audit_log_is_shown_broken(make_agent: MakeAgent, signed_in: Open) -> None:
    maker = ToolsmakerRegistry(".agents/toolsmaker")
    maker.build_from_intent(INTENT)
    log = Path(maker.layout.audit)
    lines = log.read_text().splitlines()
    first = json.loads(lines[0])
    first["event"] = "nothing_happened"
    log.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    agent = make_agent([{"text": "hi"}])
    async with agent:
        page = (await signed_in(agent).get("/tools")).text
    assert 'class="audit-broken problem"' in page and "Audit log BROKEN" in page
