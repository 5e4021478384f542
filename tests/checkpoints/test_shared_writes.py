"""A task's write of items the next checkpoint appends to a list is stored once (format 5).

Real SQLite files and real LangGraph graphs; what is read back is compared with what
LangGraph's InMemorySaver holds for the same run.
"""

from __future__ import annotations

import copy
import operator
import sqlite3
import threading
from pathlib import Path
from typing import Annotated, Any, cast

import ormsgpack
import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, StateGraph
from typing_extensions import TypedDict

from ai_agent.checkpoints import DeltaSaver, strict_serializer
from ai_agent.checkpoints import _writes as _writes_module
from ai_agent.checkpoints._lineages import read_range
from ai_agent.checkpoints._store import Batch, DeltaStore, ThreadCache
from ai_agent.checkpoints._worker import WalCheckpointer
from ai_agent.checkpoints._writes import DICT_VIEW_TYPE, ITEMS_TYPE
from ai_agent.checkpoints.reader import DeltaReader
from ai_agent.errors import CorruptRunError, StoreError
from tests.checkpoints.conftest import config, make_checkpoint

TEXT = "a tool's output. " * 60  # about 1 KB: worth naming where the list holds it


class Log(TypedDict):
    messages: Annotated[list[Any], operator.add]
    cycle: int


def _graph(cycles: int, *, fan_out: bool = False) -> StateGraph[Any]:
    """``tool`` appends a 1 KB message per cycle; with ``fan_out`` two tools do, in one step."""

    def tool(name: str) -> Any:
        def run(state: dict[str, Any]) -> dict[str, Any]:
            return {
                "messages": [{"role": "tool", "name": name, "text": f"{state['cycle']} {TEXT}"}]
            }

        return run

    def last(state: dict[str, Any]) -> dict[str, Any]:
        return {"cycle": state["cycle"] + 1}

    builder: StateGraph[Any] = StateGraph(Log)
    builder.add_node("tool", cast(Any, tool("a")))
    builder.add_node("last", cast(Any, last))
    builder.set_entry_point("tool")
    if fan_out:
        builder.add_node("other", cast(Any, tool("b")))
        builder.add_edge("__start__", "other")
        builder.add_edge("other", "last")
    builder.add_edge("tool", "last")
    builder.add_conditional_edges(
        "last", lambda s: END if s["cycle"] >= cycles else ["tool", "other"] if fan_out else "tool"
    )
    return builder


def _history(graph: Any, cfg: Any) -> list[Any]:
    """Values, next nodes and task results (ids differ from run to run: checkpoint ids do)."""
    return [
        (s.values, s.next, [(t.name, t.result) for t in s.tasks])
        for s in graph.get_state_history(cfg)
    ]


def _writes(tuples: Any) -> list[list[tuple[str, Any]]]:
    return [[(channel, value) for _, channel, value in t.pending_writes] for t in tuples]


def _entry_types(db: Path) -> list[str]:
    """The type of every write entry stored, read from the file itself."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT writes FROM delta_writes").fetchall()
    return [entry[2] for (blob,) in rows for entry in ormsgpack.unpackb(blob)]


@pytest.fixture
def log_never_restarted(monkeypatch: pytest.MonkeyPatch) -> None:
    """No WAL checkpoint thread during the run: its restart of the log counts, for ``PRAGMA
    data_version``, as another connection's commit, so the store trusts none of what it
    remembers for its next transaction, and that step's write keeps its own bytes (a cost in
    bytes, one step in 32 commits at most, never in meaning). It runs when the machine lets it,
    so the counts below are exact only without it."""
    monkeypatch.setattr(WalCheckpointer, "committed", lambda self: None)


@pytest.mark.usefixtures("log_never_restarted")
@pytest.mark.parametrize("fan_out", [False, True])
@pytest.mark.parametrize("durability", ["sync", "async"])
def test_an_appended_write_is_stored_once_and_reads_back_exactly(
    tmp_path: Path, durability: Any, fan_out: bool
) -> None:
    cycles = 20
    start = {"messages": [], "cycle": 0}
    cfg: Any = {"configurable": {"thread_id": "g"}, "recursion_limit": 500}
    reference = _graph(cycles, fan_out=fan_out).compile(checkpointer=InMemorySaver())
    reference.invoke(dict(start), cfg, durability=durability)
    db = tmp_path / "c.sqlite"
    with DeltaSaver(db) as saver:
        graph = _graph(cycles, fan_out=fan_out).compile(checkpointer=saver)
        graph.invoke(dict(start), cfg, durability=durability)
        assert _history(graph, cfg) == _history(reference, cfg)
        want = _writes(reference.checkpointer.list(cfg))  # type: ignore[union-attr]
        assert _writes(saver.list(cfg)) == want
    writers = 2 if fan_out else 1
    shared = _entry_types(db).count(ITEMS_TYPE)
    # Lists of fewer than 8 items are stored whole, not as a lineage: from then on, every
    # message is named where the list holds it, whichever of a step's writes and the next
    # put reaches the saver first.
    assert shared >= (cycles - 8) * writers
    with sqlite3.connect(db) as conn:
        (largest,) = conn.execute("SELECT max(length(writes)) FROM delta_writes").fetchone()
        (rows,) = conn.execute(
            "SELECT count(*) FROM delta_writes WHERE length(writes) > 500"
        ).fetchone()
    assert largest > 500 and rows <= 8 * writers  # the messages before the list had a lineage
    with DeltaReader(db) as reader:  # the plain reader (show, history, export) reads them too
        plain = _writes(reader.list(config("g")))
    assert plain == want


class _LateWritesSaver(DeltaSaver):
    """Takes every task's writes only after the put of the checkpoint they built.

    LangGraph calls ``put_writes`` on a background thread and does not wait for it before the
    next put (but for its own delta channels), so under load this order happens in any
    durability mode; here it happens every step.
    """

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.held: list[tuple[Any, ...]] = []
        self.lock = threading.Lock()

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        with self.lock:
            self.held.append((config, writes, task_id, task_path))

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        stored = super().put(config, checkpoint, metadata, new_versions)
        self.flush()
        return stored

    def flush(self) -> None:
        with self.lock:
            held, self.held = self.held, []
        for call in held:
            super().put_writes(*call)


@pytest.mark.usefixtures("log_never_restarted")
@pytest.mark.parametrize("fan_out", [False, True])
def test_writes_that_arrive_after_the_next_put_name_its_items_too(
    tmp_path: Path, fan_out: bool
) -> None:
    cycles = 20
    start = {"messages": [], "cycle": 0}
    cfg: Any = {"configurable": {"thread_id": "g"}, "recursion_limit": 500}
    reference = _graph(cycles, fan_out=fan_out).compile(checkpointer=InMemorySaver())
    reference.invoke(dict(start), cfg, durability="sync")
    db = tmp_path / "c.sqlite"
    late = _LateWritesSaver(db)
    with late as saver:
        graph = _graph(cycles, fan_out=fan_out).compile(checkpointer=saver)
        graph.invoke(dict(start), cfg, durability="sync")
        late.flush()
        assert _history(graph, cfg) == _history(reference, cfg)
        want = _writes(reference.checkpointer.list(cfg))  # type: ignore[union-attr]
        assert _writes(saver.list(cfg)) == want
    writers = 2 if fan_out else 1
    assert _entry_types(db).count(ITEMS_TYPE) >= (cycles - 8) * writers
    with DeltaReader(db) as reader:
        assert _writes(reader.list(config("g"))) == want


def test_prune_copy_and_a_reopened_saver_keep_the_named_items(tmp_path: Path) -> None:
    cfg: Any = {"configurable": {"thread_id": "g"}, "recursion_limit": 500}
    db = tmp_path / "c.sqlite"
    with DeltaSaver(db) as saver:
        graph = _graph(15).compile(checkpointer=saver)
        graph.invoke({"messages": [], "cycle": 0}, cfg, durability="sync")
        history = list(saver.list(cfg))
        keep = [t.config["configurable"]["checkpoint_id"] for t in history[5:9]]
        want = {t.config["configurable"]["checkpoint_id"]: t for t in history}
        saver.copy_thread("g", "copy")
        saver.prune_thread("g", keep=keep)
    with DeltaSaver(db) as saver:
        for cid in keep:
            got = saver.get_tuple(config("g", cid))
            assert got is not None
            assert got.pending_writes == want[cid].pending_writes
            assert got.checkpoint == want[cid].checkpoint
        copied = [(t.checkpoint, t.pending_writes) for t in saver.list(config("copy"))]
        assert copied == [(t.checkpoint, t.pending_writes) for t in history]


@pytest.mark.parametrize("damage", [[1, 2], ["x", 0, 1], [1, 0, 10_000]])
def test_a_damaged_reference_to_items_is_a_corrupt_run(tmp_path: Path, damage: list[Any]) -> None:
    cfg: Any = {"configurable": {"thread_id": "g"}, "recursion_limit": 500}
    db = tmp_path / "c.sqlite"
    with DeltaSaver(db) as saver:
        graph = _graph(12).compile(checkpointer=saver)
        graph.invoke({"messages": [], "cycle": 0}, cfg, durability="sync")
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT checkpoint_id, task_id, writes FROM delta_writes").fetchall()
        for cid, task_id, blob in rows:
            entries = ormsgpack.unpackb(blob)
            for entry in entries:
                if entry[2] == ITEMS_TYPE:
                    entry[3] = ormsgpack.packb(damage)
            conn.execute(
                "UPDATE delta_writes SET writes = ? WHERE checkpoint_id = ? AND task_id = ?",
                (ormsgpack.packb(entries), cid, task_id),
            )
    with DeltaSaver(db) as saver, pytest.raises(CorruptRunError, match="cannot be read back"):
        list(saver.list(cfg))


def test_a_dict_write_appended_as_it_is_names_the_log(tmp_path: Path) -> None:
    """The dict graph's writes (a dict edited in place) name the log the next put extended."""
    from tests.checkpoints.test_dicts import _graph as dict_graph

    start = {"docs": {}, "log": [], "cycle": 0}
    cfg: Any = {"configurable": {"thread_id": "g"}, "recursion_limit": 200}
    reference = dict_graph(20).compile(checkpointer=InMemorySaver())
    reference.invoke(copy.deepcopy(start), cfg, durability="sync")
    db = tmp_path / "c.sqlite"
    with DeltaSaver(db) as saver:
        graph = dict_graph(20).compile(checkpointer=saver)
        graph.invoke(copy.deepcopy(start), cfg, durability="sync")
        assert _history(graph, cfg) == _history(reference, cfg)
        want = _writes(reference.checkpointer.list(cfg))  # type: ignore[union-attr]
        assert _writes(saver.list(cfg)) == want
        saver.copy_thread("g", "copy")
        assert _writes(saver.list(config("copy"))) == want
        history = list(saver.list(cfg))
        keep = [t.config["configurable"]["checkpoint_id"] for t in history[3:6]]
        saver.prune_thread("g", keep=keep)
        kept = [saver.get_tuple(config("g", cid)) for cid in keep]
        assert _writes(kept) == want[3:6]
    assert _entry_types(db).count(DICT_VIEW_TYPE) >= 10
    with DeltaReader(db) as reader:
        assert _writes(reader.list(config("copy"))) == want


@pytest.mark.parametrize("where", [[1], [1, "x"], "x"])
def test_a_damaged_reference_to_a_dict_log_is_refused(tmp_path: Path, where: Any) -> None:
    with DeltaSaver(tmp_path / "c.sqlite") as saver, pytest.raises(StoreError, match="dict log"):
        _writes_module._named_dict(saver.store, 1, where, None)


def test_array_and_change_headers_are_read_for_every_msgpack_width() -> None:
    for n in (3, 20, 70_000):
        blob = ormsgpack.packb(list(range(n)))
        assert _writes_module._array_head(blob) == n
        assert blob[_writes_module._head_size(blob) :] == b"".join(
            ormsgpack.packb(i) for i in range(n)
        )
    assert _writes_module._array_head(ormsgpack.packb({"a": 1})) == 0
    batch = Batch()
    records = [["doc", "x" * 300]]
    batch.appended.append((300, 70_000, records, ormsgpack.packb(records)))
    changes = ormsgpack.packb([300, 70_000, records])
    assert _writes_module._dict_at(changes, batch.appended) == (DICT_VIEW_TYPE, [300, 70_001])
    assert _writes_module._dict_at(ormsgpack.packb([300, -1, records]), batch.appended) is None
    assert _writes_module._dict_at(ormsgpack.packb({"a": 1}), batch.appended) is None


def test_items_are_read_across_a_fork_from_only_the_pieces_holding_them(tmp_path: Path) -> None:
    base = [f"item {i}" for i in range(10)]
    with DeltaSaver(tmp_path / "c.sqlite") as saver:
        first = saver.put(config("t"), make_checkpoint({"l": base}, {"l": 1}, step=1), {}, {"l": 1})
        saver.put(first, make_checkpoint({"l": [*base, "a", "b"]}, {"l": 2}, step=2), {}, {"l": 2})
        fork = [*base, "x", "y", "z"]  # from the first checkpoint again: a lineage of its own
        saver.put(first, make_checkpoint({"l": fork}, {"l": 3}, step=3), {}, {"l": 3})
        store = saver.store
        (lineage, tkey) = store.conn.execute(
            "SELECT id, thread FROM delta_lineages ORDER BY id DESC LIMIT 1"
        ).fetchone()
        assert (
            read_range(store, lineage, 8, 4, owner=tkey) == fork[8:12]
        )  # base's tail, fork's head
        assert read_range(store, lineage, 11, 2, owner=tkey) == fork[11:13]  # the fork's items only
        assert read_range(store, lineage, 0, 3, owner=tkey) == fork[:3]  # the base's only
        with pytest.raises(StoreError, match="does not hold items"):
            read_range(store, lineage, 12, 5, owner=tkey)


def test_only_a_write_whose_bytes_were_appended_is_named() -> None:
    store = DeltaStore(":memory:", strict_serializer())
    batch = Batch()
    items = [{"n": i, "text": TEXT} for i in range(3)]
    batch.appended.append((7, 20, items, ormsgpack.packb(items)))

    def at(written: list[Any]) -> Any:
        return _writes_module._items_at(store, ormsgpack.packb(written), batch.appended)

    assert at(items) == (ITEMS_TYPE, [7, 20, 3])
    assert at(items[1:2]) == (ITEMS_TYPE, [7, 21, 1])
    assert at([*items, items[0]]) is None  # longer than appended
    assert at([items[2], items[1], items[0]]) is None  # reordered
    assert at([{"n": 9, "text": TEXT}]) is None  # not appended
    cache = ThreadCache()
    big = [0, "messages", "msgpack", ormsgpack.packb(items)]
    small = [0, "stage", "msgpack", b"\xa1x"]
    for n in range(20):
        _writes_module._remember(cache, f"c{n}", "task", [big])
    assert list(cache.writes) == [f"c{n}" for n in range(4, 20)]  # the newest 16 checkpoints
    _writes_module._remember(cache, "c19", "task", [small])  # merged into a row with no list
    _writes_module._remember(cache, "c20", "task", [small])
    assert cache.writes["c19"] == {} and "c20" not in cache.writes
    store.close()
