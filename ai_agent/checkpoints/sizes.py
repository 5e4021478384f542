"""How much of a SQLite database each run takes: the storage page's "largest runs".

The bytes a run holds in the delta saver's tables (its checkpoints' skeletons and metadata, its
values, the segments of its lists, its pending writes) and in the recorded model calls (request
and reply bodies), summed per thread in one read-only query. Values shared through the blob and
text tables are not counted: the figure is what pruning the run can free at most, not an exact
share of the file. A database without the delta saver's tables (PostgreSQL, an old file) has no
sizes to give: `run_sizes` returns None and the page says so.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

__all__ = ["run_sizes"]

_QUERY = """
WITH per_thread AS (
    SELECT t.thread_id AS thread_id, SUM(length(c.skeleton) + length(c.metadata)) AS bytes,
           COUNT(*) AS checkpoints
      FROM delta_checkpoints c JOIN delta_threads t ON t.id = c.thread
     GROUP BY t.thread_id
    UNION ALL
    SELECT t.thread_id, SUM(COALESCE(length(v.value), 0)), 0
      FROM delta_values v JOIN delta_threads t ON t.id = v.thread
     GROUP BY t.thread_id
    UNION ALL
    SELECT t.thread_id, SUM(length(s.items)), 0
      FROM delta_segments s JOIN delta_lineages l ON l.id = s.lineage
      JOIN delta_threads t ON t.id = l.thread
     GROUP BY t.thread_id
    UNION ALL
    SELECT t.thread_id, SUM(length(w.writes)), 0
      FROM delta_writes w JOIN delta_threads t ON t.id = w.thread
     GROUP BY t.thread_id
    UNION ALL
    SELECT thread_id, SUM(length(request) + COALESCE(length(response), 0)), 0
      FROM agent_model_calls GROUP BY thread_id
)
SELECT thread_id, SUM(bytes) AS bytes, SUM(checkpoints) AS checkpoints
  FROM per_thread GROUP BY thread_id ORDER BY bytes DESC, thread_id LIMIT ?
"""


def run_sizes(path: Path, limit: int = 10) -> list[tuple[str, int, int]] | None:
    """The ``limit`` largest runs as ``(thread_id, bytes, checkpoints)``, largest first.

    Read-only (the file is opened with ``mode=ro``); None when the database does not have the
    tables this counts (it is not a delta-saver SQLite file of this version).
    """
    uri = f"{path.resolve().as_uri()}?mode=ro"
    try:
        with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=30)) as db:
            rows = db.execute(_QUERY, (limit,)).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc) or "no such column" in str(exc):
            return None
        raise
    return [(str(t), int(b or 0), int(c or 0)) for t, b, c in rows]
