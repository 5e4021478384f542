"""persist: save the result (the hook, else a JSONL line in ``.agents/memory.jsonl``)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, TypedDict

from langgraph.runtime import Runtime

from ai_agent.context import RunContext
from ai_agent.nodes._common import call_hook, hook_view, stage
from ai_agent.state import RunState, TraceEvent

__all__ = ["PersistUpdate", "persist"]


class PersistUpdate(TypedDict, total=False):
    """What the persist stage writes to the run state."""

    trace: list[TraceEvent]


def _record(state: RunState, thread_id: str) -> dict[str, Any]:
    gate = state.get("gate")
    return {
        "thread_id": thread_id,
        "task": state.get("task", ""),
        "status": state.get("status", "completed"),
        "final_text": state.get("final_text") or "",
        "iterations": state.get("iteration", 0),
        "gate": {"severity": gate["severity"], "codes": [i["code"] for i in gate["issues"]]}
        if gate
        else None,
        "discovered": list(state.get("discovered", [])),
        "finished_at": time.time(),
    }


def append_jsonl(path: Path, record: dict[str, Any]) -> None:
    """Append one JSON line; a single write call so a line is never interleaved or half-written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
    with path.open("a", encoding="utf-8") as fh:
        fh.write(line)


@stage("persist")
async def persist(state: RunState, *, runtime: Runtime[RunContext]) -> PersistUpdate:
    """Call the persist hook, or append the run to the JSONL memory (and the SQLite memory)."""
    context = runtime.context
    iteration = state.get("iteration", 0)
    if context.hooks.persist is not None:
        gate = state.get("gate")
        await call_hook(
            "persist",
            context.hooks.persist,
            state.get("task", ""),
            hook_view(state, context),
            state.get("final_text") or "",
            dict(gate) if gate else None,
            list(state.get("discovered", [])),
        )
        return PersistUpdate(
            trace=[TraceEvent(stage="persist", iteration=iteration, detail="hook")]
        )
    record = _record(state, context.thread_id)
    where = []
    if context.policy.memory_path:
        append_jsonl(Path(context.policy.memory_path), record)
        where.append(context.policy.memory_path)
    if context.memory is not None:
        context.memory.add(record)
        where.append("sqlite memory")
    return PersistUpdate(
        trace=[
            TraceEvent(stage="persist", iteration=iteration, detail=", ".join(where) or "nowhere")
        ]
    )
