"""A damaged or hand-written database: one run's bad row never takes the others down.

Each case damages one stored piece of one run ("bad") next to an intact run ("good"): a
checkpoint's bytes, or a JSON column that is not JSON, JSON of the wrong shape, or JSON nested
far too deep. Every command then either works or says, in one line, which run and which row is
broken and what can be done; none prints a traceback or "internal error", and the good run still
lists and shows.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ai_agent.checkpoints import RunStore
from ai_agent.checkpoints._reads import readable
from ai_agent.cli import EXIT, main
from ai_agent.errors import CorruptRunError
from ai_agent.state import ToolCall, ToolResult

BROKEN = {
    "not JSON": "{oops",
    "of the wrong shape": "[1, 2]",
    "nested far too deep": "[" * 100_000 + "]" * 100_000,
}


@pytest.fixture
def db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """Two finished runs, "good" and "bad", each with a tool call and two model calls."""
    script = tmp_path / "script.json"
    turns = [
        {"tool_calls": [{"name": "calculator", "args": {"expression": "6*7"}}]},
        {"text": "42"},
    ]
    script.write_text(json.dumps(turns))
    path = tmp_path / "c.sqlite"
    for thread in ("good", "bad"):
        code = main(
            ["run", "multiply", "--db", str(path), "--model", f"scripted:{script}",
             "--tools", "calculator", "--thread-id", thread, "--quiet"]
        )  # fmt: skip
        assert code == 0
    capsys.readouterr()
    return path


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "internal error" not in err and "Traceback" not in err, err
    return code, out, err


def damage(db: Path, sql: str, *params: Any) -> None:
    with sqlite3.connect(db) as conn:
        assert conn.execute(sql, params).rowcount >= 1


def the_rest_works(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "runs", "--db", str(db))
    assert code == 0 and {line.split()[0] for line in out.splitlines()} >= {"good", "bad"}
    code, out, _ = cli(capsys, "show", "good", "--db", str(db))
    assert code == 0 and out.strip().endswith("42")


def test_a_checkpoint_that_cannot_be_read_names_itself_and_the_way_on(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    damage(
        db,
        "UPDATE delta_checkpoints SET skeleton = x'c1ff00' WHERE checkpoint_id = ("
        "SELECT max(checkpoint_id) FROM delta_checkpoints AS c JOIN delta_threads AS t "
        "ON t.id = c.thread WHERE t.thread_id = 'bad')",
    )
    for command in ("show", "resume", "history"):
        code, _, err = cli(capsys, command, "bad", "--db", str(db))
        assert code == EXIT["failed"], err
        assert re.match(
            r"error: checkpoint \S+ of thread bad cannot be read back \(ValueError: .*\): the "
            r"database was damaged or changed outside ai-agent\. Other runs are not affected; "
            r"to go on from the checkpoint before it, `ai-agent fork bad \S+` copies the run up "
            r"to there into a new thread \(if that one is intact\)\.",
            err,
        ), err
    the_rest_works(db, capsys)
    earlier = re.search(r"`ai-agent fork bad (\S+)`", err)
    assert earlier is not None
    code, out, _ = cli(capsys, "fork", "bad", earlier[1], "--db", str(db))
    assert code == 0
    code, _, err = cli(capsys, "show", out.split()[0], "--db", str(db))
    assert code == 0, err


@pytest.mark.parametrize("broken", BROKEN.values(), ids=BROKEN.keys())
def test_an_unreadable_gate_in_the_run_row_is_reported_and_the_runs_go_on(
    db: Path, capsys: pytest.CaptureFixture[str], broken: str
) -> None:
    damage(db, "UPDATE agent_runs SET gate = ? WHERE thread_id = 'bad'", broken)
    the_rest_works(db, capsys)
    code, out, _ = cli(capsys, "runs", "--db", str(db), "--json")
    bad = next(r for r in json.loads(out) if r["thread_id"] == "bad")
    assert bad["gate"] is None
    assert bad["error"].startswith(
        "the gate stored with the run (agent_runs.gate) of thread bad cannot be read back: it "
    )
    code, out, _ = cli(capsys, "show", "bad", "--db", str(db))  # the checkpoints hold the truth
    assert code == 0 and out.strip().endswith("42")


# A number column edited by hand: SQLite keeps text (or bytes) it cannot read as a number.
NUMBERS = {
    "a date as text": ("updated_at", "'2026-01-01'", "the time the run last changed"),
    "text": ("created_at", "'abc'", "the time the run started"),
    "bytes": ("updated_at", "x'00ff'", "the time the run last changed"),
    "past any date": ("created_at", "1e300", "the time the run started"),
    "a cycle as text": ("parent_iteration", "'three'", "the parent's cycle that started this run"),
    "a negative cycle": ("parent_iteration", "-1", "the parent's cycle that started this run"),
}


@pytest.mark.parametrize(("column", "value", "what"), NUMBERS.values(), ids=NUMBERS.keys())
def test_a_number_in_the_run_row_that_is_not_one_reads_as_unknown_and_the_runs_go_on(
    db: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    column: str,
    value: str,
    what: str,
) -> None:
    damage(db, f"UPDATE agent_runs SET {column} = {value} WHERE thread_id = 'bad'")
    the_rest_works(db, capsys)
    code, out, _ = cli(capsys, "runs", "--db", str(db), "--json")
    bad = next(r for r in json.loads(out) if r["thread_id"] == "bad")
    assert code == 0 and bad[column] is None and bad["status"] == "completed"
    said = f"{what} (agent_runs.{column}) of thread bad cannot be read back: it holds "
    assert bad["error"].startswith(said) and "it is shown as unknown" in bad["error"]
    assert said in caplog.text  # logged as well, on the store's logger
    for command in (("show", "bad"), ("history", "bad"), ("export", "bad", "--html", "bad.html")):
        code, out, _ = cli(capsys, *command, "--db", str(db))
        assert code == 0, command
    code, out, _ = cli(capsys, "show", "bad", "--db", str(db))
    assert out.strip().endswith("42")
    # Nor is it one of the latest: keeping the latest run keeps "good" (and the unknown one).
    latest = db.with_name("latest.sqlite")
    with sqlite3.connect(db) as source, sqlite3.connect(latest) as copy:
        source.backup(copy)
    code, out, _ = cli(capsys, "prune", "--keep-last", "1", "--db", str(latest), "--json")
    assert code == 0
    assert json.loads(out)["pruned"] == ([] if column == "updated_at" else ["good"])
    # A run whose last change is unknown is not known to be old: pruning by age keeps it.
    code, out, _ = cli(capsys, "prune", "--older-than", "0", "--db", str(db), "--json")
    assert code == 0 and "good" in json.loads(out)["pruned"]
    assert ("bad" in json.loads(out)["pruned"]) == (column != "updated_at")


@pytest.mark.parametrize("broken", BROKEN.values(), ids=BROKEN.keys())
@pytest.mark.parametrize(
    ("table", "column", "what", "commands"),
    [
        ("agent_model_calls", "usage", "the usage", ("show", "replay")),  # show: tokens by step
        # A recorded tool call's arguments and result are its journal entry's.
        ("agent_journal", "result", "the result", ("replay",)),
        ("agent_journal", "args", "the arguments", ("replay",)),
    ],
)
def test_an_unreadable_recorded_call_names_the_run_and_the_call(
    db: Path,
    capsys: pytest.CaptureFixture[str],
    broken: str,
    table: str,
    column: str,
    what: str,
    commands: tuple[str, ...],
) -> None:
    damage(db, f"UPDATE {table} SET {column} = ? WHERE thread_id = 'bad'", broken)
    for command in commands:
        code, _, err = cli(capsys, command, "bad", "--db", str(db))
        assert code == EXIT["failed"], err
        assert re.match(
            rf"error: {what} of recorded call \d+ of thread bad cannot be read back: it .* "
            r"\(the database was damaged or changed outside ai-agent\); a replay of the run "
            r"cannot use it: replay it live \(`ai-agent replay bad --live`\)",
            err,
        ), err
    the_rest_works(db, capsys)


def test_an_unreadable_recorded_request_names_the_run_and_the_call(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    damage(db, "UPDATE agent_model_calls SET request = '{}' WHERE thread_id = 'bad'")
    code, _, err = cli(capsys, "replay", "bad", "--db", str(db))
    assert code == EXIT["failed"], err
    assert "the request of recorded call" in err and "of thread bad cannot be read back" in err
    the_rest_works(db, capsys)


JOURNAL = {**BROKEN, "empty": "", "without a status": '{"content": "done"}'}


@pytest.mark.parametrize("broken", JOURNAL.values(), ids=JOURNAL.keys())
async def test_an_unreadable_journal_outcome_counts_as_unknown(
    tmp_path: Path, broken: str, caplog: pytest.LogCaptureFixture
) -> None:
    store = RunStore(tmp_path / "c.sqlite")
    call = ToolCall(id="c1", name="effect", args={})
    await store.intent("bad", 1, call)
    await store.outcome("bad", 1, call, ToolResult(status="ok", content="done"))
    damage(tmp_path / "c.sqlite", "UPDATE agent_journal SET result = ?", broken)
    with caplog.at_level(logging.WARNING, logger="ai_agent"):
        entry = await store.lookup("bad", 1, "c1")
    # The gate asks a person (UNKNOWN_OUTCOME) instead of trusting or re-running the call.
    assert entry is not None and (entry["status"], entry["result"]) == ("intent", None)
    assert "the journal entry of call c1 (iteration 1) of thread bad cannot be read" in caplog.text
    store.close()


@pytest.mark.parametrize("broken", [*BROKEN.values(), ""], ids=[*BROKEN.keys(), "empty"])
def test_an_unreadable_queued_plan_is_failed_with_the_reason_and_the_queue_goes_on(
    db: Path, capsys: pytest.CaptureFixture[str], broken: str
) -> None:
    import asyncio

    store = RunStore(db)
    plan = {"approve": ["*"]}
    asyncio.run(store.submit_plan("bad", plan, gate_checkpoint_id=None))
    asyncio.run(store.submit_plan("good", plan, gate_checkpoint_id=None))
    damage(db, "UPDATE agent_plans SET plan = ? WHERE thread_id = 'bad'", broken)
    code, out, _ = cli(capsys, "plans", "--db", str(db), "--json")
    assert code == 0
    plans = {p["thread_id"]: p for p in json.loads(out)}
    assert plans["good"]["status"] == "queued"
    assert plans["bad"]["status"] == "failed"
    assert plans["bad"]["error"].startswith("plan 1 in the queue of thread bad cannot be read")
    assert "queue the plan again" in plans["bad"]["error"]
    again = asyncio.run(store.submit_plan("bad", plan, gate_checkpoint_id=None))  # freed
    assert again["status"] == "queued"
    store.close()


def test_a_database_that_is_busy_or_full_is_not_called_corrupt() -> None:
    """Only what cannot be decoded is damage; a lock or a full disk is raised as it is."""
    with pytest.raises(sqlite3.OperationalError, match="locked"), readable("t", "c1", None):
        raise sqlite3.OperationalError("database is locked")
    first = "it is the run's first: run its task again"
    with pytest.raises(CorruptRunError, match=first), readable("t", "c1", None):
        raise ValueError("invalid type")


def edit_newest_skeleton(db: Path, edit: Any) -> None:
    """Decode the newest checkpoint row of "bad", change it with ``edit``, store it again."""
    import ormsgpack

    with sqlite3.connect(db) as conn:
        cid, blob = conn.execute(
            "SELECT checkpoint_id, skeleton FROM delta_checkpoints WHERE thread = (SELECT id FROM "
            "delta_threads WHERE thread_id = 'bad') ORDER BY checkpoint_id DESC LIMIT 1"
        ).fetchone()
        skeleton = ormsgpack.unpackb(blob)
        edit(skeleton)
        conn.execute(
            "UPDATE delta_checkpoints SET skeleton = ? WHERE checkpoint_id = ?",
            (ormsgpack.packb(skeleton), cid),
        )


BAD = "(SELECT id FROM delta_threads WHERE thread_id = 'bad')"
GOOD = "(SELECT id FROM delta_threads WHERE thread_id = 'good')"


def _trace(skeleton: dict[str, Any], lineage: Any, length: Any) -> None:
    skeleton["r"]["trace"] = [lineage, length]


# Rows no run of ai-agent's could write: without a guard, a cycle is read forever (the command
# hangs), a lineage of another run is read as this run's (silently), the rest is "internal error".
POINTERS = {
    "a chain of diffs that is a cycle": (
        f"UPDATE delta_checkpoints SET full = 0, parent_id = (SELECT max(checkpoint_id) FROM "
        f"delta_checkpoints WHERE thread = {BAD}) WHERE thread = {BAD} AND parent_id IS NULL",
        "stored as more than 128 diffs in a row",
    ),
    "a list forked from itself": (
        f"UPDATE delta_lineages SET base = id, base_length = 99 WHERE thread = {BAD}",
        "is forked from itself",
    ),
    "a list forked from another run's": (
        f"UPDATE delta_lineages SET base = (SELECT min(id) FROM delta_lineages WHERE thread = "
        f"{GOOD}), base_length = 5 WHERE thread = {BAD}",
        "belongs to another thread",
    ),
    "a list of another run": (
        lambda s: _trace(s, 1, s["r"]["trace"][1]),  # "good"'s lineage, as long as "bad"'s
        "list lineage 1 belongs to another thread",
    ),
    # Numbers past any real one: SQLite or datetime refuses them with an OverflowError.
    "a list length past any": (lambda s: _trace(s, 2, 2**64 - 1), "OverflowError"),
    "a time past any date": (lambda s: s.update(t=2**63 - 1), "OverflowError"),
    # Another program's rows: a kind of value no serializer knows; bytes written as text.
    "a pending write of an unknown kind": (
        "INSERT INTO delta_writes (thread, checkpoint_id, task_id, task_path, writes) SELECT "
        "thread, max(checkpoint_id), 't', '', x'919400a16da57765697264c400' "
        f"FROM delta_checkpoints WHERE thread = {BAD}",
        "Unknown serialization type: weird",
    ),
    "a skeleton that is text, not UTF-8": (
        "UPDATE delta_checkpoints SET skeleton = CAST(x'ff' AS TEXT) WHERE checkpoint_id = ("
        f"SELECT max(checkpoint_id) FROM delta_checkpoints WHERE thread = {BAD})",
        "Could not decode to UTF-8 column 'skeleton'",
    ),
}


@pytest.mark.parametrize(("damaged", "why"), POINTERS.values(), ids=POINTERS.keys())
def test_a_checkpoint_no_run_could_write_names_itself_and_never_hangs(
    db: Path, capsys: pytest.CaptureFixture[str], damaged: Any, why: str
) -> None:
    if callable(damaged):
        edit_newest_skeleton(db, damaged)
    else:
        damage(db, damaged)
    for command in ("show", "history", "resume"):
        code, _, err = cli(capsys, command, "bad", "--db", str(db))
        assert code == EXIT["failed"], err
        assert (
            err.startswith("error: checkpoint ") and " of thread bad cannot be read back (" in err
        )
        assert why in err and "Other runs are not affected" in err, err
    the_rest_works(db, capsys)


# Text a program other than ai-agent bound as bytes: SQLite keeps it as bytes in a TEXT column.
TEXTS = {
    "the task, not UTF-8": ("task", "x'ff00'", "\ufffd\x00"),
    # Stored as text, not as a BLOB: the driver refused the whole listing ("Could not decode").
    "the task, text not UTF-8": ("task", "CAST(x'41eda08042' AS TEXT)", "A\ufffd\ufffd\ufffdB"),
    "the status, as bytes": ("status", "CAST('completed' AS BLOB)", "completed"),
}


@pytest.mark.parametrize(("column", "value", "shown"), TEXTS.values(), ids=TEXTS.keys())
def test_text_of_the_run_row_stored_as_bytes_still_lists(
    db: Path, capsys: pytest.CaptureFixture[str], column: str, value: str, shown: str
) -> None:
    damage(db, f"UPDATE agent_runs SET {column} = {value} WHERE thread_id = 'bad'")
    the_rest_works(db, capsys)
    code, out, _ = cli(capsys, "runs", "--db", str(db), "--json")
    bad = next(r for r in json.loads(out) if r["thread_id"] == "bad")
    assert code == 0 and bad[column] == shown
    if "\ufffd" in shown:  # what could not be read is said; the same text as bytes is that text
        assert bad["error"].startswith(
            f"the {column} of the run (agent_runs.{column}) of thread bad cannot be read back: "
            "it holds binary data that is not UTF-8 text"
        )
    else:
        assert bad["error"] is None


@pytest.mark.parametrize(
    ("value", "shown"), [("x'ff68'", "\ufffdh"), ("CAST('hello' AS BLOB)", "hello")]
)
def test_a_clipped_output_stored_as_bytes_is_shown_as_text(
    db: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture, value: str,
    shown: str,
) -> None:  # fmt: skip
    import asyncio

    store = RunStore(db)
    call = ToolCall(id="c1", name="calculator", args={})
    ref = asyncio.run(store.save_output("bad", 1, call, "x" * 100))
    store.close()
    damage(db, f"UPDATE agent_outputs SET content = {value}")
    code, out, _ = cli(capsys, "output", "bad", ref, "--db", str(db))
    assert code == 0 and out.rstrip("\n") == shown
    said = f"the clipped output {ref} (agent_outputs.content) of thread bad cannot be read back"
    assert (said in caplog.text) == ("\ufffd" in shown)
