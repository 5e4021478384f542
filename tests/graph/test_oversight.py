"""Human oversight in runs: categories, first-time gates, escalations, previews, forks, secrets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ai_agent import Agent, GateReport, RunResult, ToolCategory, ToolSpec, UserPlan
from ai_agent.config import AgentSettings
from tests.graph.conftest import MakeAgent, call, recorder, text


def gate(result: RunResult) -> GateReport:
    assert result.gate is not None, result
    return result.gate


def calls(name: str, n: int, **args: Any) -> list[Any]:
    return [call(name, **{**args, "text": f"t{i}"}) for i in range(n)] + [text("done")]


async def resume_all(agent: Agent, result: Any, **plan: Any) -> tuple[Any, int]:
    pauses = 0
    while result.status == "paused":
        pauses += 1
        result = await agent.resume(result.thread_id, UserPlan(**plan))
    return result, pauses


# The first-time gate of external tools ---------------------------------------------------------


async def test_first_use_of_an_external_tool_pauses_even_under_auto(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    web = recorder(log, category=ToolCategory.EXTERNAL, name="web")
    agent = make_agent(calls("web", 3), tools=[web], approvals={"external": "auto"})
    paused = await agent.run("search three times")
    assert paused.status == "paused" and log == []
    issue = gate(paused)["issues"][0]
    assert (issue["code"], issue["severity"]) == ("APPROVAL_REQUIRED", 1.0)
    assert issue["message"] == (
        "web is an external tool and this is its first use in this run (first-time gate)"
    )
    done, pauses = await resume_all(agent, paused, approve=["*"])
    assert done.status == "completed" and pauses == 1 and len(log) == 3
    assert (await agent.get_state(done.thread_id))["tools_used"] == ["web"]
    # A new run gates again: the first use is per run.
    again = await agent.run("search again")
    assert again.status == "paused"


async def test_confirm_asks_for_every_external_call(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    web = recorder(log, category=ToolCategory.EXTERNAL, name="web")
    agent = make_agent(calls("web", 2), tools=[web])
    paused = await agent.run("search")
    assert gate(paused)["issues"][0]["message"] == "web is an external tool and needs confirmation"
    _, pauses = await resume_all(agent, paused, approve=["*"])
    assert pauses == 2 and len(log) == 2


async def test_unattended_or_a_disabled_gate_runs_external_tools_at_once(
    make_agent: MakeAgent,
) -> None:
    log: list[dict[str, Any]] = []
    web = recorder(log, category=ToolCategory.EXTERNAL, name="web")
    batch = make_agent(calls("web", 1), tools=[web], unattended=True)
    assert (await batch.run("search")).status == "completed"
    settings = AgentSettings(tool_config={"first_use_gate": False})
    no_gate = make_agent(
        calls("web", 1), tools=[web], approvals={"external": "auto"}, settings=settings
    )
    assert (await no_gate.run("search")).status == "completed"
    assert len(log) == 2


async def test_note_taking_runs_unless_the_policy_asks_for_confirmation(
    make_agent: MakeAgent,
) -> None:
    log: list[dict[str, Any]] = []
    note = recorder(log, category=ToolCategory.NOTE_TAKING)
    assert (await make_agent(calls("note", 1), tools=[note]).run("note")).status == "completed"
    settings = AgentSettings(approvals={"note_taking": "confirm"})
    careful = make_agent(calls("note", 1), tools=[note], settings=settings)
    paused = await careful.run("note")
    assert gate(paused)["issues"][0]["message"] == (
        "note is a note_taking tool and needs confirmation"
    )
    assert len(log) == 1


# Escalations and previews ----------------------------------------------------------------------


async def test_a_delete_asks_even_when_modifications_run_unasked(make_agent: MakeAgent) -> None:
    Path("a.txt").write_text("a")
    Path("b.txt").write_text("b")
    turns = [
        call("delete_file", path="a.txt"),
        call("delete_file", path="b.txt", require_confirmation=False),
        text("done"),
    ]
    agent = make_agent(turns, tools=["delete_file"], approvals={"modification": "auto"})
    paused = await agent.run("clean up")
    assert gate(paused)["issues"][0]["message"] == (
        "delete_file asks for confirmation before deleting 'a.txt'"
    )
    assert gate(paused)["pending"][0]["preview"] == "delete_file: delete a.txt (file, 1 bytes)"
    assert Path("a.txt").exists()
    done = await agent.resume(paused.thread_id, UserPlan(approve=["*"]))
    assert done.status == "completed"
    assert not Path("a.txt").exists() and not Path("b.txt").exists()


async def test_a_tool_wide_grant_does_not_cover_a_destructive_command(
    make_agent: MakeAgent,
) -> None:
    Path("keep.txt").write_text("k")
    turns = [call("run_bash", command="ls"), call("run_bash", command="rm keep.txt"), text("ok")]
    agent = make_agent(turns, tools=["run_bash"])
    first = await agent.run("list then remove")
    preview = gate(first)["pending"][0]["preview"]
    assert preview == "run_bash in . (timeout 30s, no OS sandbox):\n$ ls"
    second = await agent.resume(first.thread_id, UserPlan(approve=["*"], grant_scope="tool"))
    assert second.status == "paused"
    issue = gate(second)["issues"][0]["message"]
    assert issue == (
        "run_bash is a modification tool and needs approval; "
        "run_bash: destructive command: rm keep.txt"
    )
    assert Path("keep.txt").exists()
    cancelled = await agent.resume(second.thread_id, UserPlan(deny=["*"]))
    assert cancelled.status == "completed" and Path("keep.txt").exists()


async def test_a_write_is_previewed_as_a_diff(make_agent: MakeAgent) -> None:
    Path("config.ini").write_text("debug = false\nname = x\n")
    turns = [call("write_file", path="config.ini", content="debug = true\nname = x\n"), text("ok")]
    agent = make_agent(turns, tools=["write_file"])
    paused = await agent.run("turn on debug")
    assert gate(paused)["pending"][0]["preview"] == (
        "write_file config.ini (replace):\n--- a/config.ini\n+++ b/config.ini\n@@ -1,2 +1,2 @@\n"
        "-debug = false\n+debug = true\n name = x"
    )
    assert "write_file config.ini (replace):" in gate(paused)["prompt"]
    denied = await agent.resume(paused.thread_id, UserPlan(deny=["*"]))
    messages = (await agent.get_state(denied.thread_id))["messages"]
    assert messages[2]["content"] == "Tool execution cancelled"
    assert Path("config.ini").read_text() == "debug = false\nname = x\n"


async def test_a_denied_category_never_runs_even_unattended(make_agent: MakeAgent) -> None:
    agent = make_agent(
        [call("write_file", path="x.txt", content="x"), text("ok")],
        tools=["write_file"],
        approvals={"modification": "deny"},
        unattended=True,
    )
    result = await agent.run("write")
    assert result.status == "completed" and not Path("x.txt").exists()


# Forks: grants and first uses live in state ----------------------------------------------------


async def fork_at_first_pause(agent: Agent, thread_id: str) -> str:
    """A new run branched off the checkpoint where the original first paused for a person."""
    entries = await agent.ahistory(thread_id)
    first_pause = next(e for e in entries if e.paused)
    return await agent.afork(thread_id, first_pause.checkpoint_id)


async def test_a_fork_from_before_a_grant_does_not_inherit_it(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    note = recorder(log, category=ToolCategory.MODIFICATION)
    agent = make_agent(calls("note", 2), tools=[note])
    paused = await agent.run("write twice")
    done = await agent.resume(paused.thread_id, UserPlan(approve=["*"], grant_scope="tool"))
    assert done.status == "completed" and len(log) == 2
    fork = await fork_at_first_pause(agent, paused.thread_id)
    assert (await agent.get_state(fork))["grants"] == []
    # On the fork only this call is approved: the next one waits for a person again.
    forked = await agent.resume(fork, UserPlan(approve=["*"], grant_scope="call"))
    assert forked.status == "paused" and len(log) == 3
    assert gate(forked)["issues"][0]["code"] == "APPROVAL_REQUIRED"
    state = await agent.get_state(fork)
    assert [g["scope"] for g in state["grants"]] == ["call"]
    original = await agent.get_state(paused.thread_id)
    assert [g["scope"] for g in original["grants"]] == ["tool"]  # the original is untouched


async def test_a_fork_from_before_a_first_use_gates_again(make_agent: MakeAgent) -> None:
    log: list[dict[str, Any]] = []
    web = recorder(log, category=ToolCategory.EXTERNAL, name="web")
    agent = make_agent(calls("web", 2), tools=[web], approvals={"external": "auto"})
    paused = await agent.run("search twice")
    done = await agent.resume(paused.thread_id, UserPlan(approve=["*"]))
    assert done.status == "completed" and len(log) == 2
    assert (await agent.get_state(done.thread_id))["tools_used"] == ["web"]
    fork = await fork_at_first_pause(agent, paused.thread_id)
    forked = await agent.resume(fork, UserPlan(deny=["*"]))
    assert forked.status == "paused" and len(log) == 2
    assert "first use" in gate(forked)["issues"][0]["message"]
    assert not (await agent.get_state(fork)).get("tools_used")


# Secrets ---------------------------------------------------------------------------------------

CANARY = "tool-canary-91b2c3d4e5"


async def test_a_tools_secret_never_reaches_state_trace_or_the_database(
    make_agent: MakeAgent, monkeypatch: pytest.MonkeyPatch, db: Path, tmp_path: Path
) -> None:
    monkeypatch.setenv("LEAKY_API_KEY", CANARY)

    def leaky(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        key = ctx["env"]["LEAKY_API_KEY"]
        if args.get("explode"):
            raise RuntimeError(f"request with key {key} failed")
        return {"status": "error", "error": f"401 for key {key}", "meta": {"sent": key}}

    spec = ToolSpec(
        "leaky",
        leaky,
        requires_env=["LEAKY_API_KEY"],
        description="Call a service.",
        category=ToolCategory.READ_ONLY,
        format_result=lambda r: f"summary with {CANARY}",
    )
    turns = [
        call("leaky"),
        call("leaky", explode=True),
        call("run_bash", command="echo $LEAKY_API_KEY; env | grep LEAKY || true"),
        text("done"),
    ]
    agent = make_agent(turns, tools=[spec, "run_bash"], gate_threshold=1.0, unattended=True)
    result = await agent.run("use the service")
    assert result.status == "completed"
    state = await agent.get_state(result.thread_id)
    dumped = json.dumps({"state": state, "result": result.to_dict()}, default=str)
    assert CANARY not in dumped and "***" in dumped
    for path in [p for p in tmp_path.rglob("*") if p.is_file()]:
        assert CANARY.encode() not in path.read_bytes(), path
    assert db.exists()


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        (
            "write_file",
            {"path": "a.txt\nResume with: ai-agent resume r --approve all", "content": "x"},
        ),
        ("delete_file", {"path": "a.txt\nResume with: ai-agent resume r --approve all"}),
        ("run_bash", {"command": "ls", "working_dir": "w\nResume with: ai-agent resume r"}),
        ("run_bash", {"command": "ls", "env": {"A\nResume with: ai-agent resume r": "1"}}),
    ],
    ids=["write", "delete", "bash folder", "bash env"],
)
async def test_a_name_with_a_line_break_shows_on_one_line_of_the_gate(
    make_agent: MakeAgent, tool: str, args: dict[str, Any]
) -> None:
    # The preview's own lines are indented under the call, but a path that breaks the line
    # showed the person "write_file a.txt" with the rest below, as if it were the preview's.
    agent = make_agent([call(tool, **args), text("ok")], tools=[tool])
    paused = await agent.run("do it")
    prompt = gate(paused)["prompt"]
    lines = prompt.splitlines()
    assert [line for line in lines if line.lstrip().startswith("Resume with")] == [lines[-1]]
    preview = gate(paused)["pending"][0]["preview"]
    assert any("\\nResume with: ai-agent resume r" in line for line in preview.splitlines())
