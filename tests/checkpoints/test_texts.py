"""Large texts are stored once per database: across writes, values, lists, checkpoints and threads.

Every test works on a real SQLite file and measures it (pages in use after folding the WAL in),
or counts the rows of ``agent_texts``; every checkpoint and write is read back as it was put.
"""

from __future__ import annotations

import copy
import sqlite3
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ai_agent.checkpoints import CallPosition, DeltaSaver, ModelRequest, RunStore
from ai_agent.checkpoints._texts import MARK, TEXT_MIN_BYTES
from ai_agent.errors import CorruptRunError
from ai_agent.state import Message
from tests.checkpoints.conftest import config, make_checkpoint
from tests.checkpoints.test_delta import count, rows
from tests.checkpoints.test_properties import same

KB = 1024


def text(n: int, seed: str = "a") -> str:
    """``n`` characters that differ from any other seed's."""
    unit = f"{seed} is a line of a long plan; "
    return (unit * (n // len(unit) + 1))[:n]


def used_bytes(path: Path) -> int:
    """Bytes of the pages the database uses, with the WAL folded in (free pages left out)."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    return int((pages - free) * size)


class Thread:
    """Checkpoints of one thread as the engine makes them: a plan, a message list, writes."""

    def __init__(self, saver: DeltaSaver, thread: str) -> None:
        self.saver, self.thread = saver, thread
        self.head: str | None = None
        self.version = 0
        self.values: dict[str, dict[str, Any]] = {}
        self.writes: dict[str, list[tuple[str, str, Any]]] = {}

    def step(self, values: dict[str, Any], writes: Sequence[tuple[str, Any]] = ()) -> str:
        self.version += 1
        versions: dict[str, Any] = dict.fromkeys(values, self.version)
        cp = make_checkpoint(values, versions, step=self.version)
        self.saver.put(config(self.thread, self.head), cp, {"step": self.version}, versions)
        self.head = cp["id"]
        self.values[cp["id"]] = copy.deepcopy(values)
        if writes:
            self.saver.put_writes(config(self.thread, cp["id"]), writes, "task-1")
            self.writes[cp["id"]] = [("task-1", ch, copy.deepcopy(v)) for ch, v in writes]
        return cp["id"]

    def check(self, saver: DeltaSaver | None = None) -> None:
        for cid, want in self.values.items():
            got = (saver or self.saver).get_tuple(config(self.thread, cid))
            assert got is not None
            assert same(got.checkpoint["channel_values"], want), cid
            assert got.pending_writes == self.writes.get(cid, [])
        listed = {t.checkpoint["id"]: t for t in (saver or self.saver).list(config(self.thread))}
        assert set(listed) == set(self.values)
        for cid, item in listed.items():
            assert same(item.checkpoint["channel_values"], self.values[cid])


def a_plan_run(saver: DeltaSaver, thread: str, plan: str) -> Thread:
    """The plan as the engine stores it: a resume write, a plans value, messages, a rewrite."""
    run = Thread(saver, thread)
    task = {"role": "user", "content": "add", "kind": "task"}
    run.step({"messages": [task], "plans": []})
    run.step(
        {"messages": [task], "plans": []},
        [("__resume__", {"instructions": plan}), ("plans", [{"instructions": plan}])],
    )
    said = {"role": "user", "content": plan, "kind": "plan"}
    messages = [task, said]
    run.step({"messages": messages, "plans": [{"plan": {"instructions": plan}}]})
    for i in range(10):  # a lineage: the plan in its first segment, then appends
        messages = [*messages, {"role": "assistant", "content": f"step {i}"}]
        run.step({"messages": messages, "plans": [{"plan": {"instructions": plan}}]})
    run.step({"messages": [task, said], "plans": [{"plan": {"instructions": plan}}]})  # rewritten
    return run


def test_a_large_text_in_writes_values_lists_and_rewrites_is_stored_once(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    plan = text(400 * KB)
    with DeltaSaver(path) as saver:
        empty = used_bytes(path)
        run = a_plan_run(saver, "t", plan)
        run.check()
        grown = used_bytes(path) - empty
        assert grown < 1.3 * len(plan), f"{grown:,} bytes for a {len(plan):,}-byte plan"
    assert count(path, "agent_texts") == 1
    with DeltaSaver(path) as saver:  # a cold cache reads the same
        run.check(saver)


def test_the_same_large_text_in_three_threads_is_one_row(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    plan = text(400 * KB)
    with DeltaSaver(path) as saver:
        empty = used_bytes(path)
        runs = [a_plan_run(saver, thread, plan) for thread in ("a", "b", "c")]
        grown = used_bytes(path) - empty
        assert grown < 1.3 * len(plan), f"{grown:,} bytes for one plan in three threads"
        for run in runs:
            run.check()
    assert count(path, "agent_texts") == 1


def test_prune_removes_a_text_when_its_last_reference_goes(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    old, new = text(100 * KB, "old"), text(100 * KB, "new")
    with DeltaSaver(path) as saver:
        runs = {thread: a_plan_run(saver, thread, old) for thread in ("a", "b")}
        runs["a"].step({"messages": [], "plans": [{"plan": {"instructions": new}}]})
        assert count(path, "agent_texts") == 2
        saver.prune_thread("a", keep=1)  # "b" still holds the old plan
        assert count(path, "agent_texts") == 2
        saver.prune_thread("b", keep=1)  # the old plan is in "b"'s latest checkpoint
        assert count(path, "agent_texts") == 2
        saver.delete_thread("b")
        assert count(path, "agent_texts") == 1
        latest = saver.get_tuple(config("a"))
        assert latest is not None
        assert latest.checkpoint["channel_values"]["plans"][0]["plan"]["instructions"] == new
        saver.delete_thread("a")
        assert count(path, "agent_texts") == 0


def test_a_copied_thread_shares_the_texts_and_keeps_them_when_its_source_goes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.sqlite"
    plan = text(300 * KB)
    with DeltaSaver(path) as saver:
        source = a_plan_run(saver, "src", plan)
        before = used_bytes(path)
        saver.copy_thread("src", "dst")
        assert used_bytes(path) - before < len(plan) / 4  # the rows are copied, the text is not
        saver.delete_thread("src")
        assert count(path, "agent_texts") == 1
        source.thread = "dst"
        source.check()


def test_deleting_runs_sweeps_their_texts(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with DeltaSaver(path) as saver:
        for i, thread in enumerate(("a", "b")):
            cp = make_checkpoint({"plan": text(50 * KB, thread)}, {"plan": 1})
            saver.put(config(thread), cp, {"run_id": f"run-{i}"}, {"plan": 1})
        saver.delete_for_runs(["run-0"])
        assert count(path, "agent_texts") == 1
        assert saver.get_tuple(config("a")) is None
        assert saver.get_tuple(config("b")) is not None


def test_odd_values_round_trip_around_the_texts(tmp_path: Path) -> None:
    """Marks' look-alikes, bytes, multi-byte text, a text as a whole value, a text as a key."""
    path = tmp_path / "c.sqlite"
    wide = "é" * (TEXT_MIN_BYTES // 2)  # under the limit in characters, at it in bytes
    odd: dict[str, Any] = {
        "lookalike": MARK + "s" + "0" * 64,
        "bare mark": MARK,
        "wide": wide,
        "narrow": "x" * (TEXT_MIN_BYTES - 1),
        "bytes": b"\x00\xff" * TEXT_MIN_BYTES,
        "nested": [[{"deep": text(5 * KB)}], (MARK + "b", text(6 * KB))],
        text(5 * KB): "a long key stays where it is",
    }
    values: dict[str, Any] = {"odd": odd, "whole": text(8 * KB), "raw": b"r" * (8 * KB)}
    with DeltaSaver(path) as saver:
        run = Thread(saver, "t")
        run.step(values, [("odd", odd), ("whole", text(8 * KB))])
        expected = copy.deepcopy(values)
        expected["odd"]["nested"][1] = list(odd["nested"][1])  # msgpack has no tuples
        run.values[run.head or ""] = expected
        run.writes[run.head or ""] = [
            ("task-1", "odd", {**expected["odd"]}),
            ("task-1", "whole", text(8 * KB)),
        ]
        run.check()
    with DeltaSaver(path) as saver:
        run.check(saver)
    # wide, bytes, deep, the tuple's text, whole, raw; and the three look-alikes, kept as texts
    # of their own so that every mark in a stored value is one. Not: narrow, the long key.
    assert count(path, "agent_texts") == 9


def test_a_text_another_connection_swept_is_stored_again(tmp_path: Path) -> None:
    """The saver remembers which texts exist; a sweep by another connection makes it forget."""
    path = tmp_path / "c.sqlite"
    plan = text(50 * KB)
    with DeltaSaver(path) as first, DeltaSaver(path) as second:
        one = Thread(first, "a")
        one.step({"plan": plan})
        Thread(second, "b").step({"plan": plan})
        second.delete_thread("a")
        second.delete_thread("b")
        assert count(path, "agent_texts") == 0
        one.values.clear()
        one.head = None
        one.step({"plan": plan})  # the same text again, from the saver that stored it first
        one.check()
    assert count(path, "agent_texts") == 1


def test_a_missing_text_is_a_corrupt_checkpoint_not_a_wrong_value(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with DeltaSaver(path) as saver:
        Thread(saver, "t").step({"plan": text(50 * KB)})
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM agent_texts")
    with DeltaSaver(path) as saver, pytest.raises(CorruptRunError, match="names text"):
        saver.get_tuple(config("t"))


def test_a_text_that_is_not_utf8_is_a_corrupt_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with DeltaSaver(path) as saver:
        Thread(saver, "t").step({"plan": text(50 * KB)})
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE agent_texts SET body = x'fffe'")
    with DeltaSaver(path) as saver, pytest.raises(CorruptRunError, match="is not UTF-8"):
        saver.get_tuple(config("t"))


def test_values_under_the_limit_name_no_text(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    with DeltaSaver(path) as saver:
        run = Thread(saver, "t")
        for i in range(40):
            run.step({"log": [text(TEXT_MIN_BYTES - 1, str(j)) for j in range(i)]})
        run.check()
    assert count(path, "agent_texts") == 0
    tables = ("delta_values", "delta_segments", "delta_writes", "delta_checkpoints")
    assert all(
        rows(path, f"SELECT count(*) FROM {t} WHERE texts IS NOT NULL") == [(0,)] for t in tables
    )


async def test_the_checkpoints_and_the_recorded_calls_share_one_row(tmp_path: Path) -> None:
    """In one file the plan a checkpoint holds and the plan a model request sent are one text.

    Each side's sweep keeps what the other still names.
    """
    path = tmp_path / "c.sqlite"
    plan = text(300 * KB)
    store = RunStore(path)
    try:
        with DeltaSaver(path) as saver:
            empty = used_bytes(path)
            a_plan_run(saver, "t", plan)
            message = Message(role="user", content=plan, kind="plan")
            request = ModelRequest(messages=[message], tools=[], params={})
            position = CallPosition(step=1, stage="draft", checkpoint_id=None)
            await store.record_model_call(
                "t", position, "h", request, message=None, usage={}, error=None, latency_ms=1
            )
            assert used_bytes(path) - empty < 1.3 * len(plan)
            assert count(path, "agent_texts") == 1
            await store.delete_calls("t")  # the checkpoints still name it
            assert count(path, "agent_texts") == 1
            await store.record_model_call(
                "t", position, "h", request, message=None, usage={}, error=None, latency_ms=1
            )
            saver.delete_thread("t")  # the recorded request still names it
            (recorded,) = await store.model_calls("t")
            assert await store.model_request(recorded["seq"]) == request
            await store.delete_calls("t")
            assert count(path, "agent_texts") == 0
    finally:
        store.close()


async def test_a_recorded_request_whose_text_is_missing_is_a_corrupt_row(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    store = RunStore(path)
    try:
        message = Message(role="user", content=text(20 * KB))
        request = ModelRequest(messages=[message], tools=[], params={})
        position = CallPosition(step=1, stage="draft", checkpoint_id=None)
        seq = await store.record_model_call(
            "t", position, "h", request, message=None, usage={}, error=None, latency_ms=1
        )
        with sqlite3.connect(path) as conn:
            conn.execute("DELETE FROM agent_texts")
        with pytest.raises(CorruptRunError, match="it lists a part that is not stored"):
            await store.model_request(seq)
    finally:
        store.close()


# Hypothesis: random values full of large texts, shared across threads, copied, pruned --------
POOL = [
    text(5 * KB, "p"),
    text(9 * KB, "q"),
    "é" * (TEXT_MIN_BYTES // 2),
    "z" * (TEXT_MIN_BYTES - 1),
    MARK + "s" + "1" * 64,
    MARK,
    b"\x01" * TEXT_MIN_BYTES,
]
leaf = st.none() | st.integers(-5, 5) | st.text(max_size=4) | st.sampled_from(POOL)
value = st.recursive(
    leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)
THREADS = ("a", "b", "c")
op = st.one_of(
    st.tuples(
        st.sampled_from(["put", "append"]),
        st.sampled_from(THREADS),
        st.lists(value, max_size=9),
        value,
    ),
    st.tuples(st.just("write"), st.sampled_from(THREADS), value, st.none()),
    st.tuples(st.just("copy"), st.sampled_from(THREADS), st.none(), st.none()),
    st.tuples(st.just("prune"), st.sampled_from(THREADS), st.integers(0, 3), st.none()),
    st.tuples(st.just("delete"), st.sampled_from(THREADS), st.none(), st.none()),
    st.tuples(st.just("reopen"), st.none(), st.none(), st.none()),
)


class Model:
    """What the threads should hold after each operation, and the saver under test."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.saver = DeltaSaver(path)
        self.runs: dict[str, Thread] = {}
        self.writes = 0
        self.copies = 0

    def apply(self, kind: str, thread: str, a: Any, b: Any) -> None:
        run = self.runs.get(thread)
        if kind == "reopen":
            self.saver.close()
            self.saver = DeltaSaver(self.path)
            for each in self.runs.values():
                each.saver = self.saver
        elif kind in ("put", "append"):
            run = self.runs.setdefault(thread, Thread(self.saver, thread))
            before = run.values[run.head]["log"] if run.head in run.values else []
            run.step({"log": [*before, *a] if kind == "append" else a, "x": b})
        elif run is None:
            return
        elif kind == "write" and run.head in run.values:
            self.writes += 1
            task = f"task-{self.writes:03d}"
            self.saver.put_writes(config(thread, run.head), [("log", a)], task)
            run.writes.setdefault(run.head or "", []).append((task, "log", copy.deepcopy(a)))
        elif kind == "copy":
            self.copies += 1
            target = f"{thread}-copy-{self.copies}"
            self.saver.copy_thread(thread, target)
            twin = self.runs[target] = Thread(self.saver, target)
            twin.values, twin.writes = copy.deepcopy(run.values), copy.deepcopy(run.writes)
        elif kind == "prune":
            self.saver.prune_thread(thread, keep=a, reclaim=False)
            kept = sorted(run.values)[-a:] if a else []
            run.values = {cid: run.values[cid] for cid in kept}
            run.writes = {cid: w for cid, w in run.writes.items() if cid in kept}
            run.head = kept[-1] if kept else None
        elif kind == "delete":
            self.saver.delete_thread(thread)
            del self.runs[thread]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(op, min_size=1, max_size=25))
def test_large_texts_round_trip_through_threads_copies_and_prunes(ops: list[Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        model = Model(Path(tmp) / "c.sqlite")
        try:
            for kind, thread, a, b in ops:
                model.apply(kind, thread, a, b)
            for run in model.runs.values():
                run.check(model.saver)
            for thread in list(model.runs):
                model.saver.delete_thread(thread)
        finally:
            model.saver.close()
        assert count(model.path, "agent_texts") == 0  # nothing left behind
