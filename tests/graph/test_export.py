"""Pictures: the pipeline in Mermaid, and a run's HTML page rendered by headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ai_agent import ToolCategory, UserPlan
from ai_agent.graph.export import mermaid
from ai_agent.graph.html_report import render_html
from tests.graph.conftest import MakeAgent, call, recorder, text

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
)


def chromium() -> str:
    found = shutil.which("chromium")
    if found is None:  # .ci/setup installs Debian's chromium
        pytest.fail("headless Chromium is needed: install Debian's chromium (see .ci/setup)")
    return found


def dump_dom(page: Path, profile: Path) -> str:
    done = subprocess.run(
        [
            chromium(),
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            "--virtual-time-budget=2000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout


async def exported_run(make_agent: MakeAgent, tmp_path: Path) -> tuple[Any, Path]:
    log: list[dict[str, Any]] = []
    turns = [
        {
            **call("calculator", expression="6*7"),
            "usage": {"prompt_tokens": 40, "completion_tokens": 9},
        },
        call("note", text="</script><b>bold?</b>"),
        text("all noted"),
    ]
    tools = ["calculator", recorder(log, category=ToolCategory.MODIFICATION)]
    agent = make_agent(turns, tools=tools, system_prompt="Keep notes.")
    paused = await agent.run("compute, then take a note")
    done = await agent.resume(paused.thread_id, UserPlan(approve=["*"], instructions="go ahead"))
    page = await agent.export_html(done.thread_id, tmp_path / "out" / "run.html")
    return done, page


async def test_the_html_export_renders_in_chromium(make_agent: MakeAgent, tmp_path: Path) -> None:
    done, page = await exported_run(make_agent, tmp_path)
    source = page.read_text(encoding="utf-8")
    # Self-contained: nothing to fetch.
    assert not re.search(r"https?://|<link|\bsrc=|@import|url\((?!#)", source)

    dom = dump_dom(page, tmp_path / "profile")
    # Rendered by the page's own inline script: proof that it ran.
    assert '<p id="js-summary" data-rendered="yes">20 stage runs, 2 tool call(s), 3 model ' in dom
    # 49 reported by the server for the first request, estimates for the two that reported none.
    total = done.usage["total_tokens"]
    assert total > 49
    assert f"{total} tokens" in dom
    assert done.thread_id in dom
    for shown in (
        "Path through the graph",
        "Timeline",
        "Gate decisions and plans",
        "APPROVAL_REQUIRED",
        "go ahead",  # the plan's instructions
        "all noted",  # the answer
        "Keep notes.",  # the system prompt that was sent
        '"expression": "6*7"',  # a tool call's input
        "noted {'text': '&lt;/script&gt;&lt;b&gt;bold?&lt;/b&gt;'}",  # an output, escaped
    ):
        assert shown in dom, shown
    assert "<b>bold?</b>" not in dom  # no value is ever markup
    timeline = dom.split('id="timeline"')[1].split("</table>")[0]
    assert timeline.count("<tr>") == 21  # a header and twenty stage runs
    assert re.search(r"<text[^>]*>gate</text><text[^>]*>x3</text>", dom)


def test_render_html_escapes_everything() -> None:
    report: dict[str, Any] = {
        "thread_id": "t<1>",
        "task": "<script>alert(1)</script>",
        "status": "paused",
        "origin": "fork",
        "parent_thread_id": "p&q",
        "created_at": None,
        "final_text": None,
        "error": None,
        "system_prompt": "",
        "iterations": 0,
        "usage": {"total_tokens": 0, "prompt_tokens": 0, "completion_tokens": 0},
        "timeline": [],
        "path": [],
        "visits": {},
        "tool_calls": [],
        "gates": [],
        "pending_gate": {"prompt": "approve <x>?"},
        "plans": [],
        "messages": [{"role": "user", "content": "</script>", "kind": "task"}],
        "model_calls": [],
        "history": [],
        "mermaid": "graph TD;",
    }
    page = render_html(report)
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "approve &lt;x&gt;?" in page and "No tool calls." in page and "No plans." in page
    data = page.split('id="run-data">')[1].split("</script>")[0]
    assert "\\u003c/script>" in data  # the embedded JSON cannot close its element


def test_mermaid_draws_the_pipeline_and_marks_a_path() -> None:
    plain = mermaid()
    assert plain.startswith("---") and "graph TD;" in plain
    for edge in ("recall --> draft;", "gate -.-> draft;", "decide -.-> finalize;"):
        assert edge in plain
    marked = mermaid({"draft": 3, "gate": 1})
    assert '\tdraft("draft x3"):::visited' in marked
    assert '\tgate("gate x1"):::visited' in marked
    assert "\trecall(recall)" in marked


async def test_the_export_of_a_paused_run_shows_the_gate_that_waits(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    log: list[dict[str, Any]] = []
    tools = [recorder(log, category=ToolCategory.MODIFICATION)]
    agent = make_agent([call("note", text="x"), text("done")], tools=tools)
    paused = await agent.run("write")
    page = (await agent.export_html(paused.thread_id, tmp_path / "run.html")).read_text()
    gates = page.split('id="gates"')[1].split("</section>")[0]
    assert "The gate never ran" not in gates
    assert re.search(r"<td>1</td><td>1\.00</td><td>paused</td><td>APPROVAL_REQUIRED</td>", gates)
    assert "Waiting for a plan" in gates
