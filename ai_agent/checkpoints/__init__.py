"""Persistence: the SQLite checkpointer, the run store (runs, leases, journal, recorded calls)
and the memory."""

from ai_agent.checkpoints.memory import SqliteMemory
from ai_agent.checkpoints.recorded import (
    CallPosition,
    ModelCallRecord,
    ModelRequest,
    ToolCallRecord,
)
from ai_agent.checkpoints.runstore import SCHEMA_VERSION, Lease, RunOrigin, RunRecord, RunStore
from ai_agent.checkpoints.saver import open_checkpointer, strict_serializer

__all__ = [
    "SCHEMA_VERSION",
    "CallPosition",
    "Lease",
    "ModelCallRecord",
    "ModelRequest",
    "RunOrigin",
    "RunRecord",
    "RunStore",
    "SqliteMemory",
    "ToolCallRecord",
    "open_checkpointer",
    "strict_serializer",
]
