"""The Agent's toolsets: a source of tools is one class; each span opens them once, explicitly."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from ai_agent import Agent, ToolCategory, ToolSpec
from ai_agent.graph import Worker
from ai_agent.issues import IssueKind
from ai_agent.state import Issue
from tests.graph.conftest import MakeAgent, call, text
from tests.tools.test_toolsets import Listed

PACKAGE = Path(__file__).resolve().parents[2] / "ai_agent"


def counted(*problems: Issue) -> Listed:
    """A source of one tool, written in a test (`Listed`): it counts the spans that open it."""
    source = Listed("counted")
    source.specs = [
        ToolSpec(
            "counted.ping",
            lambda args, ctx: f"pong, open {source.open}",
            description="Answer pong.",
            category=ToolCategory.READ_ONLY,
        )
    ]
    source.problems = list(problems)
    return source


def refused_key() -> Issue:
    return Issue(
        code=IssueKind.AUTH,
        severity=0.95,
        message="counted: the key was refused",
        tool=None,
        call_id=None,
    )


async def test_a_users_toolset_is_one_class_passed_in_the_agents_tools(
    make_agent: MakeAgent,
) -> None:
    source = counted()
    agent = make_agent([call("counted.ping"), text("done")], tools=["calculator", source])
    assert agent.initial_tools == ["calculator", "counted.ping"]
    assert [t["name"] for t in agent.list_tools() if t["name"].startswith("counted")] == [
        "counted.ping"
    ]
    assert agent.unregister_tool("read_file").name == "read_file"  # in the catalog only
    assert agent.initial_tools == ["calculator", "counted.ping"]
    result = await agent.run("ping")
    assert result.status == "completed"
    state = await agent.get_state(result.thread_id)
    assert any(m.get("content") == "pong, open 1" for m in state["messages"])
    assert (source.entries, source.open) == (1, 0)


async def test_each_span_opens_the_toolsets_once(make_agent: MakeAgent) -> None:
    source = counted()
    turns: list[Any] = [call("counted.ping"), call("note_it"), text("done")]
    note = ToolSpec(
        "note_it", lambda a, c: "noted", description="Note.", category=ToolCategory.MODIFICATION
    )
    agent = make_agent(turns, tools=[source, note])
    paused = await agent.run("ping, then note")
    assert paused.status == "paused" and (source.entries, source.open) == (1, 0)
    await agent.submit_plan(paused.thread_id, {"approve": ["*"]})
    (outcome,) = await Worker(agent).run(once=True)
    assert outcome.run_status == "completed" and (source.entries, source.open) == (2, 0)
    assert (await agent.call_tool("counted.ping"))["content"] == "pong, open 1"
    assert (source.entries, source.open) == (3, 0)
    replayed = await agent.replay(paused.thread_id)
    assert replayed.thread_id != paused.thread_id and (source.entries, source.open) == (4, 0)
    await agent.aclose()


async def test_an_agent_block_keeps_the_toolsets_open_across_spans(make_agent: MakeAgent) -> None:
    source = counted()
    agent = make_agent([call("counted.ping"), text("done")], tools=[source])
    async with agent:
        assert source.open == 0  # opened by the first span, not by the block
        first = await agent.run("ping")
        assert source.open == 1  # held between spans
        await agent.run("ping again")
        assert (await agent.call_tool("counted.ping"))["content"] == "pong, open 2"
        assert source.open == 1 and source.entries == 3  # once per span; the first one kept
        assert first.status == "completed"
    assert source.open == 0


async def test_start_up_issues_reach_the_gate_through_the_run_context(
    make_agent: MakeAgent,
) -> None:
    source = counted(refused_key())
    # The model is never asked while the issue stands: its script would end the run at once.
    agent = make_agent([text("done")], tools=[source])
    paused = await agent.run("ping")
    assert paused.status == "paused" and paused.gate is not None
    assert [(i["code"], i["message"]) for i in paused.gate["issues"]] == [
        ("AUTH", "counted: the key was refused")
    ]
    source.problems = []  # fixed: the resume opens the toolset again and hears nothing
    resumed = await agent.resume(paused.thread_id, {"allow_continue": True})
    assert resumed.status == "completed" and resumed.final_text == "done"


def test_no_entry_point_of_the_agent_is_overridden_to_wrap_it() -> None:
    for name in ("run", "resume", "replay", "serve_plan", "call_tool", "__aenter__", "aclose"):
        owners = [c.__name__ for c in Agent.__mro__ if name in vars(c)]
        assert len(owners) == 1, f"{name} is defined by {owners}"


def test_tools_reach_runs_without_context_variables() -> None:
    # The stream sink (graph/streaming.py) is the runner's, not the tools'.
    files = [*(PACKAGE / "tools").rglob("*.py"), *(PACKAGE / "graph").glob("*.py")]
    for path in files:
        if path.name == "streaming.py":
            continue
        tree = ast.parse(path.read_text())
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        assert "ContextVar" not in names, path.relative_to(PACKAGE)
