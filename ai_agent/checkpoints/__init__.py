"""Persistence: the SQLite checkpointer, the run store (runs, leases, journal) and the memory."""

from ai_agent.checkpoints.memory import SqliteMemory
from ai_agent.checkpoints.runstore import SCHEMA_VERSION, Lease, RunRecord, RunStore
from ai_agent.checkpoints.saver import open_checkpointer, strict_serializer

__all__ = [
    "SCHEMA_VERSION",
    "Lease",
    "RunRecord",
    "RunStore",
    "SqliteMemory",
    "open_checkpointer",
    "strict_serializer",
]
