"""Large tool outputs are summarized before the model sees them; the full output stays kept.

The default summary is extractive (`ai_agent.tools.extractive`): the output's own first and
last lines and the lines richest in rare words, under a header that says it is a summary, how
it was made and where the whole output is.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from ai_agent import AgentSettings, ToolCategory, ToolSpec
from ai_agent.cli import main
from ai_agent.state import ToolCall, ToolResult
from ai_agent.testing import FunctionModel
from ai_agent.tools.extractive import HEADER_START
from ai_agent.tools.results import bound_output, is_bounded
from tests.graph.conftest import MakeAgent, call, text

LOG = "\n".join(
    ["collected 400 items"]
    + [f"tests/test_{i:03}.py::test_case PASSED" for i in range(400)]
    + ["== 399 passed, 1 failed in 12.3s =="]
).replace(
    "tests/test_217.py::test_case PASSED",
    "tests/test_217.py::test_case FAILED KeyError: 'tide_table'",
)


WHERE: tuple[str, int, ToolCall] = ("t", 1, {"id": "c1.0", "name": "dump", "args": {}})


def dump(output: Any) -> ToolSpec:
    return ToolSpec(
        "dump", lambda a, c: output, description="Dump.", category=ToolCategory.READ_ONLY
    )


async def summarized_run(make_agent: MakeAgent, output: Any, limit: int) -> tuple[str, Any]:
    seen: list[str] = []

    def reply(messages: list[dict[str, Any]], info: dict[str, Any]) -> dict[str, Any]:
        if info["turn"] == 0:
            return call("dump")
        seen.append(messages[-1]["content"])
        return text("ok")

    settings = AgentSettings(tool_config={"max_output_chars": limit})
    agent = make_agent(model=FunctionModel(reply), tools=[dump(output)], settings=settings)
    result = await agent.run("dump it")
    return seen[0], (agent, result)


async def test_a_long_log_reaches_the_model_as_an_extractive_summary(
    make_agent: MakeAgent,
) -> None:
    shown, (agent, result) = await summarized_run(make_agent, LOG, 2000)
    ref = "out-1-c1.0"
    assert len(shown) <= 2000
    header = shown.splitlines()[0]
    assert header.startswith(f"{HEADER_START}{len(LOG):,}-character output (402 lines): ")
    assert f"the full output is kept as {ref} (ai-agent output {result.thread_id} {ref})" in header
    lines = shown.splitlines()[1:]
    # The first and last lines, and the one line that differs, all verbatim and in order.
    assert lines[0] == "collected 400 items" and lines[-1] == "== 399 passed, 1 failed in 12.3s =="
    failed = "tests/test_217.py::test_case FAILED KeyError: 'tide_table'"
    assert failed in lines
    assert all(line in LOG.splitlines() or line.startswith("[... ") for line in lines)
    kept = (await agent.get_state(result.thread_id))["results"][0]["result"]
    assert kept["content"] == shown
    assert kept["meta"] == {
        "clipped": True,
        "full_chars": len(LOG),
        "output_ref": ref,
        "summary": "extractive",
    }
    # The whole output stays available to inspection.
    assert await agent.tool_output(result.thread_id, ref) == LOG


def test_the_cli_prints_the_whole_output(
    make_agent: MakeAgent, db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = make_agent(
        [call("dump"), text("ok")],
        tools=[dump(LOG)],
        settings=AgentSettings(tool_config={"max_output_chars": 1000}),
    )
    result = agent.run_sync("dump it")
    capsys.readouterr()
    assert main(["output", result.thread_id, "out-1-c1.0", "--db", str(db)]) == 0
    assert capsys.readouterr().out.rstrip("\n") == LOG


async def test_the_same_output_gives_the_same_summary(make_agent: MakeAgent) -> None:
    first, _ = await summarized_run(make_agent, LOG, 1500)
    second, _ = await summarized_run(make_agent, LOG, 1500)
    assert first.split("\n", 1)[1] == second.split("\n", 1)[1]  # the header names its run


async def test_json_results_are_summarized_item_by_item(make_agent: MakeAgent) -> None:
    hits = [{"path": f"notes/n{i}.md", "score": round(1 - i / 100, 2)} for i in range(200)]
    hits[120]["path"] = "notes/zebra-crossing.md"
    shown, _ = await summarized_run(make_agent, {"ok": True, "data": hits}, 1500)
    assert len(shown) <= 1500
    body = shown.split("\n", 1)[1]
    assert body.startswith('{\n "ok": true,\n "data": [')
    assert '   "path": "notes/zebra-crossing.md",' in body.splitlines()


async def test_a_summary_is_not_summarized_again() -> None:
    result = ToolResult(status="ok", content=LOG)
    where = WHERE
    shown, bounded = await bound_output(None, where, LOG, result, 1200)
    assert shown.startswith(HEADER_START) and is_bounded(shown, bounded, 1200)
    again = await bound_output(None, ("other", 2, WHERE[2]), shown, bounded, 1200)
    assert again == (shown, bounded)


async def test_a_tool_cannot_claim_its_long_output_is_a_summary() -> None:
    fake_meta = {"clipped": True, "full_chars": 10**6, "output_ref": "x", "summary": "extractive"}
    long = f"{HEADER_START}1,000,000-character output" + "y" * 5000
    result = ToolResult(status="ok", content=long, meta=fake_meta)
    where = WHERE
    shown, _ = await bound_output(None, where, long, result, 1200)
    assert len(shown) <= 1200


async def test_where_no_summary_fits_the_output_is_clipped() -> None:
    result = ToolResult(status="ok", content=LOG)
    where = WHERE
    shown, bounded = await bound_output(None, where, LOG, result, 250)
    assert bounded["meta"]["summary"] == "clip" and "characters clipped" in shown


def test_clip_is_the_other_method() -> None:
    assert AgentSettings().tool_config.output_summary == "extractive"
    result = ToolResult(status="ok", content=LOG)
    where = WHERE
    shown, bounded = asyncio.run(bound_output(None, where, LOG, result, 1200, "clip"))
    assert shown.startswith("collected 400 items") and bounded["meta"]["summary"] == "clip"
    assert json.dumps(bounded)  # JSON data, as checkpoints need
