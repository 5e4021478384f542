"""A recorded case: one stored run in a JSON file of its own, and back into a database.

``ai-agent test-from-run`` keeps a run as a regression case. The case holds what an offline
replay (`ai_agent.graph.replay`, mode ``recorded``) reads from the store: the run's first
checkpoint (where the replay starts), its last one (the plans it received, what it recalled,
whether it still waits at the gate), every model call with its full request and every tool call
with its result (the ancestors' too, for a fork), and what the run ended with (status, answer,
the tool calls in order). `import_case` writes it into a database as a run of its own, so
``Agent.replay`` replays it as any stored run: nothing else in the engine knows about cases.

Why a file beside the test and not a pointer into the run store: a store is pruned (the recorded
calls of finished runs go first), lives on one machine, and is not in the repository; the test
must keep working on a colleague's laptop and in CI a year later. The file is plain JSON (the
checkpoints are the JSON-friendly run state), so a review shows what the case holds.

The file is input like any other: `read_case` checks its shape and says what is wrong, and
never loads anything but JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ai_agent.checkpoints.recorded import CallPosition
from ai_agent.errors import ConfigError, UnknownThreadError
from ai_agent.graph.database import checkpoint_config, config_for, new_thread_id
from ai_agent.graph.history import values_of
from ai_agent.graph.plain_reads import checked
from ai_agent.graph.replay import recorded_calls

if TYPE_CHECKING:
    from langgraph.checkpoint.base import CheckpointTuple

    from ai_agent.graph.database import RunDatabase

__all__ = [
    "CASE_FORMAT",
    "CASE_VERSION",
    "case_text",
    "export_case",
    "import_case",
    "read_case",
    "write_case",
]

CASE_FORMAT = "ai-agent recorded case"
CASE_VERSION = 1
MAX_CASE_BYTES = 200_000_000
"""A case file larger than this is refused before it is parsed (a run of 800 cycles is ~20 MB)."""

_INTERRUPT = "__interrupt__"
_REQUIRED = ("thread_id", "task", "expected", "checkpoints", "model_calls", "tool_calls")


async def export_case(database: RunDatabase, thread_id: str) -> dict[str, Any]:
    """The run as a recorded case (a JSON-ready dict).

    Raises:
        UnknownThreadError: no run with this thread id has a checkpoint.
        ConfigError: the run's state holds a value that is not JSON (a custom hook put it
            there): it cannot be kept as a case.
    """
    async with database.graph(reading=True) as graph:
        saver = graph.checkpointer
        tuples = [t async for t in saver.alist(checkpoint_config(thread_id))]
        if not tuples:
            raise UnknownThreadError(f"no run with thread id {thread_id}")
        head = checked(await graph.aget_state(config_for(thread_id)))
    state = values_of(head)
    models, tools = await recorded_calls(database, thread_id)
    store = database.store
    record = await store.get_run(thread_id)
    case = {
        "format": CASE_FORMAT,
        "version": CASE_VERSION,
        "thread_id": thread_id,
        "task": record["task"] if record else str(state.get("task", "")),
        "tools": list(_first_values(tuples[-1]).get("active_tools") or []),
        "expected": {
            # A paused run's state still says "running": the pending gate says it waits.
            "status": "paused" if head.interrupts else str(state.get("status") or ""),
            "final_text": state.get("final_text"),
            "stop_reason": state.get("stop_reason"),
            "tool_calls": [
                {"name": r["call"]["name"], "args": r["call"]["args"]}
                for r in state.get("results", [])
            ],
        },
        # The first checkpoint (the replay starts there) and the last (its plans, what it
        # recalled, whether it waits at the gate): a case holds no step in between.
        "checkpoints": [_checkpoint(t) for t in (tuples[-1], tuples[0])]
        if len(tuples) > 1
        else [_checkpoint(tuples[0])],
        "model_calls": [
            {**_position(m), "request": await store.model_request(m["seq"]), **_reply(m)}
            for m in models
        ],
        "tool_calls": [
            {
                **_position(t),
                **{k: t[k] for k in ("iteration", "call", "args_hash", "result", "duration_ms")},
            }
            for t in tools
        ],
    }
    _check_json(case)
    return case


def _first_values(item: CheckpointTuple) -> dict[str, Any]:
    values = item.checkpoint["channel_values"]
    start = values.get("__start__")
    return dict(start) if isinstance(start, Mapping) else dict(values)


def _checkpoint(item: CheckpointTuple) -> dict[str, Any]:
    interrupts = [
        {"task": task, "value": [{"value": i.value, "id": i.id} for i in value]}
        for task, channel, value in item.pending_writes or []
        if channel == _INTERRUPT and isinstance(value, list)
    ]
    return {
        "checkpoint": dict(item.checkpoint),
        "metadata": dict(item.metadata or {}),
        "interrupts": interrupts,
    }


def _position(record: Mapping[str, Any]) -> dict[str, Any]:
    return {"step": record["step"], "stage": record["stage"]}


def _reply(record: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("request_hash", "message", "usage", "error", "latency_ms")
    return {k: record[k] for k in keys}


def _check_json(case: Mapping[str, Any]) -> None:
    try:
        json.dumps(case, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"run {case['thread_id']} holds a value that is not JSON ({exc}); a hook or tool "
            "put it in the state: it cannot be kept as a recorded case"
        ) from None


def case_text(case: Mapping[str, Any]) -> str:
    """A case as the file holds it: indented JSON (a reviewer reads it in a diff).

    Keys keep their order: a tool's result is shown to the model as JSON in the order its keys
    were made, so a sorted copy would be another request, and the replay would diverge.
    """
    return json.dumps(case, indent=1, ensure_ascii=False) + "\n"


def write_case(case: Mapping[str, Any], path: Path) -> Path:
    """Write a case to ``path`` (`case_text`), as UTF-8 whatever the locale.

    `read_case` reads UTF-8; in the locale's encoding an answer with "café" failed under
    ``LANG=C`` (ASCII) and was unreadable back under a code page (cp1252).
    """
    path.write_text(case_text(case), encoding="utf-8")
    return path


def read_case(path: str | Path) -> dict[str, Any]:
    """A case file, checked.

    Raises:
        ConfigError: the file is missing, too large, not JSON, or not a recorded case of a
            version this ai-agent reads; the message says which and what to do.
    """
    from ai_agent.datafiles import loads_json, read_text

    what = f"the recorded case {path}"
    text = read_text(path, what=what, max_bytes=MAX_CASE_BYTES, error=ConfigError)
    case = loads_json(text, what=what, error=ConfigError)
    if not isinstance(case, dict) or case.get("format") != CASE_FORMAT:
        raise ConfigError(
            f'{what} is not a recorded case (no "format": "{CASE_FORMAT}"); write one with '
            "`ai-agent test-from-run THREAD`"
        )
    if case.get("version") != CASE_VERSION:
        raise ConfigError(
            f"{what} has version {case.get('version')!r}; this ai-agent reads version "
            f"{CASE_VERSION}: write it again with `ai-agent test-from-run`"
        )
    missing = [k for k in _REQUIRED if k not in case]
    shapes = {"checkpoints": list, "model_calls": list, "tool_calls": list, "expected": dict}
    wrong = [k for k, kind in shapes.items() if k in case and not isinstance(case[k], kind)]
    if missing or wrong or not case["checkpoints"]:
        problem = ", ".join(
            [*(f"no {k}" for k in missing), *(f"{k} of a wrong type" for k in wrong)]
        )
        raise ConfigError(f"{what} is damaged ({problem or 'no checkpoints'}); write it again")
    return case


async def import_case(database: RunDatabase, case: Mapping[str, Any]) -> str:
    """Write a case into a database as a run of its own; return its new thread id.

    Its checkpoints, its run row and its recorded calls, nothing more: ``Agent.replay`` of the
    returned thread replays the case.

    Raises:
        ConfigError: a part of the case does not have the shape a case's part has.
    """
    thread = new_thread_id()
    try:
        await _put_checkpoints(database, thread, case["checkpoints"])
        await _put_calls(database, thread, case)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ConfigError(
            f"the recorded case of run {case.get('thread_id')!r} is damaged ({exc!r}); write it "
            "again with `ai-agent test-from-run`"
        ) from None
    return thread


async def _put_checkpoints(database: RunDatabase, thread: str, items: Sequence[Any]) -> None:
    from langgraph.types import Interrupt

    async with database.graph() as graph:
        saver = graph.checkpointer
        versions: Mapping[str, Any] = {}
        parent: str | None = None
        for item in items:
            checkpoint, metadata = dict(item["checkpoint"]), dict(item["metadata"])
            changed = {
                k: v for k, v in checkpoint["channel_versions"].items() if versions.get(k) != v
            }
            await saver.aput(checkpoint_config(thread, parent), checkpoint, metadata, changed)
            here = checkpoint_config(thread, checkpoint["id"])
            for pending in item.get("interrupts") or []:
                value = [Interrupt(value=i["value"], id=i["id"]) for i in pending["value"]]
                await saver.aput_writes(here, [(_INTERRUPT, value)], str(pending["task"]))
            versions, parent = checkpoint["channel_versions"], checkpoint["id"]


async def _put_calls(database: RunDatabase, thread: str, case: Mapping[str, Any]) -> None:
    store = database.store
    expected = case["expected"]
    await store.create_run(thread, str(case["task"]), status=str(expected["status"] or "completed"))
    for m in case["model_calls"]:
        await store.record_model_call(
            thread,
            CallPosition(step=m["step"], stage=m["stage"], checkpoint_id=None),
            str(m["request_hash"]),
            m["request"],
            message=m["message"],
            usage=dict(m["usage"]),
            error=m["error"],
            latency_ms=float(m["latency_ms"]),
        )
    for t in case["tool_calls"]:
        iteration, call = int(t["iteration"]), t["call"]
        await store.intent(thread, iteration, call)
        await store.outcome(thread, iteration, call, t["result"])
        await store.record_tool_call(
            thread,
            CallPosition(step=t["step"], stage=t["stage"], checkpoint_id=None),
            call,
            str(t["args_hash"]),
            iteration=iteration,
            duration_ms=float(t["duration_ms"]),
        )
