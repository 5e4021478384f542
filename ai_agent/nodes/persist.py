"""persist: save the result (the hook, else a JSONL line in ``.agents/memory.jsonl``)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, TypedDict

from langgraph.runtime import Runtime

from ai_agent.context import RunContext
from ai_agent.errors import StoreError
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
    """Append one JSON line; a single write call so a line is never interleaved or half-written.

    Raises:
        StoreError: the file cannot be written (a folder, no permission, no space): it names the
            file and says what to do, instead of an OSError from deep in the run.
    """
    line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # A file edited by hand may end without a line end: the record would be glued to its
        # last line, and both read back as one line that is not JSON.
        if not _ends_a_line(path):
            line = "\n" + line
        with path.open("a", encoding="utf-8") as fh:
            fh.write(line)
    except OSError as exc:
        raise StoreError(
            f"cannot append the run to the memory file {path} ({exc.strerror or exc}): make it "
            "a file this process can write, or set memory_path to another (None: no file)"
        ) from None


def _ends_a_line(path: Path) -> bool:
    """True when the file is empty, missing, or ends with a line end."""
    try:
        with path.open("rb") as fh:
            if fh.seek(0, os.SEEK_END) == 0:
                return True
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) == b"\n"
    except FileNotFoundError:
        return True


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
