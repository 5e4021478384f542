"""Closing a run store's SQLite database while another thread is inside a transaction."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from ai_agent.checkpoints._sqlite import SqliteDatabase


def test_a_close_waits_for_the_transaction_another_thread_is_in(tmp_path: Path) -> None:
    db = SqliteDatabase(tmp_path / "runs.sqlite")
    with db.transaction() as session:
        session.execute("CREATE TABLE t (x INTEGER)")
    inside, finish = threading.Event(), threading.Event()
    failures: list[BaseException] = []

    def write() -> None:
        try:
            with db.transaction() as session:
                session.execute("INSERT INTO t VALUES (1)")
                inside.set()
                finish.wait(30)
                session.execute("INSERT INTO t VALUES (2)")
        except BaseException as exc:  # the commit on a connection closed under it
            failures.append(exc)

    writer = threading.Thread(target=write)
    writer.start()
    assert inside.wait(30)
    closer = threading.Thread(target=db.close)
    closer.start()
    closer.join(0.5)
    assert closer.is_alive(), "the close did not wait for the transaction"
    finish.set()
    writer.join(30)
    closer.join(30)
    assert not closer.is_alive() and failures == []
    with sqlite3.connect(tmp_path / "runs.sqlite") as conn:
        assert [r[0] for r in conn.execute("SELECT x FROM t")] == [1, 2]
