"""Hostile rule rows: a row that says two things is never used, and every listing says so.

Real runs over a SQLite file with the scripted model. An ``args`` rule holds the arguments a
person approved twice: as the digest act matches calls by, and as the JSON that ``rules list``
and the console show. A row changed so the two disagree shows one call and lets another through.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ai_agent import Agent, ToolCategory, ToolSpec, UserPlan
from ai_agent.graph import rule_allows
from ai_agent.tools.policy import args_hash
from tests.graph.conftest import MakeAgent, call, text


def _shell(log: list[str]) -> ToolSpec:
    def fn(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        log.append(args["cmd"])
        return {"status": "ok", "content": "ran"}

    return ToolSpec(
        "shell",
        fn,
        description="Run a command.",
        category=ToolCategory.MODIFICATION,
        parameters={"type": "object", "properties": {"cmd": {"type": "string"}}},
    )


def _agent(make_agent: MakeAgent, log: list[str], cmd: str) -> Agent:
    return make_agent([call("shell", cmd=cmd), text("done")], tools=[_shell(log)])


async def _args_rule(make_agent: MakeAgent, log: list[str], cmd: str) -> Agent:
    agent = _agent(make_agent, log, cmd)
    await agent.run("go", thread_id="made")
    await agent.resume("made", UserPlan(approve=["*"], always_allow="args"))
    return agent


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            """args = '{"cmd": "ls"}'""",
            "shows arguments that are not the ones its digest was made from",
        ),
        ("args = NULL", "is for some arguments but shows none"),
    ],
)
async def test_an_args_rule_whose_shown_arguments_are_not_its_digests_is_not_used(
    make_agent: MakeAgent, db: Path, change: str, problem: str
) -> None:
    log: list[str] = []
    agent = await _args_rule(make_agent, log, "rm -rf ~")
    # The row now shows a harmless command, and its digest is still that of rm -rf.
    with sqlite3.connect(db) as conn:
        conn.execute(f"UPDATE agent_rules SET {change}")
    (row,) = await agent.store.list_rules()
    assert rule_allows(row).startswith(f"NOT USED: rule {row['id']} ")
    assert problem in rule_allows(row)
    later = _agent(make_agent, log, "rm -rf ~")
    paused = await later.run("go", thread_id="later")
    assert paused.status == "paused" and log == ["rm -rf ~"]  # only the approved run
    assert paused.gate is not None
    assert problem in paused.gate["issues"][0]["message"]


async def test_an_honest_args_rule_still_lets_its_arguments_through(
    make_agent: MakeAgent,
) -> None:
    log: list[str] = []
    args = {"cmd": "caf\u00e9 -1.0e-7 \u2028 \\u00e9 \U0001f600"}
    await _args_rule(make_agent, log, args["cmd"])
    later = _agent(make_agent, log, args["cmd"])
    assert (await later.run("go", thread_id="later")).status == "completed"
    (row,) = await later.store.list_rules()
    assert row["args_hash"] == args_hash(args) and not rule_allows(row).startswith("NOT USED")
