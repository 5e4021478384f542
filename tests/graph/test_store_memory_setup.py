"""Setting up the memory store while another process sets it up too (``memory_store``).

Workers started together on a new store each run LangGraph's ``setup()``, whose migrations
check the version and then apply what is missing outside one transaction. On SQLite a set-up
that finds another's migration half done retries; on PostgreSQL (tests/postgres) set-ups take
turns under an advisory lock.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
from langgraph.store.sqlite import SqliteStore

from ai_agent.checkpoints.store_memory import open_store_memory
from ai_agent.errors import StoreError
from tests.together import run_together

# A child opens the store when told to, adds one run and prints "ok" or its error.
OPEN_AND_ADD = """
from ai_agent.checkpoints.store_memory import open_store_memory
try:
    memory = open_store_memory(sys.argv[1])
    memory.add({"thread_id": sys.argv[2], "task": "count the crates", "final_text": "9",
                "status": "completed"})
    memory.close()
    print("ok")
except Exception as exc:
    print(f"{type(exc).__name__}: {exc}")
"""


def open_at_once(location: str, processes: int) -> list[str]:
    """Open the store in ``processes`` children at the same moment; what each printed."""
    return run_together(OPEN_AND_ADD, [(location, f"t{n}") for n in range(processes)])


def test_processes_opening_a_new_sqlite_store_at_once_all_open_it(tmp_path: Path) -> None:
    for trial in range(3):
        path = tmp_path / f"store{trial}.sqlite"
        assert open_at_once(str(path), processes=4) == ["ok"] * 4
        memory = open_store_memory(str(path))
        assert sorted(r["thread_id"] for r in memory.search("crates")) == [
            "t0",
            "t1",
            "t2",
            "t3",
        ]
        memory.close()


def test_a_set_up_that_finds_another_half_done_retries_until_it_is_done(tmp_path: Path) -> None:
    # The race, held still: another process has added the last migration's column but not yet
    # recorded it. Applying it again fails ("duplicate column"); once it is recorded, the
    # set-up goes on from there.
    path = tmp_path / "store.sqlite"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    SqliteStore(other).setup()
    # The first migration that cannot run twice (an ALTER TABLE ... ADD COLUMN), and those after.
    adds = next(v for v, sql in enumerate(SqliteStore.MIGRATIONS) if "ADD COLUMN" in sql)
    unrecorded = list(range(adds, len(SqliteStore.MIGRATIONS)))
    other.execute("DELETE FROM store_migrations WHERE v >= ?", (adds,))
    recorded = threading.Timer(
        0.3,
        lambda: other.executemany(
            "INSERT INTO store_migrations (v) VALUES (?)", [(v,) for v in unrecorded]
        ),
    )
    recorded.start()
    try:
        memory = open_store_memory(str(path))
    finally:
        recorded.join()
    memory.close()
    other.close()
    with sqlite3.connect(path) as conn:
        versions = [r[0] for r in conn.execute("SELECT v FROM store_migrations ORDER BY v")]
    assert versions == list(range(len(SqliteStore.MIGRATIONS)))


def test_a_store_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    path.write_text("not a database\n" * 100)
    with pytest.raises(StoreError, match=r"store\.sqlite .*move it aside"):
        open_store_memory(str(path))
    assert path.read_text().startswith("not a database")
