"""Another process holding a SQLite database's write lock: a run in the middle of a long commit.

Shared by the tests that check a reader or a writer of ours does not wait for it where it need
not (``ai-agent runs`` and friends), or waits without holding up the event loop (the journal).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["WriterProcess", "writing"]

# Holds the lock until its standard input closes.
_WRITER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("CREATE TABLE held_by_the_writer (x)")
print("holding", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
"""


class WriterProcess:
    """The process holding the lock; `let_go` ends its transaction (rolled back)."""

    def __init__(self, path: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        assert self.process.stdout.readline().strip() == "holding"

    def let_go(self) -> None:
        """Make it roll back and exit (nothing if it has already)."""
        if self.process.poll() is None:
            self.process.communicate("", timeout=60)


@contextmanager
def writing(path: Path) -> Iterator[WriterProcess]:
    """Another process holds ``path``'s write lock inside the block (or until it lets go)."""
    writer = WriterProcess(path)
    try:
        yield writer
    finally:
        writer.let_go()
