"""Persistence: the delta checkpointer, the run store, and the memory.

The run store keeps runs, leases, the act journal, the recorded calls and the plan queue, on
SQLite or PostgreSQL.
"""

from ai_agent.checkpoints._serde import StateType, TypedSerializer, strict_serializer
from ai_agent.checkpoints.backends import open_checkpointer, open_run_store
from ai_agent.checkpoints.delta import FORMAT_VERSION, DeltaSaver, PruneStats
from ai_agent.checkpoints.memory import SqliteMemory
from ai_agent.checkpoints.plans import PlanRecord, PlanStatus
from ai_agent.checkpoints.recorded import (
    CallPosition,
    ModelCallRecord,
    ModelRequest,
    ToolCallRecord,
)
from ai_agent.checkpoints.runstore import SCHEMA_VERSION, Lease, RunOrigin, RunRecord, RunStore
from ai_agent.checkpoints.store import (
    Location,
    RunStoreProtocol,
    describe_location,
    is_postgres_url,
)

__all__ = [
    "FORMAT_VERSION",
    "SCHEMA_VERSION",
    "CallPosition",
    "DeltaSaver",
    "Lease",
    "Location",
    "ModelCallRecord",
    "ModelRequest",
    "PlanRecord",
    "PlanStatus",
    "PruneStats",
    "RunOrigin",
    "RunRecord",
    "RunStore",
    "RunStoreProtocol",
    "SqliteMemory",
    "StateType",
    "ToolCallRecord",
    "TypedSerializer",
    "describe_location",
    "is_postgres_url",
    "open_checkpointer",
    "open_run_store",
    "strict_serializer",
]
