"""A run's state at a checkpoint, worked out from the stored checkpoint without LangGraph's runtime.

Showing a run (``ai-agent show``, ``history``, ``export``) needs what LangGraph's
``aget_state`` / ``aget_state_history`` give: the values, the stage(s) that run next, and the
interrupts of a paused gate. LangGraph works them out by compiling the graph, which imports its
runtime and LangChain (a second, where the command has a quarter of one). For the engine's own
pipeline they follow from the checkpoint alone, by LangGraph's own rules:

- the values are the checkpoint's channels that are keys of `RunState`, in its order (the
  graph's channels are those keys; the others are LangGraph's edges, ``branch:to:STAGE``, and
  the input, ``__start__``); a list with a reducer that holds nothing yet is ``[]`` (a
  ``BinaryOperatorAggregate`` starts as its type's empty value);
- a stage runs next when its edge channel holds a value with a newer version than the stage
  has seen (``_triggers`` in ``langgraph.pregel._algo``);
- its interrupts are those its task wrote (``__interrupt__``) against the checkpoint.

For the latest checkpoint LangGraph shows the run as it stands (``live``): the writes of a
task that finished after the checkpoint count as done. A checkpoint is worked out here only
when that changes nothing: `snapshot_of` raises `NotPlain` for anything else (a finished or
failed task's writes on the latest checkpoint, writes of no task other than a resume's answer,
more than one stage to run, LangGraph's ``Send`` tasks, a join edge, an older checkpoint layout),
and the caller asks LangGraph. ``tests/graph/test_stored_state.py`` holds both to the same
answer on runs that finish, pause, fork, spawn subagents and return typed output.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, get_args, get_origin, get_type_hints

from ai_agent.checkpoints.reader import NotPlain, StoredInterrupt, StoredTuple
from ai_agent.state import RunState

__all__ = ["StoredSnapshot", "StoredTask", "snapshot_of"]


def _channels() -> dict[str, Callable[[], Any] | None]:
    """The state's keys in order, each with its empty value when it has a reducer."""
    channels: dict[str, Callable[[], Any] | None] = {}
    for key, hint in get_type_hints(RunState, include_extras=True).items():
        reduced = get_origin(hint) is Annotated and len(get_args(hint)) > 1
        base = get_args(hint)[0] if reduced else None
        channels[key] = (get_origin(base) or base) if reduced else None
    return channels


_CHANNELS = _channels()
_STATE_KEYS = frozenset(_CHANNELS)
_START = "__start__"
_EDGE = "branch:to:"
_INTERRUPT = "__interrupt__"
_RESUME = "__resume__"  # the answer of ``Command(resume=...)``: no channel of the graph
_NULL_TASK = "00000000-0000-0000-0000-000000000000"  # LangGraph's NULL_TASK_ID


@dataclass(frozen=True, slots=True)
class StoredTask:
    """A stage that runs next from a checkpoint, and what it asked when it paused."""

    name: str
    interrupts: tuple[StoredInterrupt, ...] = ()


@dataclass(frozen=True, slots=True)
class StoredSnapshot:
    """The fields of LangGraph's ``StateSnapshot`` that the run views read."""

    values: dict[str, Any]
    next: tuple[str, ...]
    config: Mapping[str, Any]
    metadata: Mapping[str, Any] | None
    created_at: str | None
    parent_config: Mapping[str, Any] | None
    tasks: tuple[StoredTask, ...]
    interrupts: tuple[StoredInterrupt, ...]


def snapshot_of(stored: StoredTuple, *, live: bool) -> StoredSnapshot:
    """The snapshot LangGraph gives of ``stored`` (``live``: as the thread's latest).

    Raises:
        NotPlain: the checkpoint needs LangGraph's own rules (see the module docstring).
    """
    checkpoint: Mapping[str, Any] = stored.checkpoint
    values: Mapping[str, Any] = checkpoint["channel_values"]
    if checkpoint.get("v", 0) < 4 or any(_foreign(channel) for channel in values):
        raise NotPlain("a checkpoint with channels the engine's pipeline does not have")
    tasks = _tasks(checkpoint, stored.pending_writes or [], live=live)
    return StoredSnapshot(
        values=_values(values),
        next=tuple(task.name for task in tasks),
        config=stored.config,
        metadata=stored.metadata,
        created_at=checkpoint.get("ts"),
        parent_config=stored.parent_config,
        tasks=tasks,
        interrupts=tuple(i for task in tasks for i in task.interrupts),
    )


def _values(stored: Mapping[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key, empty in _CHANNELS.items():
        if key in stored:
            values[key] = stored[key]
        elif empty is not None:
            values[key] = empty()
    return values


def _foreign(channel: str) -> bool:
    return not (channel in _STATE_KEYS or channel == _START or channel.startswith(_EDGE))


def _triggered(checkpoint: Mapping[str, Any]) -> list[str]:
    """The nodes whose trigger channel holds a value newer than they have seen."""
    versions: Mapping[str, Any] = checkpoint["channel_versions"]
    seen_by: Mapping[str, Mapping[str, Any]] = checkpoint["versions_seen"]
    null = type(next(iter(versions.values())))() if versions else None
    nodes = []
    for channel in checkpoint["channel_values"]:
        if channel == _START:
            node = _START
        elif channel.startswith(_EDGE):
            node = channel[len(_EDGE) :]
        else:
            continue
        seen = seen_by.get(node)
        if seen is None or versions.get(channel, null) > seen.get(channel, null):
            nodes.append(node)
    return nodes


def _tasks(
    checkpoint: Mapping[str, Any], writes: list[tuple[str, str, Any]], *, live: bool
) -> tuple[StoredTask, ...]:
    nodes = _triggered(checkpoint)
    by_task: dict[str, list[tuple[str, Any]]] = {}
    for task_id, channel, value in writes:
        by_task.setdefault(task_id, []).append((channel, value))
    if all(channel == _RESUME for channel, _ in by_task.get(_NULL_TASK, [])):
        by_task.pop(_NULL_TASK, None)  # writes to no channel: LangGraph's values stay as stored
    if len(nodes) > 1 or _NULL_TASK in by_task or len(by_task) > (1 if nodes else 0):
        raise NotPlain("writes that LangGraph matches to tasks by their ids")
    if not nodes:
        return ()
    written = next(iter(by_task.values()), [])
    if live and any(channel != _INTERRUPT for channel, _ in written):
        # A task that finished (or failed, or was answered) after the latest checkpoint.
        raise NotPlain("the latest checkpoint's task has writes of its own")
    interrupts: list[StoredInterrupt] = []
    for channel, value in written:
        if channel == _INTERRUPT:
            items = value if isinstance(value, list | tuple) else [value]
            if not all(isinstance(item, StoredInterrupt) for item in items):
                raise NotPlain("an interrupt that is not LangGraph's")
            interrupts.extend(items)
    return (StoredTask(nodes[0], tuple(interrupts)),)
