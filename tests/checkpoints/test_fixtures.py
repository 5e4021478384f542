"""Databases written by earlier versions still open, resume and replay with this code.

The fixtures are real files made by ``tests/fixtures/make_fixture.py`` with the code of their
version; each test works on a copy.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from ai_agent import UserPlan
from ai_agent.checkpoints import SCHEMA_VERSION, RunStore, schema
from ai_agent.checkpoints.recorded import CallPosition
from ai_agent.checkpoints.versions import STATE_VERSION, STATE_VERSION_KEY
from ai_agent.errors import StoreError
from ai_agent.testing import ScriptedModel
from tests.fixtures.make_fixture import COMPLETED, PAUSED, fixture_agent

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def copy_of(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copyfile(FIXTURES / name, target)
    return target


def test_the_current_version_has_a_fixture() -> None:
    assert (FIXTURES / f"store-v{SCHEMA_VERSION}.sqlite").exists()


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION + 1))
async def test_an_old_store_is_migrated_and_its_runs_go_on(version: int, tmp_path: Path) -> None:
    db = copy_of(f"store-v{version}.sqlite", tmp_path)
    store = RunStore(db)
    assert store.migrated_from == version
    runs = {r["thread_id"]: r for r in await store.list_runs()}
    store.close()
    assert runs[COMPLETED]["status"] == "completed"
    assert runs[PAUSED]["origin"] == "run"

    agent = fixture_agent(db, paused=True)
    history = await agent.ahistory(PAUSED)
    assert history[-1].paused
    done = await agent.resume(PAUSED, UserPlan(approve=["*"]))
    assert (done.status, done.final_text) == ("completed", "the note is written")
    assert (await fixture_agent(db).get_result(COMPLETED)).final_text == "6*7 is 42"


@pytest.mark.parametrize("version", range(2, SCHEMA_VERSION + 1))  # recording began at 2
async def test_a_recorded_run_of_every_version_replays_offline(
    version: int, tmp_path: Path
) -> None:
    db = copy_of(f"store-v{version}.sqlite", tmp_path)
    agent = fixture_agent(db, model=ScriptedModel([]))
    replay = await agent.replay(COMPLETED)
    assert (replay.divergence, replay.final_text) == (None, "6*7 is 42")


def recorded_rows(db: Path) -> list[tuple[str, ...]]:
    """The recorded tool calls of the completed run, read past the store."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT * FROM agent_tool_calls WHERE thread_id = ?", (COMPLETED,)
        ).fetchall()
    return [tuple(str(v) for v in row) for row in rows]


async def test_version_5_moves_a_recorded_outcome_the_journal_lost_into_it(tmp_path: Path) -> None:
    """Prune deleted a finished run's journal and kept its recorded calls: nothing is lost."""
    db = copy_of("store-v4.sqlite", tmp_path)
    with sqlite3.connect(db) as conn:
        ((kept, seq),) = conn.execute(
            "SELECT result, seq FROM agent_tool_calls WHERE thread_id = ?", (COMPLETED,)
        ).fetchall()
        conn.execute("DELETE FROM agent_journal WHERE thread_id = ?", (COMPLETED,))
    store = RunStore(db)
    assert store.migrated_from == 4
    (recorded,) = await store.tool_calls(COMPLETED)
    assert recorded["result"] == json.loads(kept) and recorded["seq"] == seq
    assert recorded["call"] == {"id": "c1.0", "name": "calculator", "args": {"expression": "6*7"}}
    entry = await store.lookup(COMPLETED, 1, "c1.0")
    assert entry is not None and (entry["status"], entry["result"]) == ("done", json.loads(kept))
    # The recorded row keeps only what the journal does not know; its seq goes on.
    with sqlite3.connect(db) as conn:
        columns = [r[1] for r in conn.execute("PRAGMA table_info(agent_tool_calls)")]
    assert {"tool", "args", "result"}.isdisjoint(columns)
    position = CallPosition(step=1, stage="act", checkpoint_id=None)
    call = recorded["call"]
    assert (
        await store.record_tool_call(COMPLETED, position, call, "h", iteration=1, duration_ms=1)
        > seq
    )
    store.close()
    replay = await fixture_agent(db, model=ScriptedModel([])).replay(COMPLETED)
    assert (replay.divergence, replay.final_text) == (None, "6*7 is 42")


async def test_version_5_leaves_an_unknown_outcome_unknown(tmp_path: Path) -> None:
    """A journal entry at its intent stays so: the gate asks a person, as before the upgrade."""
    db = copy_of("store-v4.sqlite", tmp_path)
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE agent_journal SET status = 'intent', result = NULL WHERE thread_id = ?",
            (COMPLETED,),
        )
    store = RunStore(db)
    entry = await store.lookup(COMPLETED, 1, "c1.0")
    assert entry is not None and (entry["status"], entry["result"]) == ("intent", None)
    assert await store.tool_calls(COMPLETED) == []  # its recorded call has no outcome to give
    assert len(recorded_rows(db)) == 1  # but its row stays, naming the entry
    store.close()


def test_an_ai_agent_of_version_4_refuses_a_version_5_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = copy_of("store-v5.sqlite", tmp_path)
    monkeypatch.setattr(schema, "SCHEMA_VERSION", 4)
    with pytest.raises(
        StoreError, match=r"schema version 5, newer than this ai-agent understands \(4\)"
    ):
        RunStore(db)


async def test_a_run_recorded_before_recording_existed_cannot_replay_offline(
    tmp_path: Path,
) -> None:
    db = copy_of("store-v1.sqlite", tmp_path)
    replay = await fixture_agent(db).replay(COMPLETED)
    assert replay.divergence is not None
    assert replay.divergence.reason == "the original run made no model request here"
    live = await fixture_agent(db).replay(COMPLETED, mode="live")
    assert live.final_text == "6*7 is 42"


def test_a_newer_store_is_refused(tmp_path: Path) -> None:
    db = copy_of(f"store-v{SCHEMA_VERSION}.sqlite", tmp_path)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE agent_meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="schema version 99, newer than this ai-agent"):
        RunStore(db)


async def test_a_newer_state_version_is_refused(tmp_path: Path) -> None:
    db = copy_of(f"store-v{SCHEMA_VERSION}.sqlite", tmp_path)
    agent = fixture_agent(db)
    head = (await agent.ahistory(COMPLETED))[-1]
    assert head.step == 11
    async with agent:
        saver = agent._db.saver
        assert saver is not None
        found = await saver.aget_tuple(
            {"configurable": {"thread_id": COMPLETED, "checkpoint_ns": ""}}
        )
        assert found is not None
        assert found.metadata[STATE_VERSION_KEY] == 2  # type: ignore[literal-required]  # store-v4 was written at state version 2
        newer = {**found.metadata, STATE_VERSION_KEY: STATE_VERSION + 1}
        await saver.aput(found.parent_config or {}, found.checkpoint, newer, {})  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="written by a newer ai-agent"):
        await agent.ahistory(COMPLETED)
    with pytest.raises(StoreError, match="upgrade ai-agent"):
        await agent.replay(COMPLETED)
    with pytest.raises(StoreError, match=f"run {COMPLETED} was written by a newer ai-agent"):
        await agent.resume(COMPLETED)
