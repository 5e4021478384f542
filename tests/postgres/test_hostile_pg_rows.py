"""LangGraph's PostgreSQL checkpoint rows edited with plain SQL: what show, history and resume
make of them.

The database is hostile input here: someone with write access rewrites the rows of one run
("bad") next to an intact one ("good"): a blob naming a type outside the allowlist, a type
column no serializer writes, a NULL where a value belongs, JSON nested deeper than Python's
parser goes, a checkpoint or metadata of another shape. Every case ends in a CorruptRunError
naming the thread (the CLI: one ``error:`` line, exit 1), never a traceback, "internal error",
another value, an import or code run; the other run still reads.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import ormsgpack
import psycopg
import pytest

from ai_agent import UserPlan
from ai_agent.cli import EXIT, main
from ai_agent.errors import CorruptRunError
from tests.conftest import good_and_bad_runs
from tests.postgres.conftest import MakePgAgent
from tests.postgres.test_pg_agent import gated


def ext(code: int, parts: list[Any]) -> ormsgpack.Ext:
    return ormsgpack.Ext(code, ormsgpack.packb(parts))


OS_SYSTEM = ormsgpack.packb({"k": ext(0, ["os", "system", "touch PWNED"])})
FORGED = b'{"lc": 1, "type": "constructor", "id": ["langchain_core", "messages", "AIMessage"]}'
DEEP = "[" * 5000 + "]" * 5000  # the server takes it; Python's JSON parser does not

BLOBS = "UPDATE checkpoint_blobs SET {} WHERE thread_id = 'bad'"
WRITES = "UPDATE checkpoint_writes SET {} WHERE thread_id = 'bad'"
ROWS = "UPDATE checkpoints SET {} WHERE thread_id = 'bad'"


def _set(path: str, value: str) -> str:
    return ROWS.format(f"checkpoint = jsonb_set(checkpoint, '{{{path}}}', '{value}')")


# Every blob of the run (messages, trace, usage...) of another type or shape; the inline
# values (task, status, iteration) replaced by ones of the wrong type.
SHAPES: dict[str, tuple[str, tuple[Any, ...]]] = {
    "a blob typed bytes": (BLOBS.format("type = 'bytes'"), ()),
    "a blob that is the number 5": (BLOBS.format("blob = %s"), (ormsgpack.packb(5),)),
    "a blob that is text": (BLOBS.format("blob = %s"), (ormsgpack.packb("x"),)),
    "a blob that is an object": (BLOBS.format("blob = %s"), (ormsgpack.packb({"a": 1}),)),
    "a blob of messages that are text": (BLOBS.format("blob = %s"), (ormsgpack.packb(["m"]),)),
    "a task that is a number": (_set("channel_values,task", "123"), ()),
    "a status that is a number": (_set("channel_values,status", "123"), ()),
    "an iteration that is text": (_set("channel_values,iteration", '"x"'), ()),
}

# What the CLI said before, for each: StoreError "a stored value names ..." without the run,
# or "internal error: <TypeError, KeyError, RecursionError...>", or (an inline object) a status
# the run never had.
ATTACKS: dict[str, tuple[str, tuple[Any, ...]]] = {
    "a blob naming os.system": (BLOBS.format("blob = %s"), (OS_SYSTEM,)),
    "a blob of an unknown extension": (
        BLOBS.format("blob = %s"),
        (ormsgpack.packb(ormsgpack.Ext(42, b"zz")),),
    ),
    "a blob stored as JSON": (BLOBS.format("type = 'json', blob = %s"), (FORGED,)),
    "a blob typed pickle": (BLOBS.format("type = 'pickle'"), ()),
    "a blob that is NULL": (BLOBS.format("blob = NULL"), ()),
    "a blob nested 100,000 deep": (BLOBS.format("blob = %s"), (b"\x91" * 100_000 + b"\xc0",)),
    "a write naming os.system": (WRITES.format("blob = %s"), (OS_SYSTEM,)),
    "a write whose type is NULL": (WRITES.format("type = NULL"), ()),
    "a checkpoint that is a list": (ROWS.format("checkpoint = '[1, 2]'"), ()),
    "a checkpoint without its version": (ROWS.format("checkpoint = checkpoint - 'v'"), ()),
    "a checkpoint version that is text": (_set("v", '"x"'), ()),
    "a checkpoint id that is null": (_set("id", "null"), ()),
    "channel values that are a list": (_set("channel_values", "[1]"), ()),
    "channel versions that are a list": (_set("channel_versions", "[1]"), ()),
    "versions seen that are a list": (_set("versions_seen", "[1]"), ()),
    "an inline value that is an object": (_set("channel_values,status", '{"a": 1}'), ()),
    "a checkpoint nested 5,000 deep": (
        ROWS.format("checkpoint = jsonb_set(checkpoint, '{x}', %s::jsonb)"),
        (DEEP,),
    ),
    "metadata that is a list": (ROWS.format("metadata = '[1, 2]'"), ()),
    "metadata that is null": (ROWS.format("metadata = 'null'"), ()),
    "metadata that is text": (ROWS.format("""metadata = '"step"'"""), ()),
    "a step that is text": (ROWS.format("""metadata = jsonb_set(metadata, '{step}', '"x"')"""), ()),
    "metadata nested 5,000 deep": (
        ROWS.format("metadata = jsonb_set(metadata, '{x}', %s::jsonb)"),
        (DEEP,),
    ),
    # Values that decode fine but are not of RunState's shape. Before: "internal error:
    # TypeError: 'int' object is not iterable" (AttributeError, ValueError...), or a show of a
    # status the run never had.
    **SHAPES,
}


def damage(url: str, sql: str, params: tuple[Any, ...]) -> None:
    with psycopg.connect(url) as conn:
        assert conn.execute(sql, params).rowcount >= 1


@pytest.fixture
def mods(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working directory, with a module whose import would leave a file there."""
    (tmp_path / "canarymod.py").write_text("open('IMPORTED', 'w').write('x')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("attack", ATTACKS.values(), ids=ATTACKS)
def test_show_and_history_refuse_a_damaged_row_naming_the_run(
    attack: tuple[str, tuple[Any, ...]],
    pg_url: str,
    mods: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    good_and_bad_runs(pg_url, mods)
    damage(pg_url, *attack)
    capsys.readouterr()
    before = set(sys.modules)
    for command in ("show", "history"):
        code = main([command, "bad", "--db", pg_url])
        _, err = capsys.readouterr()
        assert code == EXIT["failed"], err
        assert "Traceback" not in err and "internal error" not in err, err
        assert "of thread bad cannot be read back" in err, err
        assert "damaged or changed outside ai-agent" in err and err.count("\n") == 1, err
    assert not (mods / "PWNED").exists() and not (mods / "IMPORTED").exists()
    assert "canarymod" not in set(sys.modules) - before
    assert main(["show", "good", "--db", pg_url]) == 0
    assert main(["runs", "--db", pg_url]) == 0


async def test_a_resume_refuses_a_checkpoint_naming_another_module(
    make_pg_agent: MakePgAgent, pg_url: str, mods: Path
) -> None:
    log: list[dict[str, Any]] = []
    async with gated(make_pg_agent, log) as agent:
        assert (await agent.run("note it", thread_id="bad")).status == "paused"
    damage(pg_url, BLOBS.format("blob = %s"), (ormsgpack.packb(ext(2, ["canarymod", "f", {}])),))
    async with gated(make_pg_agent, log) as agent:
        # Before: StoreError "a stored value names canarymod.f", with no run named.
        with pytest.raises(CorruptRunError, match=r"of thread bad cannot be read back") as caught:
            await agent.resume("bad", UserPlan(approve=["*"]))
        assert caught.value.thread_id == "bad"
        with pytest.raises(CorruptRunError, match=r"of thread bad .*names canarymod\.f"):
            await agent.ahistory("bad")
    assert log == [] and not (mods / "IMPORTED").exists()


@pytest.mark.parametrize(
    "attack", [SHAPES["a blob that is the number 5"], SHAPES["a status that is a number"]]
)
async def test_a_resume_refuses_values_of_the_wrong_shape_and_leaves_the_row(
    attack: tuple[str, tuple[Any, ...]], make_pg_agent: MakePgAgent, pg_url: str, mods: Path
) -> None:
    log: list[dict[str, Any]] = []
    async with gated(make_pg_agent, log) as agent:
        assert (await agent.run("note it", thread_id="bad")).status == "paused"
    damage(pg_url, *attack)
    async with gated(make_pg_agent, log) as agent:
        # Before: the run failed inside a stage (TypeError...), its row rewritten as failed.
        with pytest.raises(CorruptRunError, match=r"of thread bad .*\(StateShapeError: the chan"):
            await agent.resume("bad", UserPlan(approve=["*"]))
        record = await agent.store.get_run("bad")
    assert record is not None and record["status"] == "paused" and not record.get("error")
    assert log == []
