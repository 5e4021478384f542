"""The run store's schema: its version, the tables of version 1, and the migrations since.

A database is brought to `SCHEMA_VERSION` when it is opened: the version-1 tables are
created if missing, then each migration from the stored version upwards runs, all in one
``BEGIN IMMEDIATE`` transaction, so two processes opening an old file at once migrate it once.
A file written by a newer ai-agent is refused instead of being damaged.

To change the schema: add ``_v<N>`` below, list it in ``MIGRATIONS``, bump ``SCHEMA_VERSION``,
and commit a fixture of the new version (``tests/fixtures/make_fixture.py``); the fixtures of
older versions stay, and their tests open them with the new code.

A table that only ever gets added, that no existing code reads, and whose absence an older
ai-agent does not notice, may instead be listed in ``_ADDITIVE``: it is created when missing at
every open, at any version, without a bump (the kept full text of clipped tool outputs; the
run summaries; the always-allow rules, ``ai_agent.checkpoints.rules``, which an older ai-agent
does not read, so it asks a person where a rule would have answered; the pinned MCP tool
definitions, ``ai_agent.checkpoints.pins``, which an older ai-agent does not check).

Version history:

1. runs, leases, the act journal.
2. recorded model and tool calls (with message bodies stored once, by hash, in ``agent_blobs``);
   a run's ``origin`` (run, fork, replay) and the checkpoint it was forked at.
3. the plan queue (``agent_plans``, see ``ai_agent.checkpoints.plans``).
4. large texts in message bodies stored once, in ``agent_texts`` (shared with the checkpoints of
   the same file): an ``agent_blobs`` row that names some lists them (``texts``), see
   ``ai_agent.checkpoints._texts``.
5. a tool call's outcome stored once, in the journal: a recorded tool call keeps what only it
   knows (where it happened, its arguments' hash, its duration, whether a replay served it) and
   its journal key (thread, iteration, call id), no longer the tool, arguments and result
   (``ai_agent.checkpoints.recorded``). The migration moves a recorded outcome whose journal entry
   is gone into the journal first (prune deleted a finished run's journal and kept its recorded
   calls for the replays of its forks).
6. a child run (a subagent's, ``origin = 'child'``) names the parent's step it was spawned at:
   ``parent_iteration`` (the parent's cycle) and ``parent_call_id`` (the engine id of the
   parent's tool call that delegated to it); ``parent_thread_id`` names the parent.

The PostgreSQL run store (``ai_agent.checkpoints.postgres``) keeps the same tables under the same
version number; a new version migrates both.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

from ai_agent.checkpoints import _texts
from ai_agent.checkpoints._sqlite import all_present
from ai_agent.checkpoints.pins import PINS_DDL
from ai_agent.checkpoints.rules import RULES_DDL, SQLITE_TYPES
from ai_agent.errors import StoreError

__all__ = [
    "JOURNAL_RECORDED_OUTCOMES",
    "MIGRATIONS",
    "RUN_SUMMARIES_TABLE",
    "SCHEMA_VERSION",
    "V6_CHILD_COLUMNS",
    "created_objects",
    "ensure_schema",
    "schema_version",
    "stored_number",
]

SCHEMA_VERSION = 6

_V1 = (
    "CREATE TABLE IF NOT EXISTS agent_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS agent_runs (
        thread_id TEXT PRIMARY KEY,
        task TEXT NOT NULL,
        status TEXT NOT NULL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        final_text TEXT,
        gate TEXT,
        error TEXT,
        parent_thread_id TEXT
    )""",
    "CREATE INDEX IF NOT EXISTS agent_runs_updated ON agent_runs (updated_at)",
    """CREATE TABLE IF NOT EXISTS agent_leases (
        thread_id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        acquired_at REAL NOT NULL,
        expires_at REAL NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS agent_journal (
        thread_id TEXT NOT NULL,
        iteration INTEGER NOT NULL,
        call_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        args TEXT NOT NULL,
        status TEXT NOT NULL,
        result TEXT,
        intent_at REAL NOT NULL,
        outcome_at REAL,
        PRIMARY KEY (thread_id, iteration, call_id)
    )""",
)


def _v2(conn: sqlite3.Connection) -> None:
    """Recorded calls, and where a run came from."""
    for statement in (
        "ALTER TABLE agent_runs ADD COLUMN origin TEXT NOT NULL DEFAULT 'run'",
        "ALTER TABLE agent_runs ADD COLUMN fork_checkpoint_id TEXT",
        "CREATE INDEX agent_runs_parent ON agent_runs (parent_thread_id)",
        # Message bodies and tool schema lists, stored once by content hash: each request holds
        # the whole conversation, so storing requests whole would grow with the square of it.
        "CREATE TABLE agent_blobs (hash TEXT PRIMARY KEY, body TEXT NOT NULL)",
        """CREATE TABLE agent_model_calls (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            thread_id TEXT NOT NULL,
            step INTEGER,
            stage TEXT,
            checkpoint_id TEXT,
            request_hash TEXT NOT NULL,
            request TEXT NOT NULL,
            response TEXT,
            usage TEXT NOT NULL,
            error TEXT,
            latency_ms REAL NOT NULL,
            replayed INTEGER NOT NULL,
            created_at REAL NOT NULL
        )""",
        "CREATE INDEX agent_model_calls_thread ON agent_model_calls (thread_id, seq)",
        """CREATE TABLE agent_tool_calls (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            thread_id TEXT NOT NULL,
            step INTEGER,
            stage TEXT,
            checkpoint_id TEXT,
            iteration INTEGER,
            call_id TEXT NOT NULL,
            tool TEXT NOT NULL,
            args_hash TEXT NOT NULL,
            args TEXT NOT NULL,
            result TEXT NOT NULL,
            duration_ms REAL NOT NULL,
            replayed INTEGER NOT NULL,
            created_at REAL NOT NULL
        )""",
        "CREATE INDEX agent_tool_calls_thread ON agent_tool_calls (thread_id, seq)",
    ):
        conn.execute(statement)


def _v3(conn: sqlite3.Connection) -> None:
    """The plan queue."""
    for statement in (
        """CREATE TABLE agent_plans (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            thread_id TEXT NOT NULL,
            plan TEXT NOT NULL,
            status TEXT NOT NULL,
            gate_checkpoint_id TEXT,
            submitted_at REAL NOT NULL,
            claimed_by TEXT,
            claimed_at REAL,
            attempts INTEGER NOT NULL DEFAULT 0,
            finished_at REAL,
            outcome TEXT,
            error TEXT
        )""",
        # One open plan per thread: two answers to one gate cannot both be queued.
        "CREATE UNIQUE INDEX agent_plans_open ON agent_plans (thread_id) "
        "WHERE status IN ('queued', 'claimed')",
        "CREATE INDEX agent_plans_status ON agent_plans (status, id)",
    ):
        conn.execute(statement)


def _v4(conn: sqlite3.Connection) -> None:
    """Large texts stored once (the checkpoints may have created their table already)."""
    for statement in (
        _texts.TABLE_DDL,
        "ALTER TABLE agent_blobs ADD COLUMN texts TEXT",
        _texts.index_ddl("agent_blobs"),
    ):
        conn.execute(statement)


# Version 5, both backends: the recorded outcomes the journal does not hold any more move into it,
# the latest recorded attempt of each call (an entry left at its intent keeps its unknown outcome:
# the gate asks a person about it, as before). The WHERE clause also keeps SQLite's parser from
# taking ON CONFLICT for a join's ON.
JOURNAL_RECORDED_OUTCOMES = """
    INSERT INTO agent_journal (thread_id, iteration, call_id, tool, args, status, result,
        intent_at, outcome_at)
    SELECT t.thread_id, COALESCE(t.iteration, 0), t.call_id, t.tool, t.args, 'done', t.result,
        t.created_at, t.created_at
    FROM agent_tool_calls t
    WHERE t.seq = (SELECT MAX(u.seq) FROM agent_tool_calls u WHERE u.thread_id = t.thread_id
        AND COALESCE(u.iteration, 0) = COALESCE(t.iteration, 0) AND u.call_id = t.call_id)
    ON CONFLICT (thread_id, iteration, call_id) DO NOTHING
"""


def _v5(conn: sqlite3.Connection) -> None:
    """A tool call's outcome is stored once, in the journal; its recorded call points to it.

    SQLite cannot change a column's constraint in place: the table is rebuilt (its ``seq``
    values kept, so the sequence goes on from the largest).
    """
    for statement in (
        JOURNAL_RECORDED_OUTCOMES,
        """CREATE TABLE agent_tool_calls_v5 (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            thread_id TEXT NOT NULL,
            step INTEGER,
            stage TEXT,
            checkpoint_id TEXT,
            iteration INTEGER NOT NULL,
            call_id TEXT NOT NULL,
            args_hash TEXT NOT NULL,
            duration_ms REAL NOT NULL,
            replayed INTEGER NOT NULL,
            created_at REAL NOT NULL
        )""",
        "INSERT INTO agent_tool_calls_v5 SELECT seq, thread_id, step, stage, checkpoint_id, "
        "COALESCE(iteration, 0), call_id, args_hash, duration_ms, replayed, created_at "
        "FROM agent_tool_calls",
        "DROP TABLE agent_tool_calls",
        "ALTER TABLE agent_tool_calls_v5 RENAME TO agent_tool_calls",
        "CREATE INDEX agent_tool_calls_thread ON agent_tool_calls (thread_id, seq)",
    ):
        conn.execute(statement)


def _v6(conn: sqlite3.Connection) -> None:
    """A child run names the step of its parent that spawned it (a subagent's tool call)."""
    for statement in V6_CHILD_COLUMNS:
        conn.execute(statement)


# Shared with the PostgreSQL store's migration (plain SQL both databases run).
V6_CHILD_COLUMNS = (
    "ALTER TABLE agent_runs ADD COLUMN parent_iteration INTEGER",
    "ALTER TABLE agent_runs ADD COLUMN parent_call_id TEXT",
)


# The run summaries (``ai_agent.checkpoints.summaries``), additive; ``{real}``: the double type.
RUN_SUMMARIES_TABLE = """CREATE TABLE IF NOT EXISTS agent_run_summaries (
        thread_id TEXT PRIMARY KEY,
        run_updated_at {real} NOT NULL,
        stop_reason TEXT,
        model TEXT,
        tokens INTEGER,
        cost {real}
    )"""

_ADDITIVE = (
    *(statement.format(**SQLITE_TYPES) for statement in RULES_DDL),
    *(statement.format(**SQLITE_TYPES) for statement in PINS_DDL),
    """CREATE TABLE IF NOT EXISTS agent_outputs (
        thread_id TEXT NOT NULL,
        ref TEXT NOT NULL,
        iteration INTEGER NOT NULL,
        call_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        chars INTEGER NOT NULL,
        content TEXT NOT NULL,
        created_at REAL NOT NULL,
        PRIMARY KEY (thread_id, ref)
    )""",
    RUN_SUMMARIES_TABLE.format(real="REAL"),
)


# MIGRATIONS[n] takes a database from version n to n + 1.
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    1: _v2,
    2: _v3,
    3: _v4,
    4: _v5,
    5: _v6,
}


def schema_version(conn: sqlite3.Connection) -> int | None:
    """The stored schema version, or None for a database without the run store's tables."""
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'agent_meta'"
    ).fetchone()
    if exists is None:
        return None
    row = conn.execute("SELECT value FROM agent_meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        return 1
    return stored_number(
        row[0],
        what="the run store names its schema version",
        fix="agent_meta was changed by hand; restore the file from a copy, or point --db at "
        "another file",
    )


def stored_number(value: object, *, what: str, fix: str) -> int:
    """A version number read from a database; one changed by hand is refused with ``fix``.

    Never guessed at: a wrong guess would run migrations on a file, or misread it. Versions
    start at 1: there is no migration from 0 (it was a KeyError, "internal error").
    """
    text = str(value)
    if not (text.isascii() and text.isdigit()):
        raise StoreError(f"{what} {text[:40]!r}, not a number: {fix}")
    if int(text) < 1:
        raise StoreError(f"{what} {text[:40]!r}, and versions start at 1: {fix}")
    return int(text)


def created_objects(statements: Sequence[str]) -> tuple[str, ...]:
    """The names of the tables and indexes ``statements`` create where missing."""
    pattern = re.compile(r"\s*CREATE (?:UNIQUE )?(?:TABLE|INDEX) IF NOT EXISTS (\w+)")
    return tuple(match.group(1) for s in statements if (match := pattern.match(s)))


# The tables ``_ADDITIVE`` creates when missing, at any version.
_ADDITIVE_TABLES = created_objects(_ADDITIVE)


def _up_to_date(conn: sqlite3.Connection) -> bool:
    """Whether the run store's tables are all there at `SCHEMA_VERSION` (nothing to do)."""
    return schema_version(conn) == SCHEMA_VERSION and all_present(conn, _ADDITIVE_TABLES)


def ensure_schema(conn: sqlite3.Connection, path: Path) -> int | None:
    """Create or migrate the run store's tables to `SCHEMA_VERSION`.

    A database already at `SCHEMA_VERSION`, with every table of ``_ADDITIVE``, is left as it
    is, read without a transaction: opening a run store to read it neither writes nor waits for
    another process's write lock (``ai-agent runs`` while a run is committing).

    Returns:
        The version the database had before (None: it had no run store yet).

    Raises:
        StoreError: the database was written by a newer ai-agent.
    """
    if _up_to_date(conn):
        return SCHEMA_VERSION
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = schema_version(conn)
        version = 1 if found is None else found
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"the run store at {path} has schema version {version}, newer than this "
                f"ai-agent understands ({SCHEMA_VERSION}); upgrade ai-agent"
            )
        for statement in _V1:
            conn.execute(statement)
        while version < SCHEMA_VERSION:
            MIGRATIONS[version](conn)
            version += 1
        for statement in _ADDITIVE:
            conn.execute(statement)
        conn.execute(
            "INSERT OR REPLACE INTO agent_meta VALUES ('schema_version', ?)", (str(version),)
        )
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return found
