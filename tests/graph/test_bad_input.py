"""Bad input through the Python API: clear errors of the engine's tree, nothing stored wrongly.

The CLI's side of the same cases is ``tests/cli/test_bad_input.py``.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ai_agent import Agent, ToolCategory, ToolSpec, UserPlan
from ai_agent.config import AgentSettings
from ai_agent.errors import ConfigError, InvalidPlanError, InvalidThreadIdError
from ai_agent.testing import ScriptedModel
from tests.graph.conftest import MakeAgent, call, text


def returning(value: Any, name: str = "blob") -> ToolSpec:
    return ToolSpec(
        name,
        lambda args, ctx: value,
        description="Return a value.",
        category=ToolCategory.READ_ONLY,
        parameters={"type": "object", "properties": {}},
    )


async def last_tool_message(agent: Agent, thread_id: str) -> str:
    messages = (await agent.get_state(thread_id))["messages"]
    return str([m for m in messages if m["role"] == "tool"][-1]["content"])


# What a Python tool returns -------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", [b"\x89PNG\r\n\x1a\n", {"status": "ok", "content": {"image": b"\xff\xd8\xff"}}]
)
async def test_bytes_that_are_not_text_are_the_tools_error(
    value: Any, make_agent: MakeAgent
) -> None:
    agent = make_agent([call("blob"), text("done")], tools=[returning(value)])
    paused = await agent.run("fetch it")
    assert paused.status == "paused" and paused.gate is not None
    (issue,) = paused.gate["issues"]
    assert issue["code"] == "TOOL_ERROR" and issue["tool"] == "blob"
    assert issue["message"].startswith("blob: tool 'blob' returned bytes that are not UTF-8 text")
    assert "UnicodeDecodeError" not in issue["message"]
    seen = await last_tool_message(agent, paused.thread_id)
    assert seen.startswith("Error: tool 'blob' returned bytes that are not UTF-8 text (byte 0 is")
    assert seen.endswith("decode its bytes, or base64-encode binary data and say so in the result")


async def test_bytes_that_are_text_are_kept_as_text(make_agent: MakeAgent) -> None:
    agent = make_agent([call("blob"), text("done")], tools=[returning("héllo".encode())])
    result = await agent.run("fetch it")
    assert result.status == "completed"
    assert await last_tool_message(agent, result.thread_id) == "héllo"


async def test_a_value_that_is_not_json_data_is_the_tools_error(make_agent: MakeAgent) -> None:
    class Opaque:
        def __str__(self) -> str:
            raise RuntimeError("no text for you")

    agent = make_agent([call("blob"), text("done")], tools=[returning(Opaque())])
    paused = await agent.run("fetch it")
    assert paused.gate is not None
    (issue,) = paused.gate["issues"]
    assert issue["code"] == "TOOL_ERROR"
    assert issue["message"] == (
        "blob: tool 'blob' returned a value that is not JSON data (RuntimeError: no text for you)"
    )


async def test_a_result_past_the_hard_limit_is_an_error_the_model_sees(
    db: Path, tmp_path: Path
) -> None:
    settings = AgentSettings(tool_config={"max_result_chars": 5000})
    agent = Agent(
        model=ScriptedModel([call("blob"), text("done")]),
        tools=[returning("x" * 6000)],
        checkpoint_path=db,
        memory_path=None,
        settings=settings,
    )
    paused = await agent.run("fetch it")
    assert paused.gate is not None
    (issue,) = paused.gate["issues"]
    assert issue["code"] == "TOOL_ERROR"  # not RATE_LIMIT, whatever words the message uses
    size = len(json.dumps({"status": "ok", "content": "x" * 6000}))
    seen = await last_tool_message(agent, paused.thread_id)
    assert seen == (
        f"Error: tool 'blob' returned {size:,} characters, more than the 5,000 a result may have "
        "(tool_config.max_result_chars); nothing of it was kept. Ask for less: a narrower query, "
        "a smaller range, fewer items"
    )
    (recorded,) = await agent.store.tool_calls(paused.thread_id)
    meta = {"code": "OUTPUT_TOO_LARGE", "chars": size, "max_chars": 5000}
    assert recorded["result"]["meta"] == meta
    assert "x" * 100 not in db.read_bytes().decode("latin-1")
    await agent.aclose()


# Thread ids ----------------------------------------------------------------------------------


async def test_a_task_with_half_a_character_is_refused_before_storing_anything(
    make_agent: MakeAgent,
) -> None:
    # The run's row failed to be written with UnicodeEncodeError, out of run().
    agent = make_agent([text("done")])
    with pytest.raises(ConfigError, match=r"half of a character at position 4 .*give the task as"):
        await agent.run("sum \ud800 invoices")
    assert await agent.store.list_runs() == []
    assert (await agent.run("sum the invoices")).status == "completed"
    await agent.aclose()


def test_a_task_of_bytes_that_are_not_utf8_on_the_command_line(tmp_path: Path) -> None:
    # Python reads such bytes of argv as lone surrogates: a traceback before.
    done = subprocess.run(
        [sys.executable, "-m", "ai_agent.cli", "run", b"sum \xff invoices", "--model", "x"],
        capture_output=True,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 2, err
    assert "the task holds half of a character at position 4" in err
    assert "Traceback" not in err
    with contextlib.closing(sqlite3.connect(tmp_path / ".agents/checkpoints.sqlite")) as conn:
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
        assert "agent_runs" not in tables or conn.execute(
            "SELECT count(*) FROM agent_runs"
        ).fetchone() == (0,)


BAD_IDS = ["", "x" * 100_000, "a\nb", "a/b", "../x", ".hidden", "with space", "é"]


@pytest.mark.parametrize("thread_id", BAD_IDS, ids=lambda v: repr(v[:12]))
async def test_run_refuses_a_malformed_thread_id_before_storing_anything(
    thread_id: str, make_agent: MakeAgent
) -> None:
    agent = make_agent()
    with pytest.raises(InvalidThreadIdError, match="a thread id is 1 to 128 characters"):
        await agent.run("task", thread_id=thread_id)
    assert await agent.store.list_runs() == []
    await agent.aclose()


async def test_every_entry_point_refuses_a_malformed_thread_id(make_agent: MakeAgent) -> None:
    agent = make_agent([call("note"), text("done")])
    done = await agent.run("task")  # a database with a run in it
    bad = "a\nb"
    entry_points = [
        agent.resume(bad, {"instructions": "go"}),
        agent.get_state(bad),
        agent.get_result(bad),
        agent.ahistory(bad),
        agent.afork(bad, "checkpoint"),
        agent.replay(bad),
        agent.timeline(bad),
        agent.tool_output(bad, "out-1-call_0_0"),
        agent.prune(bad),
        agent.submit_plan(bad, {"instructions": "go"}),
        agent.list_plans(thread_id=bad),
        agent.export_html(bad, "page.html"),
    ]
    for entry in entry_points:
        with pytest.raises(InvalidThreadIdError, match=r"invalid thread id 'a\\nb'"):
            await entry
    assert [r["thread_id"] for r in await agent.store.list_runs()] == [done.thread_id]
    await agent.aclose()


async def test_the_ids_the_engine_makes_fit_the_grammar(make_agent: MakeAgent) -> None:
    agent = make_agent([call("note"), text("done")])
    first = await agent.run("task")
    history = await agent.ahistory(first.thread_id)
    fork = await agent.afork(first.thread_id, history[2].checkpoint_id)
    replay = await agent.replay(first.thread_id)
    for thread in (first.thread_id, fork, replay.thread_id):
        assert await agent.get_result(thread) is not None
    await agent.aclose()


# Iterations ----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [0, -1, 1001, 10**9])
def test_max_iterations_is_bounded_on_the_api_too(value: int, db: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        Agent(max_iterations=value, checkpoint_path=db, settings=AgentSettings())
    assert str(caught.value) == (
        f"max_iterations must be at least 1 and at most 1,000 (got {value:,})"
    )


# Plans ----------------------------------------------------------------------------------------


async def test_a_plan_past_the_limit_is_refused_and_the_run_stays_paused(db: Path) -> None:
    settings = AgentSettings(max_plan_chars=5000)
    agent = Agent(
        model=ScriptedModel([call("calculator", expression="1+1"), text("2")]),
        checkpoint_path=db,
        memory_path=None,
        settings=settings,
    )
    paused = await agent.run("add")
    big = {"instructions": "y" * 6000, "activate_tools": ["calculator"]}
    size = len(UserPlan(**big).model_dump_json(exclude={"gate_token"}))
    for attempt in (agent.resume, agent.submit_plan):
        with pytest.raises(InvalidPlanError) as caught:
            await attempt(paused.thread_id, big)
        assert str(caught.value) == (
            f"the plan is {size:,} characters long, more than the 5,000 allowed (max_plan_chars); "
            "shorten it (point to a file instead of pasting it), or raise the setting. The run "
            "is still paused"
        )
    assert (await agent.get_result(paused.thread_id)).status == "paused"
    assert await agent.list_plans() == []
    done = await agent.resume(paused.thread_id, {"activate_tools": ["calculator"]})
    assert done.status == "completed"
    await agent.aclose()
