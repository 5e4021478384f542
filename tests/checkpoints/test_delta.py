"""What is particular to the delta saver: what it stores, how it reads, how it uses threads."""

from __future__ import annotations

import asyncio
import gc
import sqlite3
import weakref
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import Checkpoint

from ai_agent.checkpoints import FORMAT_VERSION, DeltaSaver, open_checkpointer
from ai_agent.checkpoints._lineages import LINEAGE_MIN_ITEMS, MERGE_AT
from ai_agent.checkpoints._skeleton import MAX_DIFF_DEPTH
from ai_agent.errors import StoreError
from tests.checkpoints.conftest import config, make_checkpoint


def rows(path: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(sql, args).fetchall()


def count(path: Path, table: str) -> int:
    return int(rows(path, f"SELECT count(*) FROM {table}")[0][0])


class Run:
    """Puts checkpoints of one thread the way a graph would: a growing log plus a counter."""

    def __init__(self, saver: DeltaSaver, thread: str = "t") -> None:
        self.saver, self.thread = saver, thread
        self.head: str | None = None
        self.log: list[Any] = []
        self.version = 0
        self.ids: list[str] = []
        self.values: dict[str, list[Any]] = {}

    def step(self, log: list[Any] | None = None, *, parent: str | None = None) -> Checkpoint:
        if parent is not None:
            self.head = parent
            self.log = list(self.values[parent])
        self.log = list(log) if log is not None else [*self.log, {"i": len(self.log)}]
        self.version += 1
        cp = make_checkpoint(
            {"log": self.log, "n": self.version},
            {"log": self.version, "n": self.version},
            step=self.version,
        )
        self.saver.put(
            config(self.thread, self.head),
            cp,
            {"step": self.version},
            {"log": self.version, "n": self.version},
        )
        self.head = cp["id"]
        self.ids.append(cp["id"])
        self.values[cp["id"]] = list(self.log)
        return cp

    def check(self, saver: DeltaSaver | None = None) -> None:
        for cid, want in self.values.items():
            got = (saver or self.saver).get_tuple(config(self.thread, cid))
            assert got is not None
            assert got.checkpoint["channel_values"]["log"] == want


def test_appends_are_stored_once_in_merged_segments(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with DeltaSaver(path) as saver:
        run = Run(saver)
        for _ in range(200):
            run.step()
        run.check()
    assert count(path, "delta_lineages") == 1
    segments = rows(path, "SELECT count, merged FROM delta_segments ORDER BY start")
    assert sum(c for c, _ in segments) == 200  # each item is stored once
    assert len(segments) <= 200 // MERGE_AT + MERGE_AT
    assert all(merged for _, merged in segments[:-MERGE_AT])
    depths = [d for (d,) in rows(path, "SELECT depth FROM delta_checkpoints")]
    assert max(depths) == MAX_DIFF_DEPTH
    assert depths.count(0) == -(-200 // (MAX_DIFF_DEPTH + 1))


def test_a_short_list_is_stored_whole_and_a_long_one_as_a_lineage(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with DeltaSaver(path) as saver:
        run = Run(saver)
        for _ in range(LINEAGE_MIN_ITEMS - 1):
            run.step()
        assert count(path, "delta_lineages") == 0
        run.step()
        assert count(path, "delta_lineages") == 1
        run.step([{"compacted": True}])  # rewritten: a new lineage with its full value
        run.step()
        assert count(path, "delta_lineages") == 2
        run.check()


def test_an_unchanged_value_is_stored_once_however_many_versions(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    big = {"a": "x" * 1000}
    with DeltaSaver(path) as saver:
        head: str | None = None
        for version in range(1, 11):
            cp = make_checkpoint(
                {"same": big, "items": list(range(20))}, {"same": version, "items": version}
            )
            saver.put(config("t", head), cp, {}, {"same": version, "items": version})
            head = cp["id"]
        latest = saver.get_tuple(config("t"))
        assert latest is not None and latest.checkpoint["channel_values"]["same"] == big
    assert count(path, "delta_values") == 1  # the list is named in the skeleton, not a row
    assert count(path, "delta_segments") == 1


def test_small_values_and_list_views_live_in_the_skeleton(tmp_path: Path) -> None:
    """Format 2: a step that changes small scalars and grows a list writes no value row."""
    path = tmp_path / "c.sqlite"
    with DeltaSaver(path) as saver:
        head: str | None = None
        for step in range(1, 41):
            values = {"stage": f"stage-{step}", "n": step, "items": list(range(step + 10))}
            cp = make_checkpoint(values, dict.fromkeys(values, step))
            saver.put(config("t", head), cp, {}, dict.fromkeys(values, step))
            head = cp["id"]
        latest = saver.get_tuple(config("t"))
        assert latest is not None
        assert latest.checkpoint["channel_values"] == {
            "stage": "stage-40",
            "n": 40,
            "items": list(range(50)),
        }
        history = [t.checkpoint["channel_values"]["n"] for t in saver.list(config("t"))]
        assert history == list(range(40, 0, -1))
    assert count(path, "delta_values") == 0
    assert count(path, "delta_lineages") == 1


def test_a_reopened_saver_extends_the_same_lineage(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with DeltaSaver(path) as saver:
        run = Run(saver)
        for _ in range(40):
            run.step()
    with DeltaSaver(path) as saver:
        run.saver = saver
        for _ in range(40):  # no get_tuple first: the prefix is checked against stored bytes
            run.step()
        run.check()
    with DeltaSaver(path) as saver:
        saver.get_tuple(config("t"))  # what a resume does first: then appends are recognised
        run.saver = saver
        run.step()
        run.check()
    assert count(path, "delta_lineages") == 1


def test_equal_items_of_another_type_are_not_taken_for_the_stored_ones(tmp_path: Path) -> None:
    with DeltaSaver(tmp_path / "c.sqlite") as saver:
        run = Run(saver)
        run.step([1, 2, 3, True, {"a": 1}, 6, 7, 8])
        run.step([1.0, 2, 3, 1, {"a": 1}, 6, 7, 8, 9])  # == the old prefix, not the same values
        got = saver.get_tuple(config("t"))
        assert got is not None
        log = got.checkpoint["channel_values"]["log"]
        assert [type(x) for x in log[:4]] == [float, int, int, int]


def test_a_fork_grows_its_own_lineage_on_top_of_the_shared_prefix(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with DeltaSaver(path) as saver:
        run = Run(saver)
        for _ in range(50):
            run.step()
        fork_point = run.ids[19]
        run.step(parent=fork_point)  # time travel: continue from step 20 of 50
        for _ in range(40):
            run.step()
        run.check()
    bases = rows(path, "SELECT base, base_length FROM delta_lineages WHERE base IS NOT NULL")
    assert bases == [(1, 20)]
    with DeltaSaver(path) as saver:  # and cold
        run.check(saver)


def test_a_second_saver_on_the_same_file_sees_and_extends_the_thread(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with DeltaSaver(path) as one, DeltaSaver(path) as two:
        run = Run(one)
        for _ in range(10):
            run.step()
        run.saver = two
        for _ in range(10):
            run.step()
        run.saver = one  # one's cache is stale now: it must notice
        for _ in range(10):
            run.step()
        run.check(one)
        run.check(two)


def test_a_checkpoint_put_twice_replaces_the_first_and_keeps_its_children(tmp_path: Path) -> None:
    with DeltaSaver(tmp_path / "c.sqlite") as saver:
        run = Run(saver)
        first = run.step()
        run.step()
        again = Checkpoint(**{**first, "channel_values": {"log": run.values[first["id"]], "n": 99}})
        saver.put(config("t"), again, {"step": 1}, {"n": 1})
        got = saver.get_tuple(config("t", first["id"]))
        assert got is not None and got.checkpoint["channel_values"]["n"] == 99
        run.check()


def test_a_missing_row_is_reported_not_misread(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with DeltaSaver(path) as saver:
        run = Run(saver)
        for _ in range(12):
            run.step()
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM delta_segments")
    with DeltaSaver(path) as saver, pytest.raises(StoreError, match="lineage"):
        saver.get_tuple(config("t"))
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM delta_lineages")
    with DeltaSaver(path) as saver, pytest.raises(StoreError, match="missing"):
        saver.get_tuple(config("t"))
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM delta_values")
    with DeltaSaver(path) as saver, pytest.raises(StoreError, match="missing"):
        saver.get_tuple(config("t"))
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM delta_checkpoints WHERE full = 1")
    with DeltaSaver(path) as saver, pytest.raises(StoreError, match="missing"):
        saver.get_tuple(config("t"))


def test_a_newer_format_is_refused_and_a_non_database_too(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    DeltaSaver(path).close()
    assert rows(path, "SELECT value FROM delta_meta WHERE key = 'format'") == [
        (str(FORMAT_VERSION),)
    ]
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE delta_meta SET value = '99' WHERE key = 'format'")
    with pytest.raises(StoreError, match="format 99, newer"):
        DeltaSaver(path)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="not a usable checkpoint database"):
        DeltaSaver(junk)


def test_the_run_store_and_the_checkpoints_share_one_file(tmp_path: Path) -> None:
    from ai_agent.checkpoints import RunStore

    path = tmp_path / "c.sqlite"
    store = RunStore(path)
    with DeltaSaver(path) as saver:
        Run(saver).step()
    store.close()
    names = {n for (n,) in rows(path, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"agent_runs", "agent_journal", "delta_checkpoints", "delta_values"} <= names
    assert rows(path, "PRAGMA journal_mode") == [("wal",)]


async def test_sync_calls_work_on_the_event_loop_thread(tmp_path: Path) -> None:
    """AsyncSqliteSaver refuses sync calls from the loop's thread; this saver serves them."""
    async with open_checkpointer(tmp_path / "c.sqlite") as saver:
        assert isinstance(saver, DeltaSaver)
        run = Run(saver)
        run.step()
        run.step()
        assert saver.get_tuple(config("t")) is not None
        assert len(list(saver.list(config("t")))) == 2
        assert await saver.aget_tuple(config("t")) is not None


async def test_a_locked_database_does_not_block_the_event_loop(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    async with open_checkpointer(path) as saver:
        assert isinstance(saver, DeltaSaver)
        Run(saver).step()
        blocker = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        blocker.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        tick = asyncio.create_task(ticker())
        cp = make_checkpoint({"x": 1}, {"x": 1})
        put = asyncio.create_task(saver.aput(config("u"), cp, {}, {"x": 1}))
        await asyncio.sleep(0.3)
        assert not put.done()  # waiting for the lock, on the worker thread
        assert ticks >= 10  # while the loop kept running
        blocker.execute("COMMIT")
        await put
        tick.cancel()
        blocker.close()
        assert await saver.aget_tuple(config("u")) is not None


async def test_a_failed_deferred_write_is_raised_by_the_next_call(tmp_path: Path) -> None:
    async with open_checkpointer(tmp_path / "c.sqlite") as saver:
        assert isinstance(saver, DeltaSaver)
        run = Run(saver)
        run.step()
        await saver.aput_writes(config("t", run.head), [("x", 1)], "task")
        await saver._acall(saver.store.conn.close)  # the worker's next statement fails
        await saver.aput_writes(config("t", run.head), [("x", 2)], "task2")
        with pytest.raises(StoreError, match="an earlier checkpoint write failed"):
            await saver.aget_tuple(config("t"))


def test_close_is_idempotent_and_the_worker_stops(tmp_path: Path) -> None:
    saver = DeltaSaver(tmp_path / "c.sqlite")
    worker = list([saver._worker.thread])
    assert [t.name.startswith("ai-agent-checkpoints") for t in worker] == [True]
    saver.close()
    saver.close()
    assert not worker[0].is_alive()


async def test_aclose_is_idempotent(tmp_path: Path) -> None:
    saver = DeltaSaver(tmp_path / "c.sqlite")
    await saver.aclose()
    await saver.aclose()


@pytest.mark.parametrize("closing", ["close", "aclose"])
def test_a_closed_saver_is_freed_without_waiting_for_the_garbage_collector(
    tmp_path: Path, closing: str
) -> None:
    # A closed saver holding on to its store (and the state it cached) until the next full
    # collection made the reads after it slower and kept their memory (bench.resume).
    saver = DeltaSaver(tmp_path / "c.sqlite")
    run = Run(saver)
    run.step()
    assert saver.get_tuple(config("t")) is not None
    refs: list[weakref.ref[Any]] = [weakref.ref(saver), weakref.ref(saver.store)]
    gc.disable()
    try:
        if closing == "close":
            saver.close()
        else:
            asyncio.run(saver.aclose())
        del saver, run
        assert [ref() for ref in refs] == [None, None]
    finally:
        gc.enable()


def test_versions_are_small_integers(tmp_path: Path) -> None:
    with DeltaSaver(tmp_path / "c.sqlite") as saver:
        assert saver.get_next_version(None, None) == 1
        assert saver.get_next_version(7, None) == 8
        # A thread copied from another saver keeps string versions (test_langgraph_interop).
        assert saver.get_next_version("00000000000000000000000000000012.0.5", None) == (
            f"{13:032}.{0:016}"
        )
        assert saver.with_allowlist([("x", "Y")]) is saver
        assert saver.path.endswith("c.sqlite")
        assert saver.legacy_skipped == []


def test_a_small_cache_still_reads_every_thread_right(tmp_path: Path) -> None:
    with DeltaSaver(tmp_path / "c.sqlite", cache_threads=1) as saver:
        runs = [Run(saver, f"t{i}") for i in range(3)]
        for _ in range(20):
            for run in runs:
                run.step()
        for run in runs:
            run.check()


def test_memory_database(tmp_path: Path) -> None:
    with DeltaSaver(":memory:") as saver:
        run = Run(saver)
        for _ in range(10):
            run.step()
        run.check()
        assert saver._call(saver.store.size) > 0


def test_small_segments_are_found_without_walking_the_merged_chunks(tmp_path: Path) -> None:
    # A lineage's small segments (merged = 0) are counted when a saver first appends to it and
    # read back when they are merged. Found through the primary key, that walked every merged
    # chunk of the list, rows holding the items themselves: a cost that grew with the run (the
    # pipeline's SQL time per cycle rose by two thirds over 800 cycles). Each such statement
    # the saver runs must be answered from the index of small segments alone.
    path = tmp_path / "c.sqlite"
    run = Run(DeltaSaver(path))
    for _ in range(5 * MERGE_AT):
        run.step()
    run.saver.close()
    statements: list[str] = []
    with DeltaSaver(path) as saver:  # a new saver counts the small segments afresh
        saver.store.conn.set_trace_callback(statements.append)
        run.saver = saver
        for _ in range(MERGE_AT):  # through a merge
            run.step()
        saver.store.conn.set_trace_callback(None)
        run.check()
    unmerged = [s for s in statements if "delta_segments" in s and "merged = 0" in s]
    assert {s.split()[0] for s in unmerged} == {"SELECT", "DELETE"}
    with sqlite3.connect(path) as conn:
        for statement in unmerged:
            plan = str(conn.execute(f"EXPLAIN QUERY PLAN {statement}").fetchall())
            assert "USING INDEX delta_segments_unmerged" in plan, (statement, plan)


def fresh_read(path: Path) -> tuple[Any, list[str]]:
    """Thread ``t``'s latest checkpoint read by a freshly opened saver, and its statements."""
    statements: list[str] = []
    with DeltaSaver(path) as saver:
        saver._call(saver.store.conn.set_trace_callback, statements.append)
        got = saver.get_tuple(config("t"))
        saver._call(saver.store.conn.set_trace_callback, None)
    assert got is not None
    return got, statements


def test_a_resume_reads_the_latest_state_in_few_statements(tmp_path: Path) -> None:
    # What a resume pays on a freshly opened saver: every statement is prepared anew (most of
    # the SQL's cost on a fresh connection). Counted, never timed. No memory map: it would
    # halve the reading of a long list's pages, but SQLite then answers an I/O error or a file
    # another program truncated with SIGBUS, a crash, where a read() gives an error to report.
    path = tmp_path / "c.sqlite"
    with DeltaSaver(path) as saver:
        run = Run(saver)
        for _ in range(3 * MERGE_AT + 5):
            run.step()
    got, statements = fresh_read(path)
    assert got.checkpoint["channel_values"]["log"] == run.log
    # BEGIN, the thread, its head, the skeleton's chain, the list's lineage, its segments, the
    # pending writes, COMMIT.
    assert len(statements) <= 8, statements
    assert sum("delta_segments" in s for s in statements) == 1


def test_the_lineages_of_a_checkpoints_lists_are_read_in_one_statement(tmp_path: Path) -> None:
    # A fresh saver knows no lineage: it reads the rows of every list a checkpoint names in one
    # statement (the engine's state holds three lists), not one statement each.
    path = tmp_path / "c.sqlite"
    lists = {name: [{name: i} for i in range(2 * LINEAGE_MIN_ITEMS)] for name in "abc"}
    with DeltaSaver(path) as saver:
        head = None
        for step in (1, 2):
            values = {k: v[: len(v) // 2 * step] for k, v in lists.items()}
            cp = make_checkpoint(values, dict.fromkeys(values, step), step=step)
            saver.put(config("t", head), cp, {"step": step}, dict.fromkeys(values, step))
            head = cp["id"]
    got, statements = fresh_read(path)
    assert got.checkpoint["channel_values"] == lists
    assert sum("delta_lineages" in s for s in statements) == 1, statements
