"""Text a server or a configuration holds that must neither stall a call nor leak a password.

A lone half of a UTF-16 surrogate pair (what JavaScript's ``JSON.stringify`` writes for text cut
inside an emoji) must not make a reply unreadable, and the password in a server's URL must not
reach the run store or what ``ai-agent mcp list`` prints.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ai_agent import Agent, UserPlan
from ai_agent.cli import main
from ai_agent.config import AgentSettings, McpServerConfig
from ai_agent.testing import FunctionModel, ScriptedModel
from tests.mcp.conftest import SERVERS, HttpServer

pytestmark = pytest.mark.timeout(180)

RAW = SERVERS / "raw_server.py"
PASSWORD = "url-canary-pw-90e1c4"


def _raw_server(tmp_path: Path, script: dict[str, Any], **options: Any) -> McpServerConfig:
    path = tmp_path / "script.json"
    # The raw server writes its replies with json.dumps, which escapes a lone half as "\ud83d",
    # exactly as JSON.stringify does.
    path.write_text(json.dumps(script))
    args = [str(RAW), str(path)]
    return McpServerConfig(name="raw", command=sys.executable, args=args, **options)


def _files_holding(folder: Path, secret: str) -> list[str]:
    return [p.name for p in folder.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


async def test_a_lone_surrogate_in_a_tool_list_and_a_reply_is_read_not_waited_for(
    tmp_path: Path,
) -> None:
    """Pydantic's JSON parser refused the whole line: the tool list was dropped (the start
    failed after startup_timeout) and a reply was dropped (its call waited for the timeout, then
    was retried), though Python's json and every JavaScript client read it."""
    cut_emoji = "sun \ud83d"  # the first half of 😀, as text cut between the halves
    script = {
        "tools": [
            {
                "name": "weather",
                "description": f"Today's weather, {cut_emoji}",
                "inputSchema": {"type": "object"},
                "annotations": {"readOnlyHint": True},
            }
        ],
        "results": {"weather": {"content": [{"type": "text", "text": cut_emoji}]}},
    }
    server = _raw_server(tmp_path, script, timeout=10, startup_timeout=10)
    model = ScriptedModel([{"tool_calls": [{"name": "raw__weather", "args": {}}]}, {"text": "ok"}])
    runs = tmp_path / "runs"
    agent = Agent(
        model=model,
        mcp_servers=[server],
        checkpoint_path=runs / "checkpoints.sqlite",
        memory_path=None,
        settings=AgentSettings(),
    )
    async with agent:
        result = await agent.run("what is the weather?")
        assert result.status == "completed", result.error
        assert agent.registry["raw.weather"].description == "Today's weather, sun \ufffd"
        state = await agent.get_state(result.thread_id)
    outcome = state["results"][0]["result"]
    assert outcome["status"] == "ok", outcome
    assert outcome["content"] == "sun \ufffd"


async def test_a_password_in_a_servers_url_stays_out_of_the_run_store(
    start_fastmcp: Callable[..., HttpServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``${VAR}`` in the URL's password, its name not saying it is a secret: the refusal
    names the URL, and the expanded password went into the gate's issue and the checkpoints."""
    server = start_fastmcp("streamable-http", key=True)
    monkeypatch.setenv("CRM_PW", PASSWORD)
    url = server.url.replace("http://", "http://alice:${CRM_PW}@")
    runs = tmp_path / "runs"
    agent = Agent(
        model=ScriptedModel([{"text": "never asked"}]),
        mcp_servers=[McpServerConfig(name="crm", url=url)],
        checkpoint_path=runs / "checkpoints.sqlite",
        memory_path=None,
        settings=AgentSettings(),
    )
    result = await agent.run("look up the customer")
    await agent.aclose()
    assert result.status == "paused"
    assert result.gate is not None
    issue = result.gate["issues"][0]
    assert issue["code"] == "AUTH"
    assert "http://alice:***@127.0.0.1" in issue["message"]
    assert PASSWORD not in json.dumps(result.to_dict())
    assert _files_holding(runs, PASSWORD) == []


def test_mcp_list_never_prints_the_password_in_a_servers_url(
    start_fastmcp: Callable[..., HttpServer],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Written out in the file: ``mcp list`` printed it in the target and the error, as text
    and as JSON, for a server that failed and for one that is not started."""
    server = start_fastmcp("streamable-http", key=True)
    url = server.url.replace("http://", f"http://alice:{PASSWORD}@")
    config = tmp_path / "mcp.json"
    servers = [{"name": "crm", "url": url}, {"name": "later", "url": url, "enabled": False}]
    config.write_text(json.dumps({"mcp_servers": servers}))
    assert main(["mcp", "list", "--config", str(config)]) == 1
    text = capsys.readouterr().out
    assert "crm: http://alice:***@127.0.0.1" in text
    assert "later: http://alice:***@127.0.0.1" in text
    assert main(["mcp", "list", "--json", "--config", str(config)]) == 1
    listed = capsys.readouterr().out
    assert json.loads(listed)[0]["error_code"] == "AUTH"
    for out in (text, listed):
        assert PASSWORD not in out


async def test_a_confirmed_call_runs_the_tool_it_was_shown_for_after_the_server_adds_one(
    tmp_path: Path,
) -> None:
    """``a.b`` was offered as ``raw.a_b`` while the server listed no ``a_b``; once it did (a new
    version, between the gate and the resume), ``raw.a_b`` meant the server's ``a_b``, so the
    call a person confirmed for ``a.b`` ran another tool (and a rule for the name would cover
    it)."""
    path = tmp_path / "script.json"

    def serve(*names: str) -> None:
        tools = [
            {"name": n, "description": f"the tool {n}", "inputSchema": {"type": "object"}}
            for n in names
        ]
        results = {n: {"content": [{"type": "text", "text": f"I am {n}"}]} for n in names}
        path.write_text(json.dumps({"tools": tools, "results": results}))

    serve("a.b")
    server = McpServerConfig(name="raw", command=sys.executable, args=[str(RAW), str(path)])

    def agent(reply: Callable[..., dict[str, Any]]) -> Agent:
        return Agent(
            model=FunctionModel(reply),
            mcp_servers=[server],
            checkpoint_path=tmp_path / "runs" / "checkpoints.sqlite",
            memory_path=None,
            settings=AgentSettings(),
        )

    def call_the_offered_tool(messages: Any, info: dict[str, Any]) -> dict[str, Any]:
        (wire,) = [t["function"]["name"] for t in info["tools"] if "a_b" in t["function"]["name"]]
        return {"tool_calls": [{"name": wire, "args": {}}]}

    first = agent(call_the_offered_tool)
    paused = await first.run("use the tool")
    await first.aclose()
    assert paused.status == "paused"
    assert paused.gate is not None
    (issue,) = paused.gate["issues"]
    assert "external tool and needs confirmation" in issue["message"]
    serve("a.b", "a_b")  # the server's next version adds a tool named a_b
    second = agent(lambda messages, info: {"text": "done"})
    done = await second.resume(paused.thread_id, UserPlan())
    state = await second.get_state(paused.thread_id)
    await second.aclose()
    assert done.status == "completed", done.error
    assert state["results"][0]["result"]["content"] == "I am a.b"
