"""Browsing and forking a run's checkpoints: ``history``, ``fork`` (and their async forms).

History reads checkpoints through LangGraph's ``aget_state_history`` and forking copies them with
the ``BaseCheckpointSaver`` API only (``alist``, ``aput``, ``aput_writes``), so both work with
any checkpointer, the SQLite one and the delta one alike. LangGraph's own ``copy_thread`` is not
implemented by the SQLite saver, and would copy more than a fork wants (see `copy_run`).

The archive (`ai_agent.graph.archive.RunArchive`) reads and forks through these functions; its
``history()`` and ``fork()`` are the blocking forms the design documents. ``history()`` may be
called anywhere, even on a thread whose event loop is running (a notebook): it reads through a
private connection on a worker thread, which SQLite's WAL mode lets read while others write.
``fork()`` writes, and a blocked event loop may hold the write lock its own connection is about
to release, so in async code it refuses and points to ``await afork(...)``.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ai_agent.checkpoints.versions import check_state_version, stamped, upgrade_state
from ai_agent.errors import RunError, UnknownCheckpointError, UnknownThreadError
from ai_agent.graph.database import RunDatabase, checkpoint_config, config_for, new_thread_id
from ai_agent.graph.state_edits import check_update
from ai_agent.graph.state_shape import check_values
from ai_agent.graph.summary import change_summary
from ai_agent.state import RunState, TraceEvent

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
    from langgraph.types import StateSnapshot

    from ai_agent.graph.stored_state import StoredSnapshot

    Snapshot = StateSnapshot | StoredSnapshot

    from ai_agent.checkpoints import RunOrigin

__all__ = [
    "HistoryEntry",
    "copy_run",
    "entries_of",
    "fork_run",
    "history_of",
    "run_blocking",
    "values_of",
]

T = TypeVar("T")
_INTERRUPT = "__interrupt__"  # LangGraph's channel for a pending interrupt
# The lines of a gate prompt that name its run (`ai_agent.nodes.gate`), as their heads.
_PROMPT_HEADS = ("Run {} paused ", "Resume with: ai-agent resume {} ")


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One checkpoint of a run, as ``Agent.history`` lists it.

    Attributes:
        checkpoint_id: Its id (pass it to ``fork``, ``replay`` or ``show --checkpoint``).
        parent_id: The checkpoint before it (None for the first).
        step: LangGraph's step number (-1: the input, 0: the start, then one per stage).
        stage: The stage that wrote it (``input``, ``start``, a stage name, or ``update`` for a
            state update applied by a fork).
        time: When it was written (ISO 8601, UTC).
        summary: One line saying what changed since the previous checkpoint.
        next: The stage(s) that run next from it (empty: the run ended here).
        iteration: The cycle the run was in.
        paused: The run waited at the gate for a plan at this point.
        trace: The trace lines the stage added.
    """

    checkpoint_id: str
    parent_id: str | None
    step: int
    stage: str
    time: str
    summary: str
    next: tuple[str, ...]
    iteration: int
    paused: bool
    trace: tuple[TraceEvent, ...]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def run_blocking(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion from synchronous code.

    It runs on a worker thread if this thread already runs an event loop.

    Examples:
        >>> async def answer() -> int:
        ...     return 42
        >>> run_blocking(answer)
        42
    """
    import asyncio  # not with the module: the command line's reads run no event loop
    from concurrent.futures import ThreadPoolExecutor

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()


def _id(config: Mapping[str, Any] | None) -> str | None:
    if not config:
        return None
    return cast(str | None, config["configurable"].get("checkpoint_id"))


def values_of(snapshot: Snapshot) -> RunState:
    """A snapshot's state, brought to the current state version."""
    version = check_state_version(snapshot.metadata, f"checkpoint {_id(snapshot.config)}")
    return cast(RunState, upgrade_state(snapshot.values or {}, version))


def _stage(snapshot: Snapshot, parent: Snapshot | None) -> str:
    source = (snapshot.metadata or {}).get("source")
    if source == "input" or parent is None:
        return "input" if source == "input" else "pruned"
    if source == "update":
        return "update"
    stages = [s for s in parent.next if s != "__start__"]
    return ", ".join(stages) if stages else "start"


def _entries(snapshots: list[Snapshot]) -> list[HistoryEntry]:
    entries: list[HistoryEntry] = []
    previous: Snapshot | None = None
    before: RunState = RunState()
    for snapshot in snapshots:
        values = values_of(snapshot)
        trace = values.get("trace", [])
        added = trace[len(before.get("trace", [])) :]
        paused = bool(snapshot.interrupts)
        summary = change_summary(before, values, paused=paused)
        if previous is None and (snapshot.metadata or {}).get("source") != "input":
            # The first checkpoint left after a prune: what came before it is not known.
            added, summary = [], "earlier checkpoints were pruned" + ("; paused" if paused else "")
        entries.append(
            HistoryEntry(
                checkpoint_id=str(_id(snapshot.config)),
                parent_id=_id(snapshot.parent_config),
                step=int((snapshot.metadata or {}).get("step", -1)),
                stage=_stage(snapshot, previous),
                time=snapshot.created_at or "",
                summary=summary,
                next=tuple(snapshot.next),
                iteration=int(values.get("iteration", 0)),
                paused=paused,
                trace=tuple(added),
            )
        )
        previous, before = snapshot, values
    return entries


async def history_of(graph: Any, thread_id: str) -> list[HistoryEntry]:
    """The checkpoints of a thread, oldest first (through a compiled graph's checkpointer).

    Raises:
        CorruptRunError: a checkpoint's values are not of `RunState`'s shape.
    """
    return entries_of([s async for s in graph.aget_state_history(config_for(thread_id))], thread_id)


def entries_of(snapshots: Sequence[Snapshot], thread_id: str) -> list[HistoryEntry]:
    """The entries of a thread's snapshots (newest first, as LangGraph lists them), oldest first.

    Raises:
        UnknownThreadError: there are none.
        CorruptRunError: a checkpoint's values are not of `RunState`'s shape.
    """
    if not snapshots:
        raise UnknownThreadError(
            f"no checkpoints for thread {thread_id}; `ai-agent runs` lists the runs"
        )
    # Values of the wrong shape (a database edited by hand) name the checkpoint that has them.
    # The latest is checked whole, the others but for their lists' items, which are checked
    # only if reading them fails: checking every item of every checkpoint of a long run made
    # its history six times slower (800 cycles: 14 s against 2.3).
    for n, snapshot in enumerate(snapshots):
        values = snapshot.values
        if n:
            values = {k: v for k, v in values.items() if not isinstance(v, list)}
        check_values(values, snapshot.config, snapshot.parent_config, snapshot.metadata)
    try:
        return _entries(list(reversed(snapshots)))
    except (TypeError, AttributeError, KeyError, ValueError, IndexError):
        for snapshot in snapshots:
            config, parent = snapshot.config, snapshot.parent_config
            check_values(snapshot.values, config, parent, snapshot.metadata)
        raise


def _chain(tuples: list[CheckpointTuple], checkpoint_id: str) -> list[CheckpointTuple]:
    by_id = {t.checkpoint["id"]: t for t in tuples}
    current = by_id.get(checkpoint_id)
    chain: list[CheckpointTuple] = []
    while current is not None:
        chain.append(current)
        parent = _id(current.parent_config)
        current = by_id.get(parent) if parent else None
    chain.reverse()
    return chain


async def copy_run(
    saver: BaseCheckpointSaver[Any], source: str, target: str, checkpoint_id: str
) -> CheckpointTuple:
    """Copy a run's checkpoints from its first up to ``checkpoint_id`` into a new thread.

    Each checkpoint keeps its id, step and metadata, and is written with the channel versions
    that changed since its parent (what LangGraph itself passes to ``aput``, so a delta
    checkpointer stores a delta). Of the pending writes only interrupts are copied: a fork at a
    paused gate is paused too, but the answer the original got there, and the results of the
    stage that ran after the checkpoint, stay behind, so the fork runs its own way from here.

    Raises:
        UnknownThreadError: the source thread has no checkpoints.
        UnknownCheckpointError: it has none with this id.
    """
    # Only the checkpoint and those before it are read: a later one may be unreadable (the
    # reason to fork from an earlier one), and it is not needed.
    tuples = [t async for t in saver.alist(checkpoint_config(source, checkpoint_id))]
    if tuples:
        before = checkpoint_config(source, checkpoint_id)
        tuples += [t async for t in saver.alist(checkpoint_config(source), before=before)]
    elif not [t async for t in saver.alist(checkpoint_config(source), limit=1)]:
        raise UnknownThreadError(f"no checkpoints for thread {source}")
    chain = _chain(tuples, checkpoint_id)
    if not chain:
        raise UnknownCheckpointError(
            f"thread {source} has no checkpoint {checkpoint_id}; "
            f"`ai-agent history {source}` lists them"
        )
    versions: Mapping[str, Any] = {}
    parent: str | None = None
    for item in chain:
        checkpoint = item.checkpoint
        changed = {k: v for k, v in checkpoint["channel_versions"].items() if versions.get(k) != v}
        await saver.aput(checkpoint_config(target, parent), checkpoint, item.metadata, changed)
        here = checkpoint_config(target, checkpoint["id"])
        for task_id, channel, value in item.pending_writes or []:
            if channel == _INTERRUPT:
                await saver.aput_writes(
                    here, [(channel, _retarget(value, source, target))], task_id
                )
        versions, parent = checkpoint["channel_versions"], checkpoint["id"]
    return chain[-1]


def _retarget(value: Any, source: str, target: str) -> Any:
    """A paused gate's interrupts, with the prompt's "resume THREAD" naming the fork."""
    from langgraph.types import Interrupt  # LangGraph's runtime: read checkpoints bring it

    if not isinstance(value, list):
        return value
    out = []
    for item in value:
        report = getattr(item, "value", None)
        if isinstance(item, Interrupt) and isinstance(report, dict) and "prompt" in report:
            prompt = _prompt_naming(str(report["prompt"]), source, target)
            out.append(Interrupt(value={**report, "prompt": prompt}, id=item.id))
        else:
            out.append(item)
    return out


def _prompt_naming(prompt: str, source: str, target: str) -> str:
    """A gate prompt whose own lines name the fork instead of the source.

    Those are its first ("Run THREAD paused ...") and its last ("Resume with: ai-agent resume
    THREAD ..."), and only those: the rest quotes the calls waiting and the issues (``rm -rf
    build/`` in a run named ``build``), and what a person approves must read as what runs. A
    quoted text's later lines are indented under it (`ai_agent.nodes.gate`), so none starts as
    these do.
    """
    heads = [(h.format(source), h.format(target)) for h in _PROMPT_HEADS]
    lines = prompt.split("\n")
    for n, line in enumerate(lines):
        for old, new in heads:
            if line.startswith(old):
                lines[n] = new + line[len(old) :]
    return "\n".join(lines)


def _fork_status(snapshot: StateSnapshot) -> tuple[str, dict[str, Any] | None]:
    if snapshot.interrupts:
        return "paused", dict(snapshot.interrupts[0].value)
    if snapshot.next:
        return "forked", None
    values = snapshot.values or {}
    return str(values.get("status") or "completed"), None


async def fork_run(
    database: RunDatabase,
    thread_id: str,
    checkpoint_id: str,
    update: Mapping[str, Any] | None,
    *,
    origin: RunOrigin,
) -> str:
    """Copy a run up to a checkpoint into a new thread, with its run row; return the new id.

    The arguments and the errors are those of ``Agent.afork``; ``origin`` says what made the
    copy (``fork`` or ``replay``).
    """
    if update:
        check_update(update)  # a wrong value is refused here, before anything is copied
    new = new_thread_id()
    async with database.graph() as graph:
        head = await copy_run(graph.checkpointer, thread_id, new, checkpoint_id)
        check_state_version(head.metadata, f"checkpoint {checkpoint_id} of {thread_id}")
        if update:
            await _apply_update(graph, new, head, update)
        snapshot = await graph.aget_state(config_for(new))
    status, gate = _fork_status(snapshot)
    store = database.store
    record = await store.get_run(thread_id)
    task = record["task"] if record else str((snapshot.values or {}).get("task", ""))
    await store.create_run(
        new,
        task,
        parent_thread_id=thread_id,
        origin=origin,
        fork_checkpoint_id=checkpoint_id,
        status=status,
    )
    if gate is not None:
        await store.update_run(new, status=status, gate=gate)
    return new


async def _apply_update(
    graph: Any, thread_id: str, head: CheckpointTuple, update: Mapping[str, Any]
) -> None:
    if any(channel == _INTERRUPT for _, channel, _ in head.pending_writes or []):
        raise RunError(
            "the run is paused at the gate at this checkpoint; fork it without an update and "
            "resume the fork with a plan"
        )
    parent = _id(head.parent_config)
    if parent is None:
        raise RunError("cannot update the run's input; fork at a later checkpoint")
    before = await graph.aget_state(config_for(thread_id, checkpoint_id=parent))
    stages = [s for s in before.next if s != "__start__"]
    as_node = stages[0] if stages else "__start__"
    try:
        await graph.aupdate_state(stamped(config_for(thread_id)), dict(update), as_node=as_node)
    except (ValueError, TypeError, KeyError) as exc:
        raise RunError(f"cannot apply the update to the fork: {exc}") from None
