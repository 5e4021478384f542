"""The SQLite memory shared by processes: workers persisting and recalling at once.

A worker's persist stage adds the finished run, its recall stage searches: several worker
processes on one memory file do both at once, and open a new file at once.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import sqlite_utils

from ai_agent.checkpoints import SqliteMemory
from tests.together import run_together

# Each child adds its runs and searches between them; it prints the errors it met.
_CHILD = """
from ai_agent.checkpoints import SqliteMemory
path, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
memory, errors = SqliteMemory(path), []
for i in range(count):
    try:
        memory.add({"thread_id": f"{name}-{i}", "task": f"sum the invoices {name}",
                    "final_text": str(i), "status": "completed"})
        memory.search("invoices")
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}")
memory.close()
print(errors)
"""


def test_processes_opening_a_new_memory_and_adding_at_once_lose_nothing(tmp_path: Path) -> None:
    for trial in range(5):  # a new file each time: the first opens race too
        path = tmp_path / f"memory{trial}.sqlite"
        outputs = run_together(_CHILD, [(str(path), f"p{n}", "40") for n in range(4)])
        assert outputs == ["[]"] * 4
        memory = SqliteMemory(path)
        assert len(memory.search("invoices", limit=1000)) == 160
        found = memory.search("p3", limit=1000)
        assert sorted(r["thread_id"] for r in found) == sorted(f"p3-{i}" for i in range(40))
        memory.close()


def test_a_file_written_by_the_earlier_memory_opens_and_searches(tmp_path: Path) -> None:
    # What sqlite-utils' check-then-create made before: the same schema, rows found as before.
    path = tmp_path / "memory.sqlite"
    db = sqlite_utils.Database(path)
    table = db.table("memories")
    table.create(
        {"thread_id": str, "task": str, "final_text": str, "status": str, "finished_at": float},
        pk="thread_id",
    )
    table.enable_fts(["task", "final_text"], create_triggers=True)
    table.insert({"thread_id": "old", "task": "count the pallets", "final_text": "7"})
    schema = sorted(db.conn.execute("SELECT name, sql FROM sqlite_master").fetchall())
    db.close()
    memory = SqliteMemory(path)
    assert [r["thread_id"] for r in memory.search("pallets")] == ["old"]
    memory.add({"thread_id": "new", "task": "count the crates", "final_text": "9"})
    assert sorted(r["thread_id"] for r in memory.search("crates pallets")) == ["new", "old"]
    memory.close()
    with sqlite3.connect(path) as conn:
        assert sorted(conn.execute("SELECT name, sql FROM sqlite_master").fetchall()) == schema


def test_rows_stored_before_the_search_index_existed_are_found(tmp_path: Path) -> None:
    # A file whose table was made but not its index (the old code stopped between the two).
    path = tmp_path / "memory.sqlite"
    db = sqlite_utils.Database(path)
    db.table("memories").insert(
        {
            "thread_id": "t1",
            "task": "weigh the parcels",
            "final_text": "3",
            "status": "completed",
            "finished_at": 1.0,
        },
        pk="thread_id",
    )
    db.close()
    memory = SqliteMemory(path)
    assert [r["thread_id"] for r in memory.search("parcels")] == ["t1"]
    memory.close()
