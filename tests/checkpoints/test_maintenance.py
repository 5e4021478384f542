"""Pruning, reclaiming space, deleting runs and copying threads on the delta saver."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ai_agent.checkpoints import DeltaSaver, PruneStats
from ai_agent.checkpoints._lineages import MERGE_AT
from ai_agent.errors import StoreError
from tests.checkpoints.conftest import config, make_checkpoint
from tests.checkpoints.test_delta import Run, count


def _grown(saver: DeltaSaver, steps: int = 120, size: int = 1000) -> Run:
    run = Run(saver)
    for i in range(steps):
        run.step([*run.log, {"i": i, "text": "x" * size}])
    return run


def test_prune_keeps_the_latest_and_it_reads_back_the_same(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with DeltaSaver(path) as saver:
        run = _grown(saver)
        latest = saver.get_tuple(config("t"))
        assert latest is not None
        saver.put_writes(config("t", run.head), [("n", 7)], "task")
        # The WAL emptied first: how big it is at any moment depends on when the saver's WAL
        # thread last cut it back, and the figure is about the rows a prune deletes.
        saver.reclaim()
        stats = saver.prune_thread("t", keep=1)
        assert isinstance(stats, PruneStats)
        assert stats.checkpoints == 119
        # What stays is the latest checkpoint, whose list names every segment of the items:
        # only the checkpoints' own rows go (a few hundred bytes each).
        assert stats.bytes_after < stats.bytes_before
        after = saver.get_tuple(config("t"))
        assert after is not None
        assert after.checkpoint == latest.checkpoint
        assert after.pending_writes == [("task", "n", 7)]
        assert [t.checkpoint["id"] for t in saver.list(config("t"))] == [run.head]
        run.values = {run.ids[-1]: run.values[run.ids[-1]]}
        run.step()  # and the run goes on from there
        run.check()
    with DeltaSaver(path) as saver:
        run.check(saver)


def test_prune_keeping_some_checkpoints_keeps_exactly_those(tmp_path: Path) -> None:
    with DeltaSaver(tmp_path / "c.sqlite") as saver:
        run = _grown(saver, 60, 10)
        keep = [run.ids[5], run.ids[33], run.ids[59]]
        stats = saver.prune_thread("t", keep=keep, reclaim=False)
        assert stats.checkpoints == 57
        assert {t.checkpoint["id"] for t in saver.list(config("t"))} == set(keep)
        run.values = {cid: run.values[cid] for cid in keep}
        run.check()
        saver.prune_thread("t", keep=2)
        assert {t.checkpoint["id"] for t in saver.list(config("t"))} == set(keep[1:])


def test_prune_keeps_the_part_of_a_lineage_a_fork_still_reads(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with DeltaSaver(path) as saver:
        run = _grown(saver, 80, 10)
        fork = run.ids[29]
        run.step(parent=fork)
        for _ in range(20):
            run.step()
        forked_head = run.ids[-1]
        saver.prune_thread("t", keep=[forked_head])
        run.values = {forked_head: run.values[forked_head]}
        run.check()
    with DeltaSaver(path) as saver:
        run.check(saver)
    with sqlite3.connect(path) as conn:
        ((stored,),) = conn.execute("SELECT sum(count) FROM delta_segments").fetchall()
    # The original's tail past the fork is gone, but for the merged chunk the fork point is in.
    assert len(run.values[forked_head]) <= stored < len(run.values[forked_head]) + MERGE_AT


def test_langgraph_prune_strategies(tmp_path: Path) -> None:
    with DeltaSaver(tmp_path / "c.sqlite") as saver:
        for thread in ("a", "b"):
            run = Run(saver, thread)
            for _ in range(10):
                run.step()
        saver.prune(["a"], strategy="keep_latest")
        assert len(list(saver.list(config("a")))) == 1
        saver.prune(["b"], strategy="delete")
        assert list(saver.list(config("b"))) == []
        with pytest.raises(ValueError, match="unknown prune strategy"):
            saver.prune(["a"], strategy="most")


async def test_async_prune_and_reclaim(tmp_path: Path) -> None:
    async with DeltaSaver(tmp_path / "c.sqlite") as saver:
        for thread in ("a", "b", "c"):
            run = Run(saver, thread)
            for _ in range(10):
                run.step()
        await saver.aprune(["a"])
        assert len([t async for t in saver.alist(config("a"))]) == 1
        stats = await saver.aprune_thread("b", keep=3, checkpoint_ns="")
        assert stats.checkpoints == 7
        skipped = await saver.aprune_thread("c", keep=0, checkpoint_ns="other")
        assert skipped.checkpoints == 0
        await saver.areclaim()
        saver.reclaim()
        assert len([t async for t in saver.alist(config("c"))]) == 10


def test_reclaim_converts_a_file_created_by_someone_else(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with sqlite3.connect(path) as conn:  # the run store got there first: no auto_vacuum
        conn.execute("CREATE TABLE other (x)")
    with DeltaSaver(path) as saver:
        _grown(saver, 50)
        stats = saver.prune_thread("t", keep=1)
        assert stats.bytes_after < stats.bytes_before
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA auto_vacuum").fetchone() == (2,)


def test_delete_for_runs_deletes_those_checkpoints_only(tmp_path: Path) -> None:
    with DeltaSaver(tmp_path / "c.sqlite") as saver:
        head: str | None = None
        log: list[Any] = []
        ids: dict[str, list[str]] = {"r1": [], "r2": []}
        for i in range(20):
            run_id = "r1" if i < 10 else "r2"
            log = [*log, i]
            cp = make_checkpoint({"log": log}, {"log": i + 1}, step=i)
            saver.put(config("t", head), cp, {"run_id": run_id}, {"log": i + 1})
            ids[run_id].append(cp["id"])
            head = cp["id"]
        saver.delete_for_runs([])
        saver.delete_for_runs(["r1"])
        assert {t.checkpoint["id"] for t in saver.list(config("t"))} == set(ids["r2"])
        got = saver.get_tuple(config("t"))
        assert got is not None and got.checkpoint["channel_values"]["log"] == list(range(20))


async def test_adelete_for_runs(tmp_path: Path) -> None:
    async with DeltaSaver(tmp_path / "c.sqlite") as saver:
        cp = make_checkpoint({"x": 1}, {"x": 1})
        await saver.aput(config("t"), cp, {"run_id": "r"}, {"x": 1})
        await saver.adelete_for_runs(["r"])
        assert await saver.aget_tuple(config("t")) is None


def test_copy_thread_copies_the_whole_history(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with DeltaSaver(path) as saver:
        run = _grown(saver, 70, 10)
        run.step(parent=run.ids[40])
        run.step()
        _grown_ns = make_checkpoint({"x": 1}, {"x": 1})
        saver.put(config("t", ns="child:1"), _grown_ns, {}, {"x": 1})
        saver.put_writes(config("t", run.head), [("n", 1)], "task")
        saver.copy_thread("t", "copy")
        source = [(t.checkpoint, t.pending_writes) for t in saver.list(config("t"))]
        copied = [(t.checkpoint, t.pending_writes) for t in saver.list(config("copy"))]
        assert copied == source
        assert saver.get_tuple(config("copy", ns="child:1")) is not None
        saver.delete_thread("t")
        run.thread = "copy"
        run.check()
        with pytest.raises(StoreError, match="already exists"):
            saver.copy_thread("copy", "copy")
    assert count(path, "delta_lineages") == 2


async def test_acopy_thread(tmp_path: Path) -> None:
    async with DeltaSaver(tmp_path / "c.sqlite") as saver:
        run = Run(saver)
        for _ in range(10):
            run.step()
        await saver.acopy_thread("t", "u")
        got = await saver.aget_tuple(config("u"))
        assert got is not None and got.checkpoint["channel_values"]["log"] == run.log
