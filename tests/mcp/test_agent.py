"""MCP tools in whole runs: approvals and the gate, start-up failures, crashes, resume, lifecycle,
and a canary key that must never be written anywhere."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ai_agent import Agent, UserPlan
from ai_agent.config import AgentSettings, McpServerConfig
from ai_agent.context import Event
from ai_agent.errors import ApprovalRequiredError, UnknownThreadError
from ai_agent.events import ToolFinished
from ai_agent.testing import FunctionModel, ScriptedModel
from tests.mcp.conftest import (
    KEY,
    REPO,
    HttpServer,
    alive,
    descendants,
    everything_server,
    fastmcp_stdio,
    filesystem_server,
    wait_gone,
)

pytestmark = pytest.mark.timeout(180)


def call(tool: str, **args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool, "args": args}]}


def text(value: str) -> dict[str, Any]:
    return {"text": value}


def make_agent(
    tmp_path: Path, turns: list[Any], servers: list[McpServerConfig], **kwargs: Any
) -> Agent:
    kwargs.setdefault("checkpoint_path", tmp_path / "runs" / "checkpoints.sqlite")
    kwargs.setdefault("memory_path", None)
    kwargs.setdefault("settings", AgentSettings())
    return Agent(model=ScriptedModel(turns), mcp_servers=servers, **kwargs)


async def test_a_run_reads_through_an_mcp_server_without_asking(
    filesystem_entry: Path, tmp_path: Path
) -> None:
    (tmp_path / "note.txt").write_text("the meeting is at noon")
    turns = [call("fs__read_text_file", path=str(tmp_path / "note.txt")), text("noon")]
    agent = make_agent(tmp_path, turns, [filesystem_server(filesystem_entry, tmp_path)])
    before = descendants()
    result = await agent.run("when is the meeting?")
    assert result.status == "completed", result.error
    assert result.final_text == "noon"
    state = await agent.get_state(result.thread_id)
    outcome = state["results"][0]
    assert outcome["call"]["name"] == "fs.read_text_file"
    assert outcome["result"]["content"] == "the meeting is at noon"
    assert next(t for t in result.trace if t["stage"] == "act")["tool"] == "fs.read_text_file"
    # Outside an `async with` block the servers live as long as the run.
    assert wait_gone(descendants() - before) == set()
    await agent.aclose()


async def test_an_mcp_modification_pauses_for_approval_and_a_new_agent_resumes_it(
    filesystem_entry: Path, tmp_path: Path
) -> None:
    target = tmp_path / "out.txt"
    turns = [call("fs__write_file", path=str(target), content="written by MCP"), text("saved")]
    servers = [filesystem_server(filesystem_entry, tmp_path)]
    first = make_agent(tmp_path, turns, servers)
    async with first:
        paused = await first.run("save a note")
    assert paused.status == "paused"
    assert paused.gate is not None
    assert [i["code"] for i in paused.gate["issues"]] == ["APPROVAL_REQUIRED"]
    pending = paused.gate["pending"][0]
    assert pending["call"]["name"] == "fs.write_file"
    assert "on MCP server 'fs' (stdio: node" in pending["preview"]
    assert not target.exists()
    # Another Agent (as another process would build it) connects again and runs the call.
    second = make_agent(tmp_path, turns, servers)
    async with second:
        done = await second.resume(paused.thread_id, UserPlan(approve=["*"]))
    assert done.status == "completed", done.error
    assert target.read_text() == "written by MCP"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COV_CORE")}
    return subprocess.run(
        [sys.executable, "-m", "ai_agent.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_resume_in_a_new_process_reconnects(filesystem_entry: Path, tmp_path: Path) -> None:
    target = tmp_path / "from-cli.txt"
    config = tmp_path / "mcp.yaml"
    config.write_text(
        "mcp_servers:\n"
        "  - name: fs\n"
        "    command: node\n"
        f"    args: [{json.dumps(str(filesystem_entry))}, {json.dumps(str(tmp_path))}]\n"
    )
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [call("fs__write_file", path=str(target), content="two processes"), text("done")]
        )
    )
    common = ["--mcp-config", str(config), "--model", f"scripted:{script}", "--db", "c.sqlite"]
    run = _cli("run", "write it", "--thread-id", "t1", "--no-stream", *common, cwd=tmp_path)
    assert run.returncode == 3, run.stderr  # paused for approval
    assert "fs.write_file" in run.stdout
    assert "[mcp] MCP server 'fs' started" in run.stderr
    resume = _cli("resume", "t1", "--approve", "all", "--no-stream", *common, cwd=tmp_path)
    assert resume.returncode == 0, resume.stderr
    assert resume.stdout.strip() == "done"
    assert target.read_text() == "two processes"


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
async def test_a_refused_key_pauses_the_run_with_an_auth_issue_and_a_fixed_key_resumes(
    start_fastmcp: Callable[..., HttpServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    transport: str,
) -> None:
    server = start_fastmcp(transport, key=True)
    monkeypatch.setenv("SECURED_KEY", "wrong-key-4242")
    asked: list[list[str]] = []

    def reply(messages: list[dict[str, Any]], info: dict[str, Any]) -> dict[str, Any]:
        names = [t["function"]["name"] for t in info["tools"]]
        asked.append(names)
        if "secured__echo" in names and not any(m["role"] == "tool" for m in messages):
            return call("secured__echo", text="through")
        return text("answered")

    config = McpServerConfig(
        name="secured",
        url=server.url,
        transport="sse" if transport == "sse" else "streamable_http",
        auth={"key_env": "SECURED_KEY"},
    )
    agent = Agent(
        model=FunctionModel(reply),
        mcp_servers=[config],
        checkpoint_path=tmp_path / "c.sqlite",
        memory_path=None,
        settings=AgentSettings(),
    )
    async with agent:
        paused = await agent.run("use the secured service")
        assert paused.status == "paused"
        assert paused.gate is not None
        issue = paused.gate["issues"][0]
        assert issue["code"] == "AUTH"
        assert issue["severity"] == 0.95
        assert "MCP server 'secured' refused the credentials" in issue["message"]
        assert "wrong-key-4242" not in json.dumps(paused.to_dict())
        assert asked == []  # the model was not asked anything before the gate
        assert "fix the credentials" in paused.gate["prompt"] or paused.gate["options"]
        # Still wrong: the resume pauses again, with the same issue.
        again = await agent.resume(paused.thread_id, UserPlan(instructions="retry"))
        assert again.status == "paused"
        assert again.gate is not None
        assert again.gate["issues"][0]["code"] == "AUTH"
        monkeypatch.setenv("SECURED_KEY", KEY)
        done = await agent.resume(paused.thread_id, UserPlan(instructions="the key is fixed"))
    assert done.status == "completed", done.error
    assert "secured__echo" in asked[0]  # the plan activated the server's tools
    state = await agent.get_state(done.thread_id)
    assert state["results"][-1]["result"]["content"] == "through"


async def test_a_missing_variable_is_a_missing_env_issue(
    start_fastmcp: Callable[..., HttpServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NEVER_SET_KEY", raising=False)
    server = start_fastmcp("streamable-http", key=True)
    config = McpServerConfig(name="api", url=server.url, auth={"key": "${NEVER_SET_KEY}"})
    result = await make_agent(tmp_path, [text("no")], [config]).run("go")
    assert result.status == "paused"
    assert result.gate is not None
    issue = result.gate["issues"][0]
    assert issue["code"] == "MISSING_ENV"
    assert "NEVER_SET_KEY is not set" in issue["message"]
    assert "set the missing environment variable" in " ".join(result.gate["options"])


async def test_an_optional_server_that_fails_only_loses_its_tools(
    everything_entry: Path, tmp_path: Path
) -> None:
    events: list[Event] = []
    servers = [
        everything_server(everything_entry),
        McpServerConfig(name="extra", url="http://127.0.0.1:9/mcp", required=False),
    ]
    turns = [call("every__echo", message="hi"), text("fine")]
    result = await make_agent(tmp_path, turns, servers, on_event=events.append).run("go")
    assert result.status == "completed", result.error
    details = [e.get("detail", "") for e in events if e.get("type") == "mcp"]
    assert any("MCP server 'extra' failed" in d for d in details)


async def test_a_crash_mid_run_is_a_tool_error_at_the_gate(tmp_path: Path) -> None:
    turns = [call("py__crash"), text("after")]
    result = await make_agent(tmp_path, turns, [fastmcp_stdio()]).run("crash it")
    assert result.status == "paused"
    assert result.gate is not None
    issue = result.gate["issues"][0]
    assert issue["code"] == "TOOL_ERROR"
    assert issue["tool"] == "py.crash"
    assert "MCP server 'py' exited (exit code 3) during crash" in issue["message"]


async def test_after_a_crash_the_next_call_in_the_run_works(tmp_path: Path) -> None:
    turns = [call("py__crash"), call("py__echo", text="still alive"), text("done")]
    agent = make_agent(tmp_path, turns, [fastmcp_stdio()], gate_threshold=1.0)
    result = await agent.run("crash, then go on")
    assert result.status == "completed", result.error
    state = await agent.get_state(result.thread_id)
    crashed, echoed = (r["result"] for r in state["results"])
    assert crashed["meta"]["code"] == "MCP_SERVER_CRASHED"
    assert echoed["content"] == "still alive"


async def test_an_mcp_call_that_hangs_times_out_in_a_run(tmp_path: Path) -> None:
    turns = [call("py__hang"), text("gave up")]
    agent = make_agent(tmp_path, turns, [fastmcp_stdio(timeout=1.0)], gate_threshold=1.0)
    result = await agent.run("wait forever")
    assert result.status == "completed"
    state = await agent.get_state(result.thread_id)
    assert state["results"][0]["result"]["meta"]["code"] == "TIMEOUT"


async def test_sessions_stay_open_for_an_agent_block_and_close_with_it(tmp_path: Path) -> None:
    turns = [call("py__count"), text("counted")]
    # count says it changes something (readOnlyHint false): a modification, allowed here.
    agent = make_agent(tmp_path, turns, [fastmcp_stdio()], approvals={"modification": "auto"})
    before = descendants()
    async with agent:
        one = await agent.run("count")
        pids = {s["pid"] for s in agent.mcp.status()}
        two = await agent.run("count again")
        assert {s["pid"] for s in agent.mcp.status()} == pids  # the same server process
        counts = [
            (await agent.get_state(r.thread_id))["results"][0]["result"]["content"]
            for r in (one, two)
        ]
        assert counts == ["1", "2"]  # state kept across runs in one block
        assert all(pid is not None and alive(pid) for pid in pids)
    assert wait_gone(descendants() - before) == set()
    # Outside a block each run has its own session.
    three = await agent.run("count once more")
    state = await agent.get_state(three.thread_id)
    assert state["results"][0]["result"]["content"] == "1"
    await agent.aclose()


async def test_direct_calls_streams_and_replays_use_the_servers(
    everything_entry: Path, tmp_path: Path
) -> None:
    turns = [call("every__get-sum", a=1, b=2), text("three")]
    agent = make_agent(tmp_path, turns, [everything_server(everything_entry)])
    direct = await agent.call_tool("every.echo", {"message": "direct"})
    assert direct["content"] == "Echo: direct"
    async with agent:
        finished = [e async for e in agent.astream("add") if isinstance(e, ToolFinished)]
        assert [e.tool for e in finished] == ["every.get-sum"]
        original = agent.archive.last_thread
        assert original is not None
        replayed = await agent.replay(original)
    assert replayed.status == "completed"
    assert replayed.final_text == "three"
    assert replayed.divergence is None


async def test_direct_calls_follow_the_policy(filesystem_entry: Path, tmp_path: Path) -> None:
    agent = make_agent(tmp_path, [], [filesystem_server(filesystem_entry, tmp_path)])
    async with agent:
        await agent.mcp.start()
        listing = {t["name"]: t for t in agent.list_tools()}
        assert listing["fs.write_file"]["policy"] == "approve"
        assert listing["fs.read_text_file"]["policy"] == "auto"
        with pytest.raises(ApprovalRequiredError, match=r"fs\.write_file"):
            await agent.call_tool("fs.write_file", {"path": str(tmp_path / "x"), "content": "x"})
        done = await agent.call_tool(
            "fs.write_file", {"path": str(tmp_path / "x"), "content": "x"}, approved=True
        )
    assert done["status"] == "ok"


async def test_a_server_configured_in_the_settings_and_in_files(
    everything_entry: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "work").mkdir(exist_ok=True)
    monkeypatch.chdir(tmp_path / "work")
    Path("config.yaml").write_text(
        "mcp_servers:\n"
        "  - name: every\n"
        "    command: node\n"
        f"    args: [{json.dumps(str(everything_entry))}, stdio]\n"
        "    tools: [echo]\n"
    )
    extra = tmp_path / "more.json"
    extra.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "py": {
                        "command": sys.executable,
                        "args": [str(REPO / "tests" / "mcp" / "servers" / "fastmcp_server.py")],
                    }
                }
            }
        )
    )
    agent = Agent(model=ScriptedModel([text("x")]), mcp_config=extra, memory_path=None)
    assert [s.name for s in agent.mcp.servers] == ["every", "py"]
    async with agent:
        await agent.mcp.start()
        assert "every.echo" in agent.registry
        assert "every.get-sum" not in agent.registry
        assert "py.echo" in agent.registry
        assert "every.echo" in agent.initial_tools


async def test_a_key_never_reaches_logs_traces_checkpoints_or_the_run_store(
    start_fastmcp: Callable[..., HttpServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    canary = "canary-secret-9d41b7"
    server = start_fastmcp("streamable-http", key=True)
    monkeypatch.setenv("GOOD_API_KEY", KEY)
    monkeypatch.setenv("STDIO_SECRET_TOKEN", canary)
    monkeypatch.setenv("WRONG_API_KEY", canary + "-wrong")
    servers = [
        McpServerConfig(name="api", url=server.url, auth={"key_env": "GOOD_API_KEY"}),
        McpServerConfig(
            name="bad", url=server.url, auth={"key": "${WRONG_API_KEY}", "header": "X-API-Key"}
        ),
        fastmcp_stdio("local", env={"SERVICE_TOKEN": "${STDIO_SECRET_TOKEN}"}),
    ]
    turns = [
        call("local__env", name="SERVICE_TOKEN"),  # the server prints the key it was given
        call("api__env", name="TEST_SERVER_KEY"),  # and this one its own key
        text("done"),
    ]
    events: list[Event] = []
    db = tmp_path / "c.sqlite"
    caplog.set_level(logging.DEBUG)
    agent = make_agent(tmp_path, turns, servers, checkpoint_path=db, on_event=events.append)
    async with agent:
        paused = await agent.run("leak the keys")
        assert paused.status == "paused"  # bad's key is refused
        await agent.mcp.remove("bad")
        result = await agent.resume(paused.thread_id, UserPlan(instructions="go on"))
    assert result.status == "completed", result.error
    state = await agent.get_state(result.thread_id)
    outputs = [r["result"] for r in state["results"]]
    assert outputs[0]["content"] == "***"
    assert outputs[1]["content"] == "***"
    places = {
        "result": json.dumps(result.to_dict()) + json.dumps(paused.to_dict()),
        "events": json.dumps(events, default=str),
        "logs": "\n".join(r.getMessage() for r in caplog.records),
        "status": json.dumps(agent.mcp.status()),
    }
    for path in tmp_path.rglob("c.sqlite*"):
        places[path.name] = path.read_bytes().decode("latin-1")
    for where, content in places.items():
        for secret in (canary, KEY):
            assert secret not in content, f"a key leaked into {where}"
    assert "MCP server 'bad' refused the credentials" in places["result"]


async def test_resumes_that_deny_or_name_no_run(filesystem_entry: Path, tmp_path: Path) -> None:
    target = tmp_path / "never.txt"
    turns = [call("fs__write_file", path=str(target), content="no"), text("stopped")]
    agent = make_agent(tmp_path, turns, [filesystem_server(filesystem_entry, tmp_path)])
    async with agent:
        paused = await agent.run("write it")
        assert paused.status == "paused"
        stopped = await agent.resume(paused.thread_id, {"allow_continue": False})
        assert stopped.status == "cancelled"
        with pytest.raises(UnknownThreadError):
            await agent.resume("no-such-thread", UserPlan(instructions="go"))
    assert not target.exists()


async def test_a_worker_serves_a_queued_plan_with_the_servers_started(
    filesystem_entry: Path, tmp_path: Path
) -> None:
    from ai_agent.graph.worker import Worker

    target = tmp_path / "by-worker.txt"
    turns = [call("fs__write_file", path=str(target), content="queued"), text("written")]
    servers = [filesystem_server(filesystem_entry, tmp_path)]
    paused = await make_agent(tmp_path, turns, servers).run("write it")
    assert paused.status == "paused"
    agent = make_agent(tmp_path, turns, servers)
    async with agent:
        await agent.submit_plan(paused.thread_id, {"approve": ["*"]})
        (outcome,) = await Worker(agent).run(once=True)
    assert outcome.run_status == "completed", outcome.error
    assert target.read_text() == "queued"


async def test_a_servers_notice_is_masked_with_the_agents_secrets(tmp_path: Path) -> None:
    # A server that fails to start with the backend key in its stderr: the notice that says it
    # failed quotes its last stderr lines, and was masked only with the server's own secrets.
    key = "sk-canary-notice-7f3a9c2e"
    crash = f"import sys; sys.stderr.write('started with {key}\\n'); sys.exit(2)"
    server = McpServerConfig(name="bad", command=sys.executable, args=["-c", crash],
                             required=False)  # fmt: skip
    events: list[Event] = []
    settings = AgentSettings(model_backend={"api_key": key})
    agent = make_agent(tmp_path, [text("fine")], [server], settings=settings,
                       on_event=events.append)  # fmt: skip
    result = await agent.run("go")
    assert result.status == "completed", result.error
    notices = [e.get("detail", "") for e in events if e.get("type") == "mcp"]
    assert any("MCP server 'bad' failed" in n for n in notices)
    assert any("started with ***" in n for n in notices), notices
    assert key not in repr(events)
