"""Rows crafted with plain SQL: what the saver, the light reader and the CLI make of them.

The database is hostile input here: each case rewrites rows of one thread ("x") of a plain
graph (a list channel stored as a lineage, a dict value) next to an intact thread ("y"), then
reads them as a resume does (`DeltaSaver.get_tuple`, `list`, `aget_tuple`) and as the command
line does (`DeltaReader`). Every case ends in a `CorruptRunError` naming the thread (or, for the
light reader, a refusal that hands the run to the saver), never another value, a traceback,
an import, or code run.
"""

from __future__ import annotations

import json
import operator
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import ormsgpack
import pytest
from langgraph.graph import StateGraph
from typing_extensions import TypedDict

from ai_agent.checkpoints import DeltaSaver
from ai_agent.checkpoints.reader import DeltaReader, NotPlain
from ai_agent.errors import CorruptRunError
from tests.conftest import good_and_bad_runs


class State(TypedDict):
    items: Annotated[list[str], operator.add]
    v: dict[str, str]


def _step(state: State) -> dict[str, Any]:
    n = len(state["items"])
    return {"items": [f"i{n}"] * 3, "v": {"k": "z" * (30 * n)}}  # a value row of its own


def config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}


@pytest.fixture
def db(tmp_path: Path) -> Path:
    builder = StateGraph(State)
    builder.add_node("a", _step)
    builder.set_entry_point("a")
    builder.set_finish_point("a")
    path = tmp_path / "c.sqlite"
    with DeltaSaver(path) as saver:
        graph = builder.compile(checkpointer=saver)
        for thread in ("x", "y"):
            for _ in range(6):
                graph.invoke({"items": ["a"] * 3, "v": {}}, config(thread))
    return path


@pytest.fixture
def canary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A module on sys.path whose import leaves a file: proof that a read imported it."""
    folder = tmp_path / "mods"
    folder.mkdir()
    (folder / "canarymod.py").write_text(
        f"open({str(tmp_path / 'IMPORTED')!r}, 'w').write('x')\ndef f(*a, **k):\n    return 1\n"
    )
    monkeypatch.syspath_prepend(str(folder))
    return tmp_path / "IMPORTED"


def damage(db: Path, sql: str, *params: Any) -> None:
    with sqlite3.connect(db) as conn:
        assert conn.execute(sql, params).rowcount >= 1
    conn.close()


def set_values(db: Path, type_: str, blob: bytes) -> None:
    """Every inline value row of thread x (the dict channel's) replaced."""
    damage(
        db,
        "UPDATE delta_values SET type = ?, value = ? WHERE lineage IS NULL AND value IS NOT NULL "
        "AND thread = (SELECT id FROM delta_threads WHERE thread_id = 'x')",
        type_,
        blob,
    )


def ext(code: int, parts: list[Any]) -> ormsgpack.Ext:
    return ormsgpack.Ext(code, ormsgpack.packb(parts))


def saver_reads(db: Path) -> list[Callable[[DeltaSaver], Any]]:
    return [
        lambda saver: saver.get_tuple(config("x")),
        lambda saver: list(saver.list(config("x"))),
        lambda saver: list(saver.list(None)),
    ]


def assert_refused_by_every_read(db: Path, match: str) -> None:
    for read in saver_reads(db):
        with DeltaSaver(db) as saver:
            with pytest.raises(CorruptRunError, match=match) as caught:
                read(saver)
            assert caught.value.thread_id == "x"
            assert saver.get_tuple(config("y")) is not None  # the other run still reads
    with DeltaReader(db) as reader:
        # The light reader either refuses the value (the caller then reads through the saver,
        # above) or reports the same corruption; it never loads it.
        with pytest.raises((NotPlain, CorruptRunError)):
            reader.get_tuple(config("x"))
        with pytest.raises((NotPlain, CorruptRunError)):
            list(reader.list(config("x")))
        assert reader.get_tuple(config("y")) is not None


TYPES_OUTSIDE_THE_ALLOWLIST = {
    "os.system": ext(0, ["os", "system", "touch PWNED"]),
    "subprocess.Popen": ext(1, ["subprocess", "Popen", [["touch", "PWNED"]]]),
    "builtins.eval.__call__": ext(3, ["builtins", "eval", "1+1", "__call__"]),
    "canarymod.f (keywords)": ext(2, ["canarymod", "f", {"a": 1}]),
    "canarymod.f (pydantic)": ext(5, ["canarymod", "f", {"a": 1}, "model_validate_json"]),
    "canarymod.f (pydantic v1)": ext(4, ["canarymod", "f", {"a": 1}]),
    "an unknown extension": ormsgpack.Ext(42, b"zz"),
    "a numpy array of objects": ext(6, ["|O", [1], "C", b"12345678"]),
    "canarymod.f inside an allowed type": ext(
        0, ["datetime", "timedelta", ext(0, ["canarymod", "f", 1])]
    ),
}


@pytest.mark.parametrize(
    "value", TYPES_OUTSIDE_THE_ALLOWLIST.values(), ids=TYPES_OUTSIDE_THE_ALLOWLIST
)
def test_a_value_naming_a_type_outside_the_allowlist_is_refused_not_read_as_its_data(
    db: Path, canary: Path, value: ormsgpack.Ext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(db.parent)
    set_values(db, "msgpack", ormsgpack.packb({"k": value}))
    before = set(sys.modules)
    # Before: LangGraph's strict mode read ``{"k": "touch PWNED"}`` (the arguments), or None.
    assert_refused_by_every_read(
        db, r"\(StoreError: a stored value names .+, which this serializer does not load"
    )
    assert not canary.exists() and not (db.parent / "PWNED").exists()
    assert {"canarymod", "subprocess"} & (set(sys.modules) - before) == set()


async def test_the_async_read_a_resume_makes_refuses_it_too(db: Path) -> None:
    set_values(db, "msgpack", ormsgpack.packb({"k": ext(0, ["os", "system", "true"])}))
    async with DeltaSaver(db) as saver:
        with pytest.raises(CorruptRunError, match=r"thread x .*names os\.system"):
            await saver.aget_tuple(config("x"))


@pytest.mark.parametrize(
    "stored",
    [
        {"lc": 1, "type": "constructor", "id": ["langchain_core", "messages", "AIMessage"],
         "kwargs": {"content": "forged"}},
        {"lc": 2, "type": "constructor", "id": ["canarymod", "f"], "kwargs": {}},
        {"k": 1},
    ],
    ids=["a LangChain constructor", "a module of the attacker's", "plain JSON"],
)  # fmt: skip
def test_a_value_stored_as_json_is_refused(db: Path, canary: Path, stored: Any) -> None:
    # Before: LangChain's reviver built an AIMessage the run never had; the others loaded.
    set_values(db, "json", json.dumps({"k": stored}).encode())
    assert_refused_by_every_read(db, r"a stored value is JSON, which ai-agent never writes")
    assert not canary.exists()


def test_a_task_write_naming_another_type_is_refused(db: Path, canary: Path) -> None:
    damage(
        db,
        "UPDATE delta_writes SET writes = ? "
        "WHERE thread = (SELECT id FROM delta_threads WHERE thread_id = 'x')",
        ormsgpack.packb([[0, "items", "msgpack", ormsgpack.packb(ext(2, ["canarymod", "f", {}]))]]),
    )
    with DeltaSaver(db) as saver, pytest.raises(CorruptRunError, match=r"names canarymod\.f"):
        list(saver.list(config("x")))
    assert not canary.exists()


@pytest.mark.parametrize("column", ["metadata", "parent_id", "checkpoint_id"])
def test_a_checkpoint_row_that_is_not_utf8_names_its_thread(db: Path, column: str) -> None:
    # Before: sqlite3.OperationalError "Could not decode to UTF-8", raised outside the check.
    damage(
        db,
        f"UPDATE delta_checkpoints SET {column} = CAST(x'ff80' || {column} AS TEXT) "
        "WHERE thread = (SELECT id FROM delta_threads WHERE thread_id = 'x')",
    )
    match = rf"a checkpoint of thread x cannot be read back: .*UTF-8 column '{column}'"
    with DeltaSaver(db) as saver:
        with pytest.raises(CorruptRunError, match=match):
            saver.get_tuple(config("x"))
        with pytest.raises(CorruptRunError, match=match):
            list(saver.list(config("x")))
        assert saver.get_tuple(config("y")) is not None
    with DeltaReader(db) as reader, pytest.raises(CorruptRunError, match=match):
        reader.get_tuple(config("x"))


@pytest.mark.parametrize("metadata", ["[1, 2]", "null", '"step"', "7"])
def test_metadata_that_is_not_an_object_is_a_corrupt_checkpoint(db: Path, metadata: str) -> None:
    # Before: handed to LangGraph as the checkpoint's metadata, which it reads as a dict.
    damage(
        db,
        "UPDATE delta_checkpoints SET metadata = ? "
        "WHERE thread = (SELECT id FROM delta_threads WHERE thread_id = 'x')",
        metadata,
    )
    assert_refused_by_every_read(db, r"thread x cannot be read back \(StoreError: its metadata is")


def _nested_interrupts(depth: int) -> bytes:
    blob = b"\xc0"
    head = ormsgpack.packb("langgraph.types") + ormsgpack.packb("Interrupt")
    for _ in range(depth):
        body = b"\x93" + head + b"\x82" + ormsgpack.packb("value") + blob
        blob = ormsgpack.packb(ormsgpack.Ext(2, body + ormsgpack.packb("id") + b"\xa1i"))
    return blob


SIZES_THAT_LIE = {
    "a map claiming 2^32 entries": b"\xdf\xff\xff\xff\xff",
    "an array claiming 2^32 items": b"\xdd\xff\xff\xff\xff",
    "a string longer than its blob": b"\xdb\xff\xff\xff\xf0abc",
    "arrays nested 100,000 deep": b"\x91" * 100_000 + b"\xc0",
    "extensions nested 5,000 deep": _nested_interrupts(5_000),
}


@pytest.mark.parametrize("blob", SIZES_THAT_LIE.values(), ids=SIZES_THAT_LIE)
def test_sizes_that_lie_are_a_corrupt_checkpoint_at_once(db: Path, blob: bytes) -> None:
    set_values(db, "msgpack", blob)
    with DeltaSaver(db) as saver, pytest.raises(CorruptRunError, match="thread x"):
        saver.get_tuple(config("x"))
    with DeltaReader(db) as reader, pytest.raises(CorruptRunError, match="thread x"):
        reader.get_tuple(config("x"))


def _edit_refs(db: Path, edit: Callable[[list[Any]], Any]) -> None:
    """The list channel's reference, in every skeleton row of thread x."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT c.checkpoint_id, c.skeleton FROM delta_checkpoints AS c JOIN delta_threads "
            "AS t ON t.id = c.thread WHERE t.thread_id = 'x'"
        ).fetchall()
        for cid, blob in rows:
            data = ormsgpack.unpackb(blob, option=ormsgpack.OPT_NON_STR_KEYS)
            if type(data.get("r", {}).get("items")) is list:
                data["r"]["items"] = edit(data["r"]["items"])
                conn.execute(
                    "UPDATE delta_checkpoints SET skeleton = ? WHERE checkpoint_id = ?",
                    (ormsgpack.packb(data), cid),
                )
    conn.close()


REFERENCES_THAT_LIE = {
    "a length of 2^63 - 1": lambda r: [r[0], 2**63 - 1],
    "a negative length": lambda r: [r[0], -1],
    "a length that is a float": lambda r: [r[0], 1e300],
    "another thread's lineage": lambda r: [r[0] + 1, r[1]],
    "a value row past 64 bits' worth of ids": lambda r: 2**63 - 1,
    "a type no serializer writes": lambda r: ["pickle", b"\x80"],
}


@pytest.mark.parametrize("edit", REFERENCES_THAT_LIE.values(), ids=REFERENCES_THAT_LIE)
def test_a_reference_that_lies_is_a_corrupt_checkpoint(
    db: Path, edit: Callable[[list[Any]], Any]
) -> None:
    _edit_refs(db, edit)
    assert_refused_by_every_read(db, "thread x cannot be read back")


def test_a_checkpoint_whose_parent_is_itself_is_a_corrupt_checkpoint(db: Path) -> None:
    damage(
        db,
        "UPDATE delta_checkpoints SET parent_id = checkpoint_id, full = 0 "
        "WHERE thread = (SELECT id FROM delta_threads WHERE thread_id = 'x')",
    )
    assert_refused_by_every_read(db, r"more than \d+ diffs in a row")


def test_a_lineage_with_a_segment_gone_is_a_corrupt_checkpoint(db: Path) -> None:
    damage(
        db,
        "DELETE FROM delta_segments WHERE (lineage, start) IN (SELECT lineage, min(start) "
        "FROM delta_segments WHERE lineage IN (SELECT l.id FROM delta_lineages AS l JOIN "
        "delta_threads AS t ON t.id = l.thread WHERE t.thread_id = 'x') GROUP BY lineage)",
    )
    assert_refused_by_every_read(db, r"list lineage \d+ holds \d+ items where \d+ were stored")


def test_show_history_and_resume_refuse_a_checkpoint_naming_os_system(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from ai_agent.cli import EXIT, main

    monkeypatch.chdir(tmp_path)
    path = tmp_path / "c.sqlite"
    good_and_bad_runs(str(path), tmp_path)
    skeleton = {"x": ext(0, ["os", "system", "touch PWNED"]), "cv": {}, "vs": {}, "r": {}}
    damage(
        path,
        "UPDATE delta_checkpoints SET skeleton = ?, full = 1 WHERE checkpoint_id = (SELECT "
        "max(checkpoint_id) FROM delta_checkpoints AS c JOIN delta_threads AS t ON t.id = "
        "c.thread WHERE t.thread_id = 'bad')",
        ormsgpack.packb(skeleton),
    )
    capsys.readouterr()
    for command in ("show", "history", "resume"):
        code = main([command, "bad", "--db", str(path)])
        _, err = capsys.readouterr()
        assert code == EXIT["failed"], err
        assert "Traceback" not in err and "internal error" not in err, err
        assert "of thread bad cannot be read back" in err and "names os.system" in err, err
    assert not (tmp_path / "PWNED").exists()
    assert main(["show", "good", "--db", str(path)]) == 0
    assert capsys.readouterr().out.strip().endswith("42")
