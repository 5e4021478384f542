"""A run's family: the parent a child run (a subagent's) was spawned by, and its own children.

Read from the run store's rows (``agent_runs``: ``origin='child'``, the parent's thread, cycle
and call; see ``ai_agent.graph.subagents``), for ``ai-agent runs`` (children indented under
their parent), ``show``, ``history`` and the export.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from ai_agent.checkpoints import RunRecord, RunStoreProtocol

__all__ = ["ChildLink", "RunFamily", "family_of", "run_tree"]


class ChildLink(TypedDict):
    """One end of a parent-child link: the other run, and the parent's step that spawned it."""

    thread_id: str
    status: str
    iteration: int | None
    call_id: str | None


class RunFamily(TypedDict):
    """The run's parent (None unless it is a child run) and its children, oldest first."""

    parent: ChildLink | None
    children: list[ChildLink]


def _link(record: RunRecord, thread_id: str, status: str) -> ChildLink:
    return ChildLink(
        thread_id=thread_id,
        status=status,
        iteration=record["parent_iteration"],
        call_id=record["parent_call_id"],
    )


async def family_of(store: RunStoreProtocol, thread_id: str) -> RunFamily:
    """The parent and the children of a stored run (nothing for a run the store lacks)."""
    record = await store.get_run(thread_id)
    parent = None
    if record is not None and record["origin"] == "child" and record["parent_thread_id"]:
        above = await store.get_run(record["parent_thread_id"])
        status = above["status"] if above is not None else "unknown"
        parent = _link(record, record["parent_thread_id"], status)
    rows = await store.list_runs(limit=None, parent_thread_id=thread_id)
    children = [
        _link(r, r["thread_id"], r["status"])
        # A child whose start is unknown (a damaged row) is listed last.
        for r in sorted(rows, key=lambda r: (r["created_at"] is None, r["created_at"] or 0.0))
        if r["origin"] == "child"
    ]
    return RunFamily(parent=parent, children=children)


def run_tree(runs: Sequence[RunRecord]) -> list[tuple[int, RunRecord]]:
    """The runs with each child right after its parent, and its depth (0: not under another).

    A child whose parent is not among ``runs`` stands at depth 0 where it was; every run is
    listed once, even when stored rows name each other as parents.

    Examples:
        >>> def row(t, parent=None):
        ...     return {"thread_id": t, "origin": "child" if parent else "run",
        ...             "parent_thread_id": parent}
        >>> rows = [row("p.c1.0", "p"), row("q"), row("p"), row("p.c1.0.c1.0", "p.c1.0")]
        >>> [(depth, r["thread_id"]) for depth, r in run_tree(rows)]
        [(0, 'q'), (0, 'p'), (1, 'p.c1.0'), (2, 'p.c1.0.c1.0')]
    """
    listed = {r["thread_id"] for r in runs}
    children: dict[str | None, list[RunRecord]] = {}
    for r in runs:
        up = r["parent_thread_id"] if r["origin"] == "child" else None
        children.setdefault(up if up in listed else None, []).append(r)
    out: list[tuple[int, RunRecord]] = []
    seen: set[str] = set()

    def visit(r: RunRecord, depth: int) -> None:
        seen.add(r["thread_id"])
        out.append((depth, r))
        for child in children.get(r["thread_id"], []):
            if child["thread_id"] not in seen:
                visit(child, depth + 1)

    # The runs under no listed parent first; then any that stored rows make each other's
    # parents (not the engine's doing), so that every run is listed once.
    for r in [*children.get(None, []), *runs]:
        if r["thread_id"] not in seen:
            visit(r, 0)
    return out
