"""Hostile recordings: a run store whose recorded model calls were edited by hand.

Real SQLite files in tmp_path: a run is made with a scripted model, then the recorded reply's
row is changed with plain SQL, as a person (or a broken tool) could, and the run is replayed.
A reply the draft stage cannot take must fail the replay with an error that names the row and
says what to do, never a KeyError from deep in a stage.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from ai_agent.testing import ScriptedModel
from tests.graph.conftest import MakeAgent, call, text

SCRIPT = [call("calculator", expression="6*7"), text("it is 42")]


async def recorded_run(make_agent: MakeAgent) -> str:
    async with make_agent(SCRIPT, tools=["calculator"]) as agent:
        done = await agent.run("what is 6*7")
        assert done.status == "completed"
        return done.thread_id


def edit_reply(db: Path, index: int, column: str, value: str) -> None:
    """Set a column of the ``index``-th recorded model call (in recording order)."""
    with sqlite3.connect(db) as conn:
        seqs = [r[0] for r in conn.execute("SELECT seq FROM agent_model_calls ORDER BY seq")]
        conn.execute(
            f"UPDATE agent_model_calls SET {column} = ? WHERE seq = ?", (value, seqs[index])
        )


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ({"role": "assistant"}, "its content is not text"),
        ({"role": "assistant", "content": ["it is 42"]}, "its content is not text"),
        ({"role": "user", "content": "it is 42"}, "it is not the model's reply"),
        ({"role": "assistant", "content": "", "tool_calls": {"a": 1}}, "not a list"),
        (
            {"role": "assistant", "content": "", "tool_calls": [{"name": "calculator"}]},
            "a tool call without a text id and name",
        ),
        (
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"id": "c", "name": "calculator", "args": "6*7"}],
            },
            "a call of calculator whose arguments are not an object",
        ),
    ],
)
async def test_a_recorded_reply_of_another_shape_stops_the_replay_naming_the_row(
    make_agent: MakeAgent, db: Path, reply: dict[str, object], problem: str
) -> None:
    thread = await recorded_run(make_agent)
    edit_reply(db, 0, "response", json.dumps(reply))
    async with make_agent(model=ScriptedModel([]), tools=["calculator"]) as agent:
        replay = await agent.replay(thread)
    # The replay fails there, as a run whose model call failed, with the row's error.
    assert replay.status == "failed"
    message = replay.error or ""
    assert "the reply of recorded call 1 of thread" in message
    assert problem in message
    assert f"ai-agent replay {thread} --live" in message


async def test_a_recorded_error_of_another_shape_is_still_the_model_error(
    make_agent: MakeAgent, db: Path
) -> None:
    # The error's type must name a model error; a list there failed with "unhashable type".
    thread = await recorded_run(make_agent)
    edit_reply(db, 0, "response", "")
    edit_reply(db, 0, "error", json.dumps({"type": ["ModelError"], "message": 5}))
    async with make_agent(model=ScriptedModel([]), tools=["calculator"]) as agent:
        replay = await agent.replay(thread)
    assert replay.divergence is None
    assert replay.status != "completed"
    assert "5" in (replay.error or "")


async def test_a_lone_surrogate_escaped_in_a_recorded_reply_is_replayed_as_u_fffd(
    make_agent: MakeAgent, db: Path
) -> None:
    # JSON can escape half of a surrogate pair ("\ud800"); such text cannot be written as UTF-8,
    # so a live reply never holds it (`valid_text`). One in a recording failed the checkpoint.
    thread = await recorded_run(make_agent)
    edit_reply(db, 1, "response", '{"role": "assistant", "content": "it is \\ud800 42"}')
    async with make_agent(model=ScriptedModel([]), tools=["calculator"]) as agent:
        replay = await agent.replay(thread)
    assert replay.divergence is None
    assert (replay.status, replay.final_text) == ("completed", "it is \ufffd 42")
