"""Persistence: the delta checkpointer, the run store, and the memory.

The run store keeps runs, leases, the act journal, the recorded calls and the plan queue, on
SQLite or PostgreSQL.

The public names are imported on first use (PEP 562), as in `ai_agent`: the run store alone
(``ai-agent runs``) loads neither LangGraph's checkpoint package nor the LangChain it imports;
the checkpointer's modules come in with `DeltaSaver` or `open_checkpointer`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ai_agent._lazy import lazy_names

if TYPE_CHECKING:
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
    from ai_agent.checkpoints.runstore import (
        SCHEMA_VERSION,
        Lease,
        RunOrigin,
        RunRecord,
        RunStore,
    )
    from ai_agent.checkpoints.store import (
        Location,
        RunStoreProtocol,
        describe_location,
        is_postgres_url,
    )
    from ai_agent.checkpoints.summaries import RunSummary

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
    "RunSummary",
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

_HOMES = {
    "FORMAT_VERSION": "ai_agent.checkpoints.delta",
    "SCHEMA_VERSION": "ai_agent.checkpoints.runstore",
    "CallPosition": "ai_agent.checkpoints.recorded",
    "DeltaSaver": "ai_agent.checkpoints.delta",
    "Lease": "ai_agent.checkpoints.runstore",
    "Location": "ai_agent.checkpoints.store",
    "ModelCallRecord": "ai_agent.checkpoints.recorded",
    "ModelRequest": "ai_agent.checkpoints.recorded",
    "PlanRecord": "ai_agent.checkpoints.plans",
    "PlanStatus": "ai_agent.checkpoints.plans",
    "PruneStats": "ai_agent.checkpoints.delta",
    "RunOrigin": "ai_agent.checkpoints.runstore",
    "RunRecord": "ai_agent.checkpoints.runstore",
    "RunStore": "ai_agent.checkpoints.runstore",
    "RunStoreProtocol": "ai_agent.checkpoints.store",
    "RunSummary": "ai_agent.checkpoints.summaries",
    "SqliteMemory": "ai_agent.checkpoints.memory",
    "StateType": "ai_agent.checkpoints._serde",
    "TypedSerializer": "ai_agent.checkpoints._serde",
    "ToolCallRecord": "ai_agent.checkpoints.recorded",
    "describe_location": "ai_agent.checkpoints.store",
    "is_postgres_url": "ai_agent.checkpoints.store",
    "open_checkpointer": "ai_agent.checkpoints.backends",
    "open_run_store": "ai_agent.checkpoints.backends",
    "strict_serializer": "ai_agent.checkpoints._serde",
}


__getattr__, __dir__ = lazy_names(__name__, _HOMES)
