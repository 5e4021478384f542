"""Older databases keep working: SqliteSaver's tables are imported, older delta formats are read.

The fixtures were written by ``fixtures/make_fixtures.py``: the same two engine runs (one paused
at the gate, one finished) stored by the engine's old checkpointer (LangGraph's SqliteSaver) and
by each delta format, by the code of its time. ``expected.json`` holds each thread's state as it
was written.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any, cast

import pytest

from ai_agent import Agent, ToolCategory, ToolSpec
from ai_agent.checkpoints import FORMAT_VERSION, DeltaSaver
from ai_agent.checkpoints._reads import skeleton
from ai_agent.config import AgentSettings
from ai_agent.errors import PlanRefusedError, StoreError
from ai_agent.graph import Worker
from ai_agent.testing import ScriptedModel
from tests.checkpoints.conftest import config

FIXTURES = Path(__file__).with_name("fixtures")
EXPECTED: dict[str, dict[str, Any]] = json.loads((FIXTURES / "expected.json").read_text())


def copy_of(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copy(FIXTURES / name, target)
    return target


def _agent(db: Path, log: list[str]) -> Agent:
    def note(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        log.append(str(args.get("text")))
        return {"status": "ok", "content": f"noted {args.get('text')}"}

    script: list[dict[str, Any]] = [
        {"tool_calls": [{"name": "note", "args": {"text": "first"}, "id": "c1"}]},
        {"tool_calls": [{"name": "note", "args": {"text": "second"}, "id": "c2"}]},
        {"text": "all noted"},
    ]
    tool = ToolSpec("note", note, description="Write a note.", category=ToolCategory.MODIFICATION)
    return Agent(
        model=ScriptedModel(script),
        tools=[tool],
        checkpoint_path=db,
        memory_path=None,
        settings=AgentSettings(),
    )


# Every database format an older ai-agent wrote (or LangGraph's SqliteSaver), kept as fixtures.
OLD_DATABASES = [f"delta_v{v}.sqlite" for v in range(1, 5)] + ["sqlitesaver.sqlite"]


@pytest.mark.parametrize("name", OLD_DATABASES)
def test_an_old_database_reads_back_as_written(name: str, tmp_path: Path) -> None:
    db = copy_of(name, tmp_path)
    with DeltaSaver(db) as saver:
        assert saver.legacy_skipped == []
        for thread, want in EXPECTED[name].items():
            got = saver.get_tuple(config(thread))
            assert got is not None
            values = json.loads(json.dumps(got.checkpoint["channel_values"]))
            assert {k: values.get(k) for k in want} == want
            history = list(saver.list(config(thread)))
            assert len(history) > 5
            assert all(t.checkpoint["channel_values"] for t in history[:-1])


@pytest.mark.parametrize("name", OLD_DATABASES)
async def test_a_run_paused_in_an_old_database_resumes(name: str, tmp_path: Path) -> None:
    db = copy_of(name, tmp_path)
    log: list[str] = []
    agent = _agent(db, log)
    async with agent:
        result = await agent.resume("paused", {"approve": ["*"], "grant_scope": "tool"})
        assert result.status == "completed", result
        assert result.final_text == "all noted"
        done = await agent.get_result("done")
        assert done.status == "completed" and done.final_text == "all noted"
    assert log == ["first", "second"]


async def test_a_run_paused_before_gate_tokens_is_resumed_directly_not_queued(
    tmp_path: Path,
) -> None:
    db = copy_of("delta_v2.sqlite", tmp_path)
    log: list[str] = []
    async with _agent(db, log) as agent:
        paused = await agent.get_result("paused")
        assert paused.gate is not None and "token" not in paused.gate  # an older ai-agent's
        with pytest.raises(PlanRefusedError, match="older ai-agent") as refused:
            await agent.submit_plan("paused", {"approve": ["*"]})
        assert "resume it directly" in str(refused.value)
        with pytest.raises(PlanRefusedError, match="older ai-agent"):
            await agent.resume("paused", {"approve": ["*"], "gate_token": "0" * 32})
        assert log == []
        # Answered directly, the old run goes on; its next gates hand out tokens.
        second = await agent.resume("paused", {"approve": ["*"]})
        assert second.status == "paused" and log == ["first"]
        assert second.gate is not None and len(second.gate["token"]) == 32
        state = await agent.get_state("paused")
        assert state["gate_nonce"] and [g["gate"] for g in state["grants"]]
        queued = await agent.submit_plan("paused", {"approve": ["*"]})
        assert queued["plan"]["gate_token"] == second.gate["token"]
        (served,) = await Worker(agent).run(once=True)
    assert served.run_status == "completed" and log == ["first", "second"]


def test_the_import_runs_once_and_leaves_the_old_tables(tmp_path: Path) -> None:
    db = copy_of("sqlitesaver.sqlite", tmp_path)
    with DeltaSaver(db):
        pass
    with sqlite3.connect(db) as conn:
        before = conn.execute("SELECT count(*) FROM delta_checkpoints").fetchone()
        legacy = conn.execute("SELECT count(*) FROM checkpoints").fetchone()
    with DeltaSaver(db):
        pass
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM delta_checkpoints").fetchone() == before
        assert conn.execute("SELECT count(*) FROM checkpoints").fetchone() == legacy
        assert conn.execute(
            "SELECT value FROM delta_meta WHERE key = 'legacy_import'"
        ).fetchone() == ("[]",)


def test_an_unreadable_old_thread_is_skipped_and_named(tmp_path: Path) -> None:
    db = copy_of("sqlitesaver.sqlite", tmp_path)
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, "
            "parent_checkpoint_id, type, checkpoint, metadata) "
            "VALUES ('evil', '', '1', NULL, 'pickle', x'80', '{}')"
        )
    with DeltaSaver(db) as saver:
        assert saver.legacy_skipped == ["evil"]
        assert saver.get_tuple(config("evil")) is None
        assert saver.get_tuple(config("paused")) is not None
    with DeltaSaver(db) as saver:
        assert saver.legacy_skipped == ["evil"]


def test_an_old_database_without_task_paths_imports(tmp_path: Path) -> None:
    db = copy_of("sqlitesaver.sqlite", tmp_path)
    with sqlite3.connect(db) as conn:
        conn.execute("ALTER TABLE writes DROP COLUMN task_path")
    with DeltaSaver(db) as saver:
        assert saver.legacy_skipped == []
        assert saver.get_tuple(config("paused")) is not None


def _format(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        return str(conn.execute("SELECT value FROM delta_meta WHERE key = 'format'").fetchone()[0])


def _latest_of_done(saver: DeltaSaver) -> tuple[Any, int, Any]:
    """The fixtures' finished run ``done``: its latest checkpoint, thread key and skeleton."""
    latest = saver.get_tuple(config("done"))
    assert latest is not None
    tkey = saver.store.thread_key("done", "", create=False)
    assert tkey is not None
    return latest, tkey, skeleton(saver.store, tkey, latest.checkpoint["id"])


def test_a_format_1_database_is_migrated_and_then_grows_in_format_2(tmp_path: Path) -> None:
    """Format 2 reads format 1's row references as they are; new steps may name values inline."""
    db = copy_of("delta_v1.sqlite", tmp_path)
    assert _format(db) == "1"
    with DeltaSaver(db) as saver:
        latest, tkey, old = _latest_of_done(saver)
        assert all(type(ref) is int for ref in old.refs.values())  # format 1: rows only
        values = latest.checkpoint["channel_values"]
        child: Any = {
            **latest.checkpoint,
            "id": "2099-01-01",
            "channel_values": {**values, "status": "more"},
            "channel_versions": {**latest.checkpoint["channel_versions"], "status": 99},
        }
        saver.put(latest.config, child, {}, {"status": 99})
        again = saver.get_tuple(config("done"))
        assert again is not None
        assert again.checkpoint["channel_values"] == {**values, "status": "more"}
        new = skeleton(saver.store, tkey, "2099-01-01")
        assert new.refs["status"] == ("msgpack", b"\xa4more")  # format 2: inline
        assert {k: r for k, r in new.refs.items() if k != "status"} == {
            k: r for k, r in old.refs.items() if k != "status"
        }
    assert _format(db) == str(FORMAT_VERSION)


def test_a_format_2_database_is_migrated_and_then_stores_large_texts_once(
    tmp_path: Path,
) -> None:
    """Format 3 reads format 2's rows as they are; new rows name their large texts."""
    db = copy_of("delta_v2.sqlite", tmp_path)
    assert _format(db) == "2"
    plan = "a long plan. " * 2000
    with DeltaSaver(db) as saver:
        latest = saver.get_tuple(config("done"))
        assert latest is not None
        values = latest.checkpoint["channel_values"]
        for parent in (latest.config, config("new")):
            child: Any = {
                **latest.checkpoint,
                "id": "2099-01-01",
                "channel_values": {**values, "status": plan},
                "channel_versions": {**latest.checkpoint["channel_versions"], "status": 99},
            }
            saver.put(parent, child, {}, {"status": 99})
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM agent_texts").fetchone() == (1,)
    with DeltaSaver(db) as saver:
        for thread in ("done", "new"):
            again = saver.get_tuple(config(thread))
            assert again is not None
            assert again.checkpoint["channel_values"] == {**values, "status": plan}
        before = saver.get_tuple(config("done", latest.checkpoint["id"]))
        assert before is not None and before.checkpoint == latest.checkpoint
    assert _format(db) == str(FORMAT_VERSION)


@pytest.mark.parametrize("older", [2, 3, 4])
def test_an_older_ai_agent_refuses_a_format_5_file(
    older: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Format 2 would hand out the marks of large texts as values, format 3 a dict's change
    records as a list, format 4 a write naming list items as that name: each must refuse."""
    db = copy_of("delta_v3.sqlite", tmp_path)
    DeltaSaver(db).close()
    monkeypatch.setattr("ai_agent.checkpoints._schema.FORMAT_VERSION", older)  # its check
    with pytest.raises(
        StoreError, match=rf"use format 5, newer than this ai-agent understands \({older}\)"
    ):
        DeltaSaver(db)


def test_a_format_3_database_is_migrated_and_then_logs_its_dicts(tmp_path: Path) -> None:
    """Format 4 reads format 3's rows as they are; a large dict is then a change log."""
    db = copy_of("delta_v3.sqlite", tmp_path)
    assert _format(db) == "3"
    docs = {f"doc{i}": "a document. " * 20 for i in range(10)}
    with DeltaSaver(db) as saver:
        latest, tkey, old = _latest_of_done(saver)
        assert not any(type(r) is tuple and len(r) == 3 for r in old.refs.values())
        values = latest.checkpoint["channel_values"]
        parent = latest.config
        for step in range(3):
            docs[f"new{step}"] = "added"
            child: Any = {
                **latest.checkpoint,
                "id": f"2099-01-0{step + 1}",
                "channel_values": {**values, "docs": docs},
                "channel_versions": {**latest.checkpoint["channel_versions"], "docs": 99 + step},
            }
            parent = saver.put(parent, child, {}, {"docs": 99 + step})
        new = skeleton(saver.store, tkey, "2099-01-03")
        assert new.refs["docs"] == (cast(tuple[Any, ...], new.refs["docs"])[0], 13, "d")
    assert _format(db) == str(FORMAT_VERSION) == "5"
    with DeltaSaver(db) as saver:
        again = saver.get_tuple(config("done"))
        assert again is not None
        assert again.checkpoint["channel_values"] == {**values, "docs": docs}
        before = saver.get_tuple(config("done", latest.checkpoint["id"]))
        assert before is not None and before.checkpoint == latest.checkpoint


def test_a_format_4_database_is_migrated_and_then_stores_appended_writes_once(
    tmp_path: Path,
) -> None:
    """Format 5 reads format 4's rows as they are; a new run's appended writes name their items."""
    from ai_agent.checkpoints._writes import ITEMS_TYPE
    from tests.checkpoints.test_shared_writes import _entry_types, _graph

    db = copy_of("delta_v4.sqlite", tmp_path)
    assert _format(db) == "4"
    before = _entry_types(db)
    assert ITEMS_TYPE not in before
    cfg: Any = {"configurable": {"thread_id": "new"}, "recursion_limit": 500}
    with DeltaSaver(db) as saver:
        latest, _, _ = _latest_of_done(saver)
        graph = _graph(12).compile(checkpointer=saver)
        graph.invoke({"messages": [], "cycle": 0}, cfg, durability="sync")
        assert len(graph.get_state(cfg).values["messages"]) == 12
    assert _format(db) == str(FORMAT_VERSION) == "5"
    assert _entry_types(db).count(ITEMS_TYPE) >= 4
    with DeltaSaver(db) as saver:
        again = saver.get_tuple(config("done"))
        assert again is not None and again.checkpoint == latest.checkpoint
        assert again.pending_writes == latest.pending_writes
