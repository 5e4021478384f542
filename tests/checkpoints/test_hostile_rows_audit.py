"""Rows edited by hand that the readers took for internal errors: each is now a named error.

Each case damages one run ("bad", or the paused "p1") of a real SQLite file next to an intact run
("good"), then runs ``ai-agent`` as a real process: it either works or says, in words, which
run and which row is wrong and what can be done. None prints a traceback or "internal error",
and the other runs still list and show.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ai_agent.checkpoints import DeltaSaver, RunStore
from ai_agent.cli import EXIT, main
from ai_agent.errors import CorruptRunError, StoreError
from tests.cli.scripts import calc, script

BAD = "(SELECT id FROM delta_threads WHERE thread_id = '{}')"
LATEST = (
    "(SELECT max(checkpoint_id) FROM delta_checkpoints WHERE thread = "
    "(SELECT id FROM delta_threads WHERE thread_id = '{}'))"
)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Finished runs "good" and "bad" (a calculator call each) and "p1", paused at the gate."""
    where = tmp_path_factory.mktemp("hostile")
    db = where / "c.sqlite"
    model = script(where, calc("6*7"), {"text": "42"})
    for thread in ("good", "bad"):
        argv = ["run", "multiply", "--db", str(db), "--model", model, "--thread-id", thread]
        assert main([*argv, "--tools", "calculator", "--quiet"]) == EXIT["completed"]
    argv = ["run", "add", "--db", str(db), "--model", model, "--thread-id", "p1", "--quiet"]
    assert main(argv) == EXIT["paused"]
    return db


@pytest.fixture
def db(made: Path, tmp_path: Path) -> Path:
    """A copy of the module's database, to damage."""
    copy = tmp_path / "c.sqlite"
    with sqlite3.connect(made) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    return copy


def damage(db: Path, *statements: str, relaxed: bool = False) -> None:
    """Run ``statements`` on the file; ``relaxed``: first drop every NOT NULL of its tables.

    A table another program made (or one changed with ``writable_schema``) holds what ai-agent's
    own constraints would refuse.
    """
    if relaxed:
        conn = sqlite3.connect(db, isolation_level=None)
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute(
            "UPDATE sqlite_master SET sql = replace(sql, 'NOT NULL', '') WHERE type = 'table'"
        )
        conn.close()
    with sqlite3.connect(db) as conn:
        for statement in statements:
            assert conn.execute(statement).rowcount >= 1, statement


def cli(db: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``ai-agent ARGV --db DB`` in its own process; never a traceback or "internal error"."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAMBA_")}
    done = subprocess.run(
        [sys.executable, "-m", "ai_agent.cli", *argv, "--db", str(db)],
        cwd=db.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    return done


def listed(db: Path) -> list[str]:
    """The thread ids ``ai-agent runs`` lists (exit 0)."""
    done = cli(db, "runs")
    assert done.returncode == 0, done.stderr
    return [line.split()[0] for line in done.stdout.splitlines() if line.split()]


@pytest.mark.parametrize(
    ("statement", "relaxed"),
    [
        # TEXT PRIMARY KEY takes NULL in SQLite: no constraint needs to go.
        (
            "INSERT INTO agent_runs (thread_id, task, status, created_at, updated_at) "
            "VALUES (NULL, 'sum', 'completed', 9e9, 9e9)",
            False,
        ),
        ("UPDATE agent_runs SET thread_id = CAST('bad' AS BLOB) WHERE thread_id = 'bad'", False),
        ("UPDATE agent_runs SET thread_id = x'ff62' WHERE thread_id = 'bad'", False),
        ("UPDATE agent_runs SET task = NULL WHERE thread_id = 'bad'", True),
        ("UPDATE agent_runs SET status = NULL WHERE thread_id = 'bad'", True),
    ],
    ids=["no thread id", "thread id as bytes", "thread id not utf8", "no task", "no status"],
)
def test_a_run_row_without_its_thread_id_task_or_status_lists_with_the_others(
    db: Path, statement: str, relaxed: bool
) -> None:
    """It was "internal error: TypeError" from ``runs``, and no run listed before it."""
    damage(db, "UPDATE agent_runs SET updated_at = 9e9 WHERE thread_id = 'bad'", statement,
           relaxed=relaxed)  # fmt: skip
    done = cli(db, "runs")
    assert done.returncode == 0
    assert {"good", "p1"} <= {line.split()[0] for line in done.stdout.splitlines()}
    assert len(done.stdout.splitlines()) == 3 + statement.startswith("INSERT")
    assert "cannot be read back" in done.stderr and "agent_runs." in done.stderr
    store = RunStore(db)
    try:
        runs = asyncio.run(store.list_runs())
    finally:
        store.close()
    assert all(type(r["thread_id"]) is str and type(r["task"]) is str for r in runs)
    assert cli(db, "show", "good").stdout.strip().endswith("42")


@pytest.mark.parametrize(
    ("statement", "says"),
    [
        ("UPDATE agent_meta SET value = '0' WHERE key = 'schema_version'", "agent_meta"),
        ("UPDATE agent_meta SET value = '00' WHERE key = 'schema_version'", "agent_meta"),
        ("UPDATE delta_meta SET value = '0' WHERE key = 'format'", "delta_meta"),
    ],
    ids=["schema version 0", "schema version 00", "format 0"],
)
def test_a_version_of_zero_is_refused_in_words_and_nothing_is_migrated(
    db: Path, statement: str, says: str
) -> None:
    """No migration starts at 0: it was "internal error: KeyError: 0" from every command."""
    damage(db, statement)
    if says == "delta_meta":  # the run store alone lists the runs
        assert set(listed(db)) == {"good", "bad", "p1"}
    for argv in ([["runs"]] if says == "agent_meta" else []) + [
        ["show", "good"],
        ["resume", "p1", "--deny"],
    ]:
        done = cli(db, *argv)
        assert done.returncode != 0
        assert "versions start at 1" in done.stderr and says in done.stderr, done.stderr
    with sqlite3.connect(db) as conn:
        versions = conn.execute(
            "SELECT value FROM agent_meta UNION ALL SELECT value FROM delta_meta"
        ).fetchall()
        status = conn.execute("SELECT status FROM agent_runs WHERE thread_id = 'p1'").fetchone()
    assert statement.split("'")[1] in {v for (v,) in versions}  # as it was: nothing migrated
    assert status == ("paused",)


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("step", '"x"', "'step' is \"x\", not a whole number"),
        ("step", "1e999", "'step' is Infinity"),
        ("step", "true", "'step' is true"),
        ("parents", "5", "'parents' is 5, not an object"),
        ("ai_agent_state_version", '"x"', "a whole number from 1"),
        ("ai_agent_state_version", "0", "a whole number from 1"),
        ("ai_agent_state_version", "-1", "a whole number from 1"),
    ],
)
def test_checkpoint_metadata_of_the_wrong_types_is_a_corrupt_checkpoint(
    db: Path, key: str, value: str, says: str
) -> None:
    """``int(step)``, ``step + 1``, ``{**parents}`` and a migration from version 0 failed on them.

    "internal error" from ``show``, ``history``, ``export`` and ``resume``; now the checkpoint is
    named with the fork from its parent, and the other runs read.
    """
    for thread in ("bad", "p1"):
        metadata = json.dumps({"source": "loop", "step": 3, "parents": {}, key: None})
        metadata = metadata.replace("null", value)  # 1e999 and NaN are not JSON's own
        damage(
            db,
            f"UPDATE delta_checkpoints SET metadata = '{metadata}' "
            f"WHERE thread = {BAD.format(thread)} AND checkpoint_id = {LATEST.format(thread)}",
        )
    html = db.parent / "bad.html"
    for argv in (["show", "bad"], ["history", "bad"], ["export", "bad", "--html", str(html)],
                 ["resume", "p1", "--deny"]):  # fmt: skip
        done = cli(db, *argv)
        assert done.returncode != 0, argv
        assert "cannot be read back" in done.stderr and says in done.stderr, done.stderr
        assert "ai-agent fork" in done.stderr
    assert not html.exists()
    assert cli(db, "show", "good").stdout.strip().endswith("42")
    assert {"good", "bad", "p1"} <= set(listed(db))
    with DeltaSaver(db) as saver, pytest.raises(CorruptRunError, match="its metadata's"):
        saver.get_tuple({"configurable": {"thread_id": "p1", "checkpoint_ns": ""}})


@pytest.mark.parametrize(
    ("new_id", "why", "shown"),
    [
        ("CAST(checkpoint_id AS BLOB)", "its id is stored as bytes, not text", False),
        ("'zzz'", "its id 'zzz' is not hexadecimal", True),
    ],
    ids=["bytes", "not hex"],
)
def test_a_checkpoint_id_of_another_kind_is_a_corrupt_checkpoint(
    db: Path, new_id: str, why: str, shown: bool
) -> None:
    """Bytes, or text LangGraph cannot read as hex, sort after every id: the row was the latest.

    The resume failed inside LangGraph ("internal error": a TypeError, "Odd-length string");
    now the checkpoint is named with the fork from its parent (by ``show`` too for bytes, which
    no read takes; a text id the light reads still show).
    """
    damage(
        db,
        f"UPDATE delta_checkpoints SET checkpoint_id = {new_id} "
        f"WHERE thread = {BAD.format('p1')} AND checkpoint_id = {LATEST.format('p1')}",
    )
    done = cli(db, "resume", "p1", "--deny")
    assert done.returncode != 0
    assert why in done.stderr and "`ai-agent fork p1 " in done.stderr
    assert (cli(db, "show", "p1").returncode == 0) is shown
    assert cli(db, "show", "good").stdout.strip().endswith("42")


@pytest.mark.parametrize(
    "usage",
    [
        '{"prompt_tokens": "x", "completion_tokens": "y", "total_tokens": "z"}',
        '{"prompt_tokens": NaN, "total_tokens": Infinity}',
    ],
    ids=["text", "not finite"],
)
def test_recorded_usage_no_server_could_count_leaves_the_timeline_showing(
    db: Path, usage: str
) -> None:
    """``int(usage["total_tokens"])`` failed: "internal error" from ``show`` and ``export``.

    Such usage is no usage, the rule for a live reply (`usage_is_counted`): a draft whose trace
    line has no tokens shows them as unknown, and the rest of the run shows.
    """
    damage(db, f"UPDATE agent_model_calls SET usage = '{usage}' WHERE thread_id = 'bad'")
    done = cli(db, "show", "bad", "--json")
    assert done.returncode == 0
    assert [r["stage"] for r in json.loads(done.stdout)["timeline"]].count("draft") == 2
    html = db.parent / "bad.html"
    assert cli(db, "export", "bad", "--html", str(html)).returncode == 0 and html.exists()


def test_recorded_usage_no_server_could_count_is_no_usage_in_the_usage_history(
    db: Path,
) -> None:
    """A recorded call without a usage record in the state (a fork's parent's) was read for its
    usage as stored: ``get_usage_history`` and ``get_cost_estimate`` failed on ``int("z")``."""
    from ai_agent.graph.usage_report import usage_points

    damage(db, "UPDATE agent_model_calls SET usage = '{\"total_tokens\": \"z\"}' "
               "WHERE thread_id = 'bad'")  # fmt: skip
    store = RunStore(db)
    try:
        calls = asyncio.run(store.model_calls("bad"))
    finally:
        store.close()
    points = usage_points(calls, [])
    assert [p["total_tokens"] for p in points] == [0, 0]


def test_a_lease_without_an_expiry_has_run_out(db: Path) -> None:
    """``NOT (NULL > now ...)`` is NULL: the lease was never taken over, and ``resume`` said
    "internal error: TypeError" while it tried to say for how long."""
    damage(
        db,
        "INSERT INTO agent_leases (thread_id, owner, host, pid, acquired_at, expires_at) "
        "VALUES ('p1', 'gone', 'elsewhere', 1, 0, NULL)",
        relaxed=True,
    )
    done = cli(db, "resume", "p1", "--deny")
    assert done.returncode == EXIT["cancelled"], done.stderr


def test_a_store_version_that_is_text_or_zero_names_the_table(tmp_path: Path) -> None:
    """`stored_number` itself: the version as stored, and what to do."""
    from ai_agent.checkpoints.schema import stored_number

    for value in ("0", "x", b"6"):
        with pytest.raises(StoreError, match="restore"):
            stored_number(value, what="the store names its version", fix="restore it")
    assert stored_number("6", what="", fix="") == 6
