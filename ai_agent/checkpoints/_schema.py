"""The delta checkpointer's tables, its format version, and the migrations between versions.

The tables are prefixed ``delta_`` so they sit beside the run store's ``agent_*`` tables (and any
``checkpoints``/``writes`` tables LangGraph's own SqliteSaver left behind) in one database file.
``delta_meta`` holds ``format`` (the version of the layout below); a database written by a newer
ai-agent is refused instead of being misread. See `ai_agent.checkpoints.delta` for what each
table means.
"""

from __future__ import annotations

import sqlite3

from ai_agent.checkpoints import _texts
from ai_agent.checkpoints.schema import stored_number
from ai_agent.errors import StoreError

__all__ = ["FORMAT_VERSION", "create_or_migrate", "legacy_tables_present"]

FORMAT_VERSION = 5

_DDL_V1 = """
CREATE TABLE IF NOT EXISTS delta_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS delta_threads (
    id INTEGER PRIMARY KEY,
    thread_id TEXT NOT NULL,
    checkpoint_ns TEXT NOT NULL,
    UNIQUE (thread_id, checkpoint_ns)
);
CREATE TABLE IF NOT EXISTS delta_checkpoints (
    thread INTEGER NOT NULL,
    checkpoint_id TEXT NOT NULL,
    parent_id TEXT,
    full INTEGER NOT NULL,
    depth INTEGER NOT NULL,
    skeleton BLOB NOT NULL,
    metadata TEXT NOT NULL,
    PRIMARY KEY (thread, checkpoint_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS delta_values (
    thread INTEGER NOT NULL,
    id INTEGER NOT NULL,
    type TEXT,
    value BLOB,
    lineage INTEGER,
    length INTEGER,
    PRIMARY KEY (thread, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS delta_lineages (
    id INTEGER PRIMARY KEY,
    thread INTEGER NOT NULL,
    base INTEGER,
    base_length INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS delta_lineages_thread ON delta_lineages (thread);
CREATE TABLE IF NOT EXISTS delta_segments (
    lineage INTEGER NOT NULL,
    start INTEGER NOT NULL,
    count INTEGER NOT NULL,
    merged INTEGER NOT NULL,
    type TEXT NOT NULL,
    items BLOB NOT NULL,
    PRIMARY KEY (lineage, start)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS delta_writes (
    thread INTEGER NOT NULL,
    checkpoint_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    task_path TEXT NOT NULL,
    writes BLOB NOT NULL,
    PRIMARY KEY (thread, checkpoint_id, task_id)
) WITHOUT ROWID;
"""

_TEXT_TABLES = ("delta_checkpoints", "delta_values", "delta_segments", "delta_writes")

# Indexes only this ai-agent's queries use: created where missing at any format, without a new
# number (a file with them is read as before by an older ai-agent, which never asks for them).
# delta_segments_unmerged: a lineage's small segments, waiting to be merged (`_lineages.merge`),
# found without walking its merged chunks, whose rows hold the items themselves: counting them
# walked every chunk of a long list, a cost that grew with the run.
_ADDITIVE_INDEXES = {
    "delta_segments_unmerged": "CREATE INDEX IF NOT EXISTS delta_segments_unmerged "
    "ON delta_segments (lineage, start) WHERE merged = 0",
}

# Version N -> the statements that turn a version N database into version N + 1. A new database
# gets the version-1 tables and then every migration. The test suite keeps a database of each
# older version as a fixture, so each migration runs against a file written by an older ai-agent.
_MIGRATIONS: dict[int, str] = {
    # 2: a skeleton may name a list as (lineage, length) and hold a small value itself, where
    # format 1 always named a delta_values row. A format-1 file is a valid format-2 file (all its
    # references are row ids), so only the number changes; a format-1 reader must refuse the
    # new references, which is what the number is for.
    1: "",
    # 3: large texts are stored once, in agent_texts (shared with the run store when it is in
    # the same file), and a row that names some lists them in its texts column
    # (ai_agent.checkpoints._texts). Rows written before keep their texts inline (texts NULL),
    # which format 3 reads as they are; a format-2 reader would hand out the marks.
    2: ";".join(
        [
            *(f"ALTER TABLE {table} ADD COLUMN texts TEXT" for table in _TEXT_TABLES),
            *(_texts.index_ddl(table) for table in _TEXT_TABLES),
            _texts.TABLE_DDL,
        ]
    ),
    # 4: a skeleton may name a dict as (lineage, length, "d"): a change log of its keys in a
    # lineage's segments (ai_agent.checkpoints._dicts). The tables do not change and format 3's
    # rows read as they are; a format-3 reader would take such a reference for a list of change
    # records, which is what the number is for.
    3: "",
    # 5: a task's write of items the next checkpoint appended to a list names them in the
    # lineage (``_writes.ITEMS_TYPE``) instead of holding them again. The tables do not change
    # and format 4's rows read as they are; a format-4 reader would hand out the reference
    # instead of the list, which is what the number is for.
    4: "",
}


def create_or_migrate(conn: sqlite3.Connection, *, where: str) -> None:
    """Create the tables on a new database, or bring an older format up to date.

    A database already at `FORMAT_VERSION` is left as it is, read without a transaction:
    opening one to read it (a resume, ``ai-agent show``) neither writes nor waits for another
    process's write lock.

    Args:
        conn: An autocommit connection (``isolation_level=None``).
        where: How to name the database in an error message.

    Raises:
        StoreError: the database was written by a newer ai-agent, is not SQLite, or its
            format is not a number.
    """
    try:
        if _current_format(conn) == str(FORMAT_VERSION) and _indexes_as_made(conn):
            return
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.DatabaseError as exc:
        raise StoreError(
            f"{where} is not a usable checkpoint database ({exc}); point --db at another file"
        ) from None
    try:
        _create_or_migrate(conn, where)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _create_or_migrate(conn: sqlite3.Connection, where: str) -> None:
    """`create_or_migrate`'s work, inside its write transaction."""
    if _table_exists(conn, "delta_meta"):
        row = conn.execute("SELECT value FROM delta_meta WHERE key = 'format'").fetchone()
        found = _format_number(row[0], where) if row else FORMAT_VERSION
    else:
        found = 1
        _run_script(conn, _DDL_V1)
    if found > FORMAT_VERSION:
        raise StoreError(
            f"the checkpoints in {where} use format {found}, newer than this ai-agent "
            f"understands ({FORMAT_VERSION}); upgrade ai-agent"
        )
    while found < FORMAT_VERSION:
        _run_script(conn, _MIGRATIONS[found])
        found += 1
    if not _indexes_as_made(conn):
        for name, statement in _ADDITIVE_INDEXES.items():
            # One changed by hand (the queries that name it could fail: "no query solution")
            # is made again; an index holds no data, so nothing is lost.
            conn.execute(f"DROP INDEX IF EXISTS {name}")
            conn.execute(statement)
    conn.execute(
        "INSERT OR REPLACE INTO delta_meta (key, value) VALUES ('format', ?)",
        (str(FORMAT_VERSION),),
    )


def _indexes_as_made(conn: sqlite3.Connection) -> bool:
    """Whether each of `_ADDITIVE_INDEXES` is there, as its statement makes it."""
    for name, statement in _ADDITIVE_INDEXES.items():
        row = conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?", (name,)
        ).fetchone()
        # SQLite keeps the statement's text, less its IF NOT EXISTS.
        if row is None or row[0] != statement.replace(" IF NOT EXISTS", ""):
            return False
    return True


def _run_script(conn: sqlite3.Connection, script: str) -> None:
    """Each statement of ``script`` (``;``-separated), in the caller's transaction."""
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


def _current_format(conn: sqlite3.Connection) -> str | None:
    """The stored format as it is stored, None without one (a new database, or an old one)."""
    if not _table_exists(conn, "delta_meta"):
        return None
    row = conn.execute("SELECT value FROM delta_meta WHERE key = 'format'").fetchone()
    return str(row[0]) if row else None


def _format_number(value: object, where: str) -> int:
    return stored_number(
        value,
        what=f"the checkpoints in {where} name their format",
        fix="delta_meta was changed by hand; restore the file from a copy, or point --db at "
        "another file",
    )


def legacy_tables_present(conn: sqlite3.Connection) -> bool:
    """True when LangGraph's SqliteSaver tables (the engine's old default) hold checkpoints."""
    if not (_table_exists(conn, "checkpoints") and _table_exists(conn, "writes")):
        return False
    return conn.execute("SELECT 1 FROM checkpoints LIMIT 1").fetchone() is not None


def _table_exists(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return row is not None
