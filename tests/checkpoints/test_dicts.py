"""Dict channels stored as change logs (format 4): a step costs the keys it changed.

Real SQLite files; the dict is edited in place between steps, as plain LangGraph graphs do.
"""

from __future__ import annotations

import copy
import operator
import sqlite3
from pathlib import Path
from typing import Annotated, Any, cast

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, StateGraph
from typing_extensions import TypedDict

from ai_agent.checkpoints import DeltaSaver
from ai_agent.checkpoints._dicts import COMPACT_SLACK, is_dict_view
from ai_agent.checkpoints._reads import skeleton
from ai_agent.errors import CorruptRunError
from tests.checkpoints.conftest import config, make_checkpoint

TEXT = "x" * 900


class DictRun:
    """Puts checkpoints of one thread whose ``docs`` dict is edited in place between steps."""

    def __init__(self, saver: DeltaSaver, thread: str = "t") -> None:
        self.saver, self.thread = saver, thread
        self.head: str | None = None
        self.docs: dict[Any, Any] = {}
        self.version = 0
        self.expected: dict[str, dict[str, Any]] = {}

    def step(self, *, parent: str | None = None, docs: dict[str, Any] | None = None) -> str:
        if parent is not None:
            self.head = parent
            self.docs = copy.deepcopy(self.expected[parent])
        if docs is not None:
            self.docs = docs
        self.version += 1
        cp = make_checkpoint(
            {"docs": self.docs, "n": self.version},
            {"docs": self.version, "n": self.version},
            step=self.version,
        )
        self.saver.put(config(self.thread, self.head), cp, {}, {"docs": self.version})
        self.head = cp["id"]
        self.expected[cp["id"]] = copy.deepcopy(self.docs)
        return cp["id"]

    def check(self, saver: DeltaSaver | None = None) -> None:
        for cid, want in self.expected.items():
            got = (saver or self.saver).get_tuple(config(self.thread, cid))
            assert got is not None
            assert got.checkpoint["channel_values"]["docs"] == want, cid

    def ref(self, cid: str | None = None) -> Any:
        store = self.saver.store
        tkey = store.thread_key(self.thread, "", create=False)
        assert tkey is not None
        return skeleton(store, tkey, cid or str(self.head)).refs["docs"]


def _stored_bytes(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        segments = conn.execute("SELECT coalesce(sum(length(items)), 0) FROM delta_segments")
        values = conn.execute("SELECT coalesce(sum(length(value)), 0) FROM delta_values")
        return int(segments.fetchone()[0]) + int(values.fetchone()[0])


def test_a_dict_edited_in_place_costs_each_step_only_what_changed(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    with DeltaSaver(db) as saver:
        run = DictRun(saver)
        costs: list[int] = []
        for i in range(120):
            before = _stored_bytes(db)
            run.docs[f"doc{i}"] = {"text": TEXT, "seen": 0}  # a new entry, in place
            run.docs[f"doc{i // 2}"]["seen"] += 1  # an old entry, edited in place
            run.step()
            costs.append(_stored_bytes(db) - before)
        assert is_dict_view(run.ref())
        run.check()
    # Two entries a step (one new, one edited), however large the dict has grown.
    late, early = sum(costs[-20:]), sum(costs[10:30])
    assert late <= early * 1.1, (early, late)
    assert max(costs[10:]) < 4 * (len(TEXT) + 100)
    with DeltaSaver(db) as again:
        run.check(again)


def test_a_small_dict_is_stored_whole_and_a_large_one_as_a_log(tmp_path: Path) -> None:
    with DeltaSaver(tmp_path / "c.sqlite") as saver:
        run = DictRun(saver)
        run.docs["a"] = 1
        run.step()
        assert not is_dict_view(run.ref())
        run.docs["b"] = TEXT * 2
        run.step()
        assert is_dict_view(run.ref())
        run.check()


def test_removed_keys_and_replaced_values_read_back(tmp_path: Path) -> None:
    with DeltaSaver(tmp_path / "c.sqlite") as saver:
        run = DictRun(saver)
        run.docs.update({f"k{i}": {"text": TEXT, "n": i} for i in range(5)})
        run.step()
        del run.docs["k1"]
        run.docs["k2"] = [1, 2, 3]
        run.docs["k3"]["n"] = "three"
        run.step()
        run.docs.clear()
        run.docs["only"] = TEXT * 2
        run.step()
        run.step()  # nothing changed: the same reference
        refs = [run.ref(cid) for cid in run.expected]
        assert refs[-1] == refs[-2]
        run.check()


def test_a_key_that_is_not_a_str_stores_the_dict_whole(tmp_path: Path) -> None:
    with DeltaSaver(tmp_path / "c.sqlite") as saver:
        run = DictRun(saver)
        run.docs.update({f"k{i}": TEXT for i in range(3)})
        run.step()
        assert is_dict_view(run.ref())
        run.docs[7] = "seven"
        run.step()
        assert not is_dict_view(run.ref())
        del run.docs[7]
        run.step()
        run.check()


def test_an_edit_equal_in_value_but_not_in_type_is_kept(tmp_path: Path) -> None:
    with DeltaSaver(tmp_path / "c.sqlite") as saver:
        run = DictRun(saver)
        run.docs.update({f"k{i}": TEXT for i in range(3)})
        run.docs["n"] = [1, 2]
        run.step()
        run.docs["n"] = (1, 2)  # msgpack stores a tuple as a list: the same stored value
        run.docs["k0"] = TEXT + "!"
        run.step()
        got = saver.get_tuple(config("t"))
        assert got is not None and got.checkpoint["channel_values"]["docs"]["k0"] == TEXT + "!"


def test_a_branch_from_an_older_checkpoint_forks_the_log(tmp_path: Path) -> None:
    with DeltaSaver(tmp_path / "c.sqlite") as saver:
        run = DictRun(saver)
        ids = []
        for i in range(6):
            run.docs[f"k{i}"] = TEXT
            ids.append(run.step())
        run.docs["k0"] = "main"
        run.step()
        run.step(parent=ids[2])
        run.docs["k0"] = "branch"
        run.docs["b"] = TEXT
        run.step()
        run.check()


def test_a_key_changed_over_and_over_is_compacted(tmp_path: Path) -> None:
    with DeltaSaver(tmp_path / "c.sqlite") as saver:
        run = DictRun(saver)
        run.docs.update({f"k{i}": TEXT for i in range(4)})
        for i in range(300):
            run.docs["counter"] = i
            run.step()
        lineage, length, _ = run.ref()
        assert length <= 2 * len(run.docs) + COMPACT_SLACK + 1
        assert lineage > 1  # written anew at least once
        run.check()


def test_a_reopened_saver_compares_with_the_stored_dict(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    with DeltaSaver(db) as saver:
        run = DictRun(saver)
        run.docs.update({f"k{i}": {"text": TEXT, "n": i} for i in range(30)})
        run.step()
    with DeltaSaver(db) as saver:
        run.saver = saver
        got = saver.get_tuple(config("t"))
        assert got is not None
        docs = got.checkpoint["channel_values"]["docs"]
        before = _stored_bytes(db)
        docs["k3"]["n"] = -3  # the dict read back, edited in place
        run.step(docs=docs)
        assert _stored_bytes(db) - before < 2 * len(TEXT)
        run.check()


def test_a_write_of_a_logged_dict_is_stored_as_its_changes(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    with DeltaSaver(db) as saver:
        run = DictRun(saver)
        run.docs.update({f"k{i}": TEXT for i in range(40)})
        head = run.step()
        run.docs["new"] = "value"
        del run.docs["k0"]
        saver.put_writes(config("t", head), [("docs", run.docs), ("n", 5)], "task-1")
        with sqlite3.connect(db) as conn:
            (size,) = conn.execute("SELECT length(writes) FROM delta_writes").fetchone()
        assert size < len(TEXT)
        run.docs["later"] = "not in the write"  # edits after the write do not reach it
        want = {k: v for k, v in run.docs.items() if k != "later"}
        got = saver.get_tuple(config("t", head))
        assert got is not None
        assert got.pending_writes == [("task-1", "docs", want), ("task-1", "n", 5)]
        listed = next(iter(saver.list(config("t"))))
        assert listed.pending_writes == got.pending_writes
        saver.copy_thread("t", "copy")
        saver.delete_thread("t")
        copied = saver.get_tuple(config("copy", head))
        assert copied is not None and copied.pending_writes == got.pending_writes


def test_a_prune_keeps_what_kept_writes_are_read_against(tmp_path: Path) -> None:
    with DeltaSaver(tmp_path / "c.sqlite") as saver:
        run = DictRun(saver)
        for i in range(40):
            run.docs[f"k{i}"] = TEXT
            run.step()
        first = run.step(docs={"fresh": TEXT * 2})  # a new log: the old one only serves writes
        run.docs = {f"k{i}": TEXT for i in range(39)} | {"w": 1}
        saver.put_writes(config("t", first), [("docs", run.docs)], "task-1")
        saver.prune_thread("t", keep=1)
        got = saver.get_tuple(config("t"))
        assert got is not None and got.pending_writes == [("task-1", "docs", run.docs)]


def test_a_damaged_change_record_is_a_corrupt_run_not_a_wrong_dict(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    with DeltaSaver(db) as saver:
        run = DictRun(saver)
        run.docs.update({f"k{i}": TEXT for i in range(3)})
        run.step()
        lineage = run.ref()[0]
        record = saver.serde.dumps_typed([[1, 2, 3]])[1]
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE delta_segments SET items = ? WHERE lineage = ?", (record, lineage))
    with DeltaSaver(db) as saver, pytest.raises(CorruptRunError, match="cannot be read back"):
        saver.get_tuple(config("t"))


class Docs(TypedDict):
    docs: dict[str, Any]
    log: Annotated[list[str], operator.add]
    cycle: int


def _graph(cycles: int) -> StateGraph[Any]:
    def add(state: dict[str, Any]) -> dict[str, Any]:
        docs, cycle = state["docs"], state["cycle"]
        docs[f"doc{cycle}"] = {"text": TEXT, "seen": 0}
        return {"docs": docs, "log": [f"added {cycle}"]}

    def touch(state: dict[str, Any]) -> dict[str, Any]:
        docs = state["docs"]
        older = docs.get(f"doc{state['cycle'] - 2}")
        if older is not None:
            older["seen"] += 1  # an older entry, edited in place
        docs.pop(f"doc{state['cycle'] - 5}", None)
        return {"docs": docs, "cycle": state["cycle"] + 1}

    builder: StateGraph[Any] = StateGraph(Docs)
    builder.add_node("add", cast(Any, add))
    builder.add_node("touch", cast(Any, touch))
    builder.set_entry_point("add")
    builder.add_edge("add", "touch")
    builder.add_conditional_edges("touch", lambda s: END if s["cycle"] >= cycles else "add")
    return builder


# Not "async": there LangGraph stores a checkpoint while the next node already edits the same
# dict in place, so any saver (InMemorySaver and format 3 included) may record a later state.
@pytest.mark.parametrize("durability", ["sync", "exit"])
def test_a_plain_graph_reads_back_what_the_in_memory_saver_holds(
    tmp_path: Path, durability: Any
) -> None:
    start = {"docs": {}, "log": [], "cycle": 0}
    cfg: Any = {"configurable": {"thread_id": "g"}, "recursion_limit": 200}
    reference = _graph(30).compile(checkpointer=InMemorySaver())
    reference.invoke(copy.deepcopy(start), cfg, durability=durability)
    want = [(s.values, s.next) for s in reference.get_state_history(cfg)]
    with DeltaSaver(tmp_path / "c.sqlite") as saver:
        graph = _graph(30).compile(checkpointer=saver)
        graph.invoke(copy.deepcopy(start), cfg, durability=durability)
        got = [(s.values, s.next) for s in graph.get_state_history(cfg)]
    assert got == want
    assert len(got[0][0]["docs"]) == 5


def test_a_read_between_steps_keeps_writes_stored_as_changes(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite"
    with DeltaSaver(db) as saver:
        run = DictRun(saver)
        run.docs.update({f"k{i}": TEXT for i in range(20)})
        head = run.step()
        assert saver.get_tuple(config("t")) is not None  # a reader, mid-run (get_state)
        run.docs["k1"] = "changed"
        saver.put_writes(config("t", head), [("docs", run.docs)], "task-1")
        with sqlite3.connect(db) as conn:
            (size,) = conn.execute("SELECT length(writes) FROM delta_writes").fetchone()
        assert size < len(TEXT)
        got = saver.get_tuple(config("t", head))
        assert got is not None and got.pending_writes == [("task-1", "docs", run.docs)]


def test_a_message_in_the_dict_edited_in_place_is_stored(tmp_path: Path) -> None:
    from langchain_core.messages import AIMessage

    with DeltaSaver(tmp_path / "c.sqlite") as saver:
        run = DictRun(saver)
        run.docs.update({f"m{i}": AIMessage(content=TEXT, id=f"m{i}") for i in range(4)})
        run.step()
        run.docs["m2"].content = "edited in place"  # the same object, one field changed
        run.step()
        run.step()  # and nothing else changes after
        run.check()
        got = saver.get_tuple(config("t"))
        assert got is not None
        assert got.checkpoint["channel_values"]["docs"]["m2"].content == "edited in place"


def test_without_the_edit_check_a_key_changed_when_its_value_is_another_object(
    tmp_path: Path,
) -> None:
    db = tmp_path / "c.sqlite"
    with DeltaSaver(db, check_edits=False) as saver:  # as the engine opens it
        run = DictRun(saver)
        run.docs.update({f"k{i}": {"text": TEXT} for i in range(10)})
        run.step()
        before = _stored_bytes(db)
        run.docs = {**run.docs, "k1": {"text": "new"}}  # a new dict, one new value
        run.step()
        assert _stored_bytes(db) - before < len(TEXT)
        run.check()


@pytest.mark.parametrize(
    "records",
    [[[1, 2, 3]], [["k", 1, 2]], ["not a record"], [[]]],
    ids=["key not str", "three parts", "not a list", "empty"],
)
def test_a_damaged_log_is_a_corrupt_run(tmp_path: Path, records: list[Any]) -> None:
    db = tmp_path / "c.sqlite"
    with DeltaSaver(db) as saver:
        run = DictRun(saver)
        run.docs.update({f"k{i}": TEXT for i in range(3)})
        run.step()
        lineage = run.ref()[0]
        blob = saver.serde.dumps_typed(records * 3)[1]  # as many records as were stored
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE delta_segments SET items = ? WHERE lineage = ?", (blob, lineage))
    with DeltaSaver(db) as saver, pytest.raises(CorruptRunError, match="change record"):
        saver.get_tuple(config("t"))


@pytest.mark.parametrize("changes", [[1, 2], ["1", 2, []], [1, 2, "x"]])
def test_a_damaged_dict_write_is_a_corrupt_run(tmp_path: Path, changes: list[Any]) -> None:
    db = tmp_path / "c.sqlite"
    with DeltaSaver(db) as saver:
        run = DictRun(saver)
        run.docs.update({f"k{i}": TEXT for i in range(3)})
        head = run.step()
        saver.put_writes(config("t", head), [("docs", run.docs)], "task-1")
        entry = [0, "docs", "ai-agent:dict-changes", saver.serde.dumps_typed(changes)[1]]
        blob = saver.serde.dumps_typed([entry])[1]
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE delta_writes SET writes = ?", (blob,))
    with DeltaSaver(db) as saver, pytest.raises(CorruptRunError, match="dict write"):
        saver.get_tuple(config("t"))


def test_a_write_with_a_key_that_is_not_a_str_is_stored_whole(tmp_path: Path) -> None:
    with DeltaSaver(tmp_path / "c.sqlite") as saver:
        run = DictRun(saver)
        run.docs.update({f"k{i}": TEXT for i in range(3)})
        head = run.step()
        written = {**run.docs, 5: "five"}
        saver.put_writes(config("t", head), [("docs", written)], "task-1")
        got = saver.get_tuple(config("t", head))
        assert got is not None and got.pending_writes == [("task-1", "docs", written)]


def test_a_dict_edited_in_place_under_async_durability_is_stored_without_failing(
    tmp_path: Path,
) -> None:
    """With "async" the saver reads the dict while the next node edits it: it works on a copy.

    Before, iterating the live dict could fail with "dictionary changed size during iteration"
    (seen in the plain-graph bench); a race, so this run makes it likely rather than certain.
    """
    cfg: Any = {"configurable": {"thread_id": "g"}, "recursion_limit": 2000}
    start = {
        "docs": {f"old{i}": {"text": "x", "seen": 0} for i in range(300)},
        "log": [],
        "cycle": 0,
    }
    with DeltaSaver(tmp_path / "c.sqlite") as saver:
        graph = _graph(150).compile(checkpointer=saver)
        graph.invoke(start, cfg, durability="async")
        final = graph.get_state(cfg).values
    assert final["cycle"] == 150
    assert len(final["docs"]) == 305
