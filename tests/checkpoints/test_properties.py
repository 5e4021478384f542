"""State round-trip properties: whatever sequence of appends and rewrites, reads give it back.

Random sequences of list operations (append, replace, remove, rebuild as equal copies, retype
to equal values of another type, no change), scalar writes, forks from older checkpoints and
reopening the database (a cold cache) are put through each saver; then every checkpoint is read
back and compared with what was put, types included (``1`` and ``1.0`` are different answers).
A second property runs random scripts through a real graph with the engine's
``append_or_replace`` reducer and compares the whole history with LangGraph's in-memory saver.
"""

from __future__ import annotations

import copy
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from ai_agent.checkpoints import DeltaSaver, strict_serializer
from ai_agent.state import append_or_replace
from tests.checkpoints.conftest import SAVERS, config, make_checkpoint

Saver = BaseCheckpointSaver[Any]

leaf = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=12)
)
json_value = st.recursive(
    leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
operation = st.one_of(
    st.tuples(st.just("append"), st.lists(json_value, min_size=1, max_size=4)),
    st.tuples(st.just("replace"), st.lists(json_value, max_size=12)),
    st.tuples(st.just("remove"), st.integers(0, 40)),
    st.tuples(st.just("copies"), st.none()),
    st.tuples(st.just("retype"), st.none()),
    st.tuples(st.just("same"), st.none()),
    st.tuples(st.just("scalar"), json_value),
    st.tuples(st.just("fork"), st.integers(0, 40)),
    st.tuples(st.just("reopen"), st.none()),
)


def same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (and dicts in the same key order)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and a == 0.0:
        return str(a) == str(b)  # 0.0 and -0.0
    return bool(a == b)


@contextmanager
def open_saver(kind: str, path: Path) -> Iterator[Saver]:
    if kind == "delta":
        with DeltaSaver(path, cache_threads=4) as delta:
            yield delta
        return
    conn = sqlite3.connect(path, check_same_thread=False)
    lg = SqliteSaver(conn, serde=strict_serializer())
    lg.setup()
    try:
        yield lg
    finally:
        conn.close()


def _retyped(items: list[Any]) -> list[Any]:
    """Equal under ``==``, different types: the saver must not mistake it for the same list."""
    out: list[Any] = []
    for x in items:
        if type(x) is int and abs(x) < 2**53:
            out.append(float(x))
        elif type(x) is bool:
            out.append(int(x))
        else:
            out.append(x)
    return out


def _apply(op: str, arg: Any, log: list[Any]) -> list[Any]:
    if op == "append":
        return [*log, *arg]
    if op == "replace":
        return list(arg)
    if op == "remove":
        return [x for i, x in enumerate(log) if i != arg % max(len(log), 1)]
    if op == "copies":
        return copy.deepcopy(log)
    if op == "retype":
        return _retyped(log)
    return log  # "same"


@pytest.mark.parametrize("kind", SAVERS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(operation, min_size=1, max_size=40))
def test_every_checkpoint_reads_back_exactly(kind: str, ops: list[tuple[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "c.sqlite"
        expected: dict[str, dict[str, Any]] = {}
        order: list[str] = []
        head: str | None = None
        log: list[Any] = []
        scalar: Any = None
        version: Any = None
        with open_saver(kind, path) as first:
            saver = first
            for step, (op, arg) in enumerate(ops):
                if op == "reopen":
                    continue
                if op == "fork":
                    if order:
                        head = order[arg % len(order)]
                        log = list(expected[head]["log"])
                        scalar = expected[head]["scalar"]
                    continue
                if op == "scalar":
                    scalar = arg
                else:
                    log = _apply(op, arg, log)
                version = saver.get_next_version(version, None)
                values = {"log": log, "scalar": scalar, "fixed": "task"}
                versions = {"log": version, "scalar": version, "fixed": 1}
                cp = make_checkpoint(values, versions, step=step)
                saver.put(
                    config("t", head), cp, {"step": step}, {"log": version, "scalar": version}
                )
                expected[cp["id"]] = copy.deepcopy(values)
                order.append(cp["id"])
                head = cp["id"]
        with open_saver(kind, path) as reopened:
            for cid, values in expected.items():
                got = reopened.get_tuple(config("t", cid))
                assert got is not None
                assert same(got.checkpoint["channel_values"], values), (cid, values)
            listed = {
                t.checkpoint["id"]: t.checkpoint["channel_values"] for t in reopened.list(None)
            }
            assert set(listed) == set(expected)
            assert all(same(listed[cid], expected[cid]) for cid in expected)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(operation, min_size=1, max_size=30), reopen_at=st.integers(0, 30))
def test_delta_continues_a_thread_after_reopening(
    ops: list[tuple[str, Any]], reopen_at: int
) -> None:
    """Half the run in one saver, the rest in a fresh one on the same file (the cold paths)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "c.sqlite"
        expected: dict[str, Any] = {}
        head: str | None = None
        log: list[Any] = []
        version: Any = None
        saver = DeltaSaver(path)
        try:
            for step, (op, arg) in enumerate(ops):
                if step == reopen_at or op == "reopen":
                    saver.close()
                    saver = DeltaSaver(path)
                if op in ("fork", "scalar", "reopen"):
                    continue
                log = _apply(op, arg, log)
                version = saver.get_next_version(version, None)
                cp = make_checkpoint({"log": log}, {"log": version}, step=step)
                saver.put(config("t", head), cp, {"step": step}, {"log": version})
                expected[cp["id"]] = copy.deepcopy(log)
                head = cp["id"]
            for cid, values in expected.items():
                got = saver.get_tuple(config("t", cid))
                assert got is not None
                assert same(got.checkpoint["channel_values"]["log"], values)
        finally:
            saver.close()


class Script(TypedDict):
    log: Annotated[list[Any], append_or_replace]
    script: list[Any]
    i: int


def _graph(saver: Saver) -> Any:
    def step(state: Script) -> dict[str, Any]:
        op, arg = state["script"][state["i"]]
        update: dict[str, Any] = {"i": state["i"] + 1}
        if op == "append":
            update["log"] = list(arg)
        elif op == "replace":
            update["log"] = {"replace": list(arg)}
        elif op == "copies":
            update["log"] = {"replace": copy.deepcopy(state["log"])}
        elif op == "retype":
            update["log"] = {"replace": _retyped(state["log"])}
        return update

    def more(state: Script) -> str:
        return "step" if state["i"] < len(state["script"]) else END

    builder: StateGraph[Script] = StateGraph(Script)
    builder.add_node("step", step)
    builder.add_edge(START, "step")
    builder.add_conditional_edges("step", more, ["step", END])
    return builder.compile(checkpointer=saver)


graph_operation = st.one_of(
    st.tuples(st.just("append"), st.lists(json_value, min_size=1, max_size=4)),
    st.tuples(st.just("replace"), st.lists(json_value, max_size=10)),
    st.tuples(st.sampled_from(["copies", "retype", "same"]), st.none()),
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=st.lists(graph_operation, min_size=1, max_size=25))
def test_a_graph_history_matches_langgraphs_own_saver(script: list[tuple[str, Any]]) -> None:
    start = {"log": [], "script": [list(s) for s in script], "i": 0}
    reference = _graph(InMemorySaver(serde=strict_serializer()))
    cfg = config("t")
    reference.invoke(copy.deepcopy(start), {**cfg, "recursion_limit": 100})
    want = [s.values for s in reference.get_state_history(cfg)]
    with tempfile.TemporaryDirectory() as tmp, DeltaSaver(Path(tmp) / "c.sqlite") as delta:
        graph = _graph(delta)
        graph.invoke(copy.deepcopy(start), {**cfg, "recursion_limit": 100})
        got = [s.values for s in graph.get_state_history(cfg)]
    assert len(got) == len(want)
    assert all(same(a, b) for a, b in zip(got, want, strict=True))
