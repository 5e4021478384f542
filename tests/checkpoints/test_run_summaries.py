"""Run summaries: written with the run row, read for many runs at once, stale when the row moves."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ai_agent.checkpoints import RunStore, RunSummary

SUMMARY = RunSummary(stop_reason="finished", model="m1", tokens=120, cost=0.25)


async def test_a_summary_written_with_the_row_is_read_with_the_others(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "c.sqlite")
    try:
        for thread in ("a", "b", "c"):
            await store.create_run(thread, "task")
        await store.update_run("a", status="completed", summary=SUMMARY)
        await store.update_run("b", status="paused", summary={**SUMMARY, "tokens": 7})
        await store.update_run("c", status="failed", error="boom")  # no summary
        found = await store.run_summaries(["a", "b", "c", "nobody", "a"])
    finally:
        store.close()
    assert found == {"a": SUMMARY, "b": {**SUMMARY, "tokens": 7}}


async def test_a_summary_is_stale_once_the_row_changes_without_one(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "c.sqlite")
    try:
        await store.create_run("a", "task")
        await store.update_run("a", status="paused", summary=SUMMARY)
        assert await store.run_summaries(["a"]) == {"a": SUMMARY}
        await store.update_run("a", status="running")  # resumed: the figures moved on
        assert await store.run_summaries(["a"]) == {}
        newer = RunSummary(stop_reason="finished", model="m2", tokens=300, cost=None)
        await store.update_run("a", status="completed", summary=newer)
        assert await store.run_summaries(["a"]) == {"a": newer}
    finally:
        store.close()


async def test_a_damaged_summary_is_left_out_not_shown(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    store = RunStore(db)
    try:
        for thread in ("ok", "text-tokens", "negative-cost", "blob-model"):
            await store.create_run(thread, "task")
            await store.update_run(thread, status="completed", summary=SUMMARY)
        with sqlite3.connect(db) as conn:
            conn.execute(
                "UPDATE agent_run_summaries SET tokens = 'many' WHERE thread_id = ?",
                ("text-tokens",),
            )
            conn.execute(
                "UPDATE agent_run_summaries SET cost = -1 WHERE thread_id = ?", ("negative-cost",)
            )
            blob = "UPDATE agent_run_summaries SET model = X'6869' WHERE thread_id = ?"
            conn.execute(blob, ("blob-model",))
        found = await store.run_summaries(["ok", "text-tokens", "negative-cost", "blob-model"])
    finally:
        store.close()
    assert list(found) == ["ok"]


async def test_more_runs_than_one_query_takes_are_read_in_chunks(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "c.sqlite")
    try:
        threads = [f"r{i:04d}" for i in range(1203)]
        for thread in threads:
            await store.create_run(thread, "task")
            await store.update_run(thread, status="completed", summary=SUMMARY)
        found = await store.run_summaries(threads)
    finally:
        store.close()
    assert set(found) == set(threads)


async def test_an_older_file_gets_the_table_when_opened(tmp_path: Path) -> None:
    db = tmp_path / "old.sqlite"
    db.write_bytes((Path(__file__).parents[1] / "fixtures" / "store-v6.sqlite").read_bytes())
    store = RunStore(db)
    try:
        runs = await store.list_runs(limit=None)
        assert await store.run_summaries([r["thread_id"] for r in runs]) == {}
    finally:
        store.close()
