"""Import checkpoints written by LangGraph's SqliteSaver, the engine's checkpointer before this one.

A database from before the delta checkpointer holds its runs in SqliteSaver's ``checkpoints`` and
``writes`` tables. The first time the delta checkpointer opens such a file it copies every thread
into its own tables (storing each value once, as it would have), so those runs can still be
resumed, inspected and replayed. The old tables are left as they were: nothing is deleted on the
user's behalf. A thread that cannot be read (for example one written with pickle, which strict
serialization refuses) is skipped and named in ``delta_meta`` under ``legacy_import``.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any, cast

from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata

from ai_agent.checkpoints._puts import put_in_tx
from ai_agent.checkpoints._schema import legacy_tables_present
from ai_agent.checkpoints._store import DeltaStore
from ai_agent.checkpoints._writes import store_writes

__all__ = ["import_legacy"]


def import_legacy(store: DeltaStore) -> list[str]:
    """Copy SqliteSaver's threads into the delta tables once; returns the threads skipped."""
    conn = store.conn
    if not legacy_tables_present(conn):
        return []
    done = conn.execute("SELECT value FROM delta_meta WHERE key = 'legacy_import'").fetchone()
    if done is not None:
        return list(json.loads(done[0]))
    columns = {r[1] for r in conn.execute("PRAGMA table_info(writes)")}
    path = "task_path" if "task_path" in columns else "''"
    threads = conn.execute("SELECT DISTINCT thread_id, checkpoint_ns FROM checkpoints").fetchall()
    skipped: list[str] = []
    for thread_id, ns in threads:
        try:
            with store.tx():
                if store.thread_key(thread_id, ns, create=False) is None:
                    _import_thread(store, thread_id, ns, path)
        except (sqlite3.Error, ValueError, TypeError, KeyError, NotImplementedError):
            skipped.append(thread_id if not ns else f"{thread_id} ({ns})")
    with store.tx():
        conn.execute(
            "INSERT OR REPLACE INTO delta_meta (key, value) VALUES ('legacy_import', ?)",
            (json.dumps(skipped),),
        )
    return skipped


def _version(value: Any) -> Any:
    """SqliteSaver's ``"000..012.0.5521"`` versions as the integers the delta saver counts in.

    The number before the dot grows by one per step on every path, so it orders the versions of
    one checkpoint's history exactly as the strings did.
    """
    return int(value.split(".")[0]) if isinstance(value, str) else value


def _import_thread(store: DeltaStore, thread_id: str, ns: str, path: str) -> None:
    conn = store.conn
    rows = conn.execute(
        "SELECT checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata FROM checkpoints "
        "WHERE thread_id = ? AND checkpoint_ns = ? ORDER BY checkpoint_id",
        (thread_id, ns),
    ).fetchall()
    versions_of: dict[str, dict[str, Any]] = {}
    for checkpoint_id, parent_id, type_, blob, metadata in rows:
        checkpoint: Checkpoint = store.serde.loads_typed((type_, blob))
        checkpoint["channel_versions"] = {
            ch: _version(v) for ch, v in checkpoint["channel_versions"].items()
        }
        checkpoint["versions_seen"] = {
            node: {ch: _version(v) for ch, v in seen.items()}
            for node, seen in checkpoint["versions_seen"].items()
        }
        before = versions_of.get(parent_id or "", {})
        new_versions = {
            ch: v for ch, v in checkpoint["channel_versions"].items() if before.get(ch) != v
        }
        conf = {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": parent_id}
        config: Any = {"configurable": conf}
        meta: CheckpointMetadata = json.loads(metadata) if metadata else {}
        put_in_tx(store, config, checkpoint, meta, new_versions)
        versions_of[checkpoint_id] = checkpoint["channel_versions"]
    tkey = cast(int, store.thread_key(thread_id, ns, create=True))
    tasks: dict[tuple[str, str], tuple[str, list[list[Any]]]] = {}
    for checkpoint_id, task_id, task_path, idx, channel, type_, value in conn.execute(
        f"SELECT checkpoint_id, task_id, {path}, idx, channel, type, value FROM writes "  # noqa: S608 - a column name or ''
        "WHERE thread_id = ? AND checkpoint_ns = ? ORDER BY checkpoint_id, task_id, idx",
        (thread_id, ns),
    ):
        entry = tasks.setdefault((checkpoint_id, task_id), (task_path, []))
        entry[1].append([idx, channel, type_, value])
    for (checkpoint_id, task_id), (task_path, entries) in tasks.items():
        store_writes(store, tkey, checkpoint_id, task_id, task_path, entries, replace=True)
