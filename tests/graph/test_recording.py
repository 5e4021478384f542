"""Recording: every model and tool call is in the run store, tied to its step; no secret is."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
import respx

from ai_agent import Agent, tool
from ai_agent.checkpoints import SCHEMA_VERSION, RunStore
from ai_agent.config import AgentSettings
from ai_agent.models import request_hash
from ai_agent.testing import ScriptedModel
from ai_agent.tools.policy import args_hash
from tests.graph.conftest import MakeAgent, call, text

CANARY = "sk-CANARY-replay-5d1e"
BASE = "http://127.0.0.1:9/v1"


def completion(message: dict[str, Any]) -> httpx.Response:
    return httpx.Response(
        200,
        json={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "tiny",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
        },
    )


async def test_model_and_tool_calls_are_recorded_with_their_step(make_agent: MakeAgent) -> None:
    agent = make_agent(
        [call("calculator", expression="6*7"), text("42")],
        tools=["calculator"],
        system_prompt="Be exact.",
    )
    result = await agent.run("six times seven")
    models = await agent.store.model_calls(result.thread_id)
    tools = await agent.store.tool_calls(result.thread_id)
    history = {e.step: e for e in await agent.ahistory(result.thread_id)}

    assert [(m["step"], m["stage"]) for m in models] == [(2, "draft"), (8, "draft")]
    assert [m["checkpoint_id"] for m in models] == [
        history[1].checkpoint_id,  # each call is tied to the checkpoint its stage started from
        history[7].checkpoint_id,
    ]
    first = await agent.store.model_request(models[0]["seq"])
    assert first["messages"][0] == {"role": "system", "content": "Be exact."}
    assert [t["function"]["name"] for t in first["tools"]] == ["calculator"]
    assert first["params"] == {"llm": "scripted"}
    assert models[0]["request_hash"] == request_hash(
        first["messages"], first["tools"], first["params"]
    )
    assert models[1]["message"] == {"role": "assistant", "content": "42"}
    assert all(m["latency_ms"] >= 0 and not m["replayed"] for m in models)

    (tool,) = tools
    assert (tool["step"], tool["stage"], tool["iteration"]) == (5, "act", 1)
    assert tool["call"] == {"id": "c1.0", "name": "calculator", "args": {"expression": "6*7"}}
    assert tool["args_hash"] == args_hash({"expression": "6*7"})
    assert tool["result"]["content"] == "42" and tool["duration_ms"] >= 0


MARK = "mark-of-the-result-3f9c"


@tool(category="read_only")
def look() -> dict[str, Any]:
    """Look (the result carries a mark that only the result itself holds, not its text)."""
    return {"status": "ok", "content": "looked", "meta": {"mark": MARK}}


def rows_holding(db: Path, needle: str) -> dict[str, int]:
    """How many rows of each run-store table hold ``needle`` in some column."""
    with sqlite3.connect(db) as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'agent%'"
            )
        ]
        found = {}
        for table in tables:
            columns = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
            held = " OR ".join(f"instr(CAST({c} AS TEXT), ?) > 0" for c in columns)
            count = conn.execute(
                f"SELECT count(*) FROM {table} WHERE {held}",
                [needle] * len(columns),
            ).fetchone()[0]
            if count:
                found[table] = count
    return found


async def test_a_tool_calls_outcome_is_stored_once_in_the_run_store(db: Path) -> None:
    """The journal is the record of a call's outcome: the recorded call names it, not a copy."""
    agent = Agent(
        model=ScriptedModel([call("look"), text("done")]),
        tools=[look],
        checkpoint_path=db,
        memory_path=None,
        settings=AgentSettings(),
    )
    async with agent:
        done = await agent.run("look", thread_id="t")
        (recorded,) = await agent.store.tool_calls("t")
        journal = await agent.store.lookup("t", 1, "c1.0")
        state = await agent.get_state("t")
        replay = await agent.replay("t")
    assert done.status == "completed"
    assert journal is not None and recorded["result"] == journal["result"]
    assert recorded["result"]["meta"]["mark"] == MARK
    # The run's state holds the result too (reflect and the gate read it there, bounded).
    assert state["results"][0]["result"] == recorded["result"]
    # One row in the whole run store for the run, and one for its replay (its own outcome).
    assert rows_holding(db, MARK) == {"agent_journal": 2}
    assert replay.divergence is None and replay.final_text == "done"


async def test_message_bodies_are_stored_once(make_agent: MakeAgent) -> None:
    turns = [call("calculator", expression=f"{i}+1") for i in range(5)] + [text("done")]
    agent = make_agent(turns, tools=["calculator"], max_iterations=6)
    result = await agent.run("count")
    models = await agent.store.model_calls(result.thread_id)
    sent = 0
    for m in models:
        sent += len((await agent.store.model_request(m["seq"]))["messages"])
    with cast(RunStore, agent.store)._read() as conn:
        blobs = conn.execute("SELECT count(*) FROM agent_blobs").fetchone()[0]
    assert sent == 1 + 3 + 5 + 7 + 9 + 11  # each request repeats the conversation so far
    assert blobs == 11 + 1  # but each message (and the one tool list) is stored once


async def test_deleting_a_threads_calls_keeps_bodies_others_share(make_agent: MakeAgent) -> None:
    agent = make_agent([text("same")])
    one = await agent.run("same task")
    two = await agent.run("same task")
    assert await agent.store.delete_calls(one.thread_id) == 1
    (left,) = await agent.store.model_calls(two.thread_id)
    request = await agent.store.model_request(left["seq"])
    assert request["messages"][0]["content"] == "same task"
    assert await agent.store.delete_calls(two.thread_id) == 1
    with cast(RunStore, agent.store)._read() as conn:
        assert conn.execute("SELECT count(*) FROM agent_blobs").fetchone()[0] == 0
    with pytest.raises(KeyError):
        await agent.store.model_request(left["seq"])


@respx.mock(assert_all_called=True)
async def test_no_secret_reaches_the_database(
    db: Path, monkeypatch: pytest.MonkeyPatch, respx_mock: respx.MockRouter
) -> None:
    monkeypatch.setenv("MAMBA_MODEL_BACKEND__API_KEY", CANARY)
    monkeypatch.setenv("MAMBA_MODEL_BACKEND__MODEL", "tiny")
    route = respx_mock.post(f"{BASE}/chat/completions").mock(
        side_effect=[
            completion(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {
                                "name": "calculator",
                                "arguments": '{"expression": "1+2"}',
                            },
                        }
                    ],
                }
            ),
            completion({"role": "assistant", "content": "3"}),
        ]
    )
    async with Agent(tools=["calculator"], checkpoint_path=db, memory_path=None) as agent:
        result = await agent.run("add one and two")
        models = await agent.store.model_calls(result.thread_id)
        request = await agent.store.model_request(models[0]["seq"])
    assert result.final_text == "3"
    assert route.calls[0].request.headers["authorization"] == f"Bearer {CANARY}"  # it was in play
    assert request["params"] == {"backend": "openai", "model": "tiny"}
    assert models[0]["usage"]["total_tokens"] == 14
    for path in db.parent.iterdir():  # the database, its WAL, anything beside it
        assert CANARY.encode() not in path.read_bytes(), path.name


async def test_a_recorded_replay_needs_no_key_and_no_server(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with respx.mock(assert_all_called=True) as mock:
        mock.post(f"{BASE}/chat/completions").mock(
            return_value=completion({"role": "assistant", "content": "hello"})
        )
        monkeypatch.setenv("MAMBA_MODEL_BACKEND__API_KEY", CANARY)
        original = await Agent(checkpoint_path=db, memory_path=None).run("greet")
    monkeypatch.delenv("MAMBA_MODEL_BACKEND__API_KEY")
    with respx.mock(assert_all_called=False) as mock:  # any request would fail the test
        replay = await Agent(checkpoint_path=db, memory_path=None).replay(original.thread_id)
        assert not mock.calls
    assert (replay.final_text, replay.divergence) == ("hello", None)


def test_the_store_migrates_to_the_current_schema_once(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    fresh = RunStore(path)
    assert fresh.migrated_from is None
    fresh.close()
    again = RunStore(path)
    assert again.migrated_from == SCHEMA_VERSION
    again.close()


def test_settings_params_never_hold_the_key(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MAMBA_MODEL_BACKEND__API_KEY", CANARY)
    agent = Agent(
        model=None, settings=AgentSettings(), checkpoint_path="unused.sqlite", memory_path=None
    )
    assert CANARY not in json.dumps(agent.generation_params())
    chat = ScriptedModel([])
    assert Agent(model=chat, checkpoint_path="u.sqlite").generation_params() == {"llm": "scripted"}
    (tmp_path / "x.json").write_text('["hi"]')
    scripted = Agent(model=f"scripted:{tmp_path / 'x.json'}", checkpoint_path="u.sqlite")
    assert scripted.generation_params() == {"llm": "scripted"}


def test_generation_params_of_chat_models_and_settings() -> None:
    from langchain_openai import ChatOpenAI

    from ai_agent.config import ModelBackendSettings
    from ai_agent.graph.recording import generation_params

    chat = ChatOpenAI(
        model="tiny", api_key=CANARY, base_url=BASE, temperature=0.1, stop=("END", "STOP")
    )
    params = generation_params(chat, "openai", ModelBackendSettings())
    assert params["llm"] == "openai-chat"
    assert (params["model_name"], params["temperature"], params["stop"]) == (
        "tiny",
        0.1,
        ["END", "STOP"],
    )
    assert CANARY not in json.dumps(params)
    local = generation_params(None, "local", ModelBackendSettings(seed=7, max_tokens=64, top_p=0.5))
    assert local == {
        "backend": "local",
        "model": "llama3.2",
        "max_tokens": 64,
        "top_p": 0.5,
        "seed": 7,
    }


def test_a_call_outside_a_graph_run_has_no_position() -> None:
    from ai_agent.graph.recording import call_position

    assert call_position() == {"step": None, "stage": None, "checkpoint_id": None}


def test_state_versions_and_migrations(monkeypatch: pytest.MonkeyPatch) -> None:
    from ai_agent.checkpoints import versions

    assert versions.state_version(None) == 1
    assert versions.state_version({versions.STATE_VERSION_KEY: "1"}) == 1
    assert versions.state_version({versions.STATE_VERSION_KEY: [2]}) == 1
    monkeypatch.setattr(versions, "STATE_VERSION", 2)

    def rename(values: dict[str, Any]) -> dict[str, Any]:
        return {"renamed" if k == "old" else k: v for k, v in values.items()}

    monkeypatch.setitem(versions.STATE_MIGRATIONS, 1, rename)
    assert versions.upgrade_state({"old": 5}, 1) == {"renamed": 5}
    assert versions.upgrade_state({"renamed": 5}, 2) == {"renamed": 5}


def test_request_lines_show_every_part_of_a_message() -> None:
    from ai_agent.graph.divergence import request_lines

    lines = request_lines(
        {
            "params": {},
            "tools": [{"type": "function", "function": {"name": "calc", "parameters": {}}}],
            "messages": [
                {"role": "user", "content": "a\nb", "kind": "task"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"id": "c1", "name": "calc", "args": {"x": 1}}],
                },
                {"role": "tool", "content": "2", "name": "calc", "tool_call_id": "c1"},
            ],
        }
    )
    assert lines == [
        "params: {}",
        'tool calc: {"name": "calc", "parameters": {}}',
        "[0] user (task): a",
        "[0] user (task): b",
        "[1] assistant: ",
        '[1] assistant calls calc {"x": 1} #c1',
        "[2] tool calc #c1: 2",
    ]
