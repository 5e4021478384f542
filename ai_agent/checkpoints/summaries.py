"""Run summaries: what a list of runs shows about each, written when the run stops or pauses.

A page of runs shows, for each, why it stopped, its model, its tokens and its cost. Those live in
the run's latest checkpoint, and reading one checkpoint per listed run costs a graph read each
(seconds for a page of fifty). So the runner writes them here, in the same transaction as the
run row's new status (``update_run(..., summary=...)``), and a list reads them with the rows in
one query (`run_summaries`).

A summary describes the run row as it was when it was written: it keeps that row's
``updated_at`` (``run_updated_at``). A summary whose run row changed since (the run was resumed
and is running, a fork set its status, an older ai-agent updated it) is stale and not returned:
the reader falls back to the checkpoint for that run, so a list never shows a stopped run's
figures beside a status that moved on. The table (``schema.RUN_SUMMARIES_TABLE``) is additive:
an older ai-agent neither reads nor writes it, and its runs simply have no summary.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, TypedDict

from ai_agent.checkpoints._sql import Session, SqlStore, threaded

__all__ = ["RunSummaries", "RunSummary", "write_summary"]

_CHUNK = 500  # thread ids per query: under SQLite's limit on parameters


class RunSummary(TypedDict):
    """What a list of runs shows about a stopped or paused run, beside its row."""

    stop_reason: str | None
    model: str | None
    tokens: int | None
    cost: float | None


def write_summary(session: Session, thread_id: str, updated_at: float, summary: RunSummary) -> None:
    """Store the summary of the run row just written with ``updated_at`` (same transaction)."""
    session.execute(
        "INSERT INTO agent_run_summaries (thread_id, run_updated_at, stop_reason, model, tokens, "
        "cost) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (thread_id) DO UPDATE SET "
        "run_updated_at = excluded.run_updated_at, stop_reason = excluded.stop_reason, "
        "model = excluded.model, tokens = excluded.tokens, cost = excluded.cost",
        (
            thread_id,
            updated_at,
            summary["stop_reason"],
            summary["model"],
            summary["tokens"],
            summary["cost"],
        ),
    )


class RunSummaries(SqlStore):
    """The run store's summaries (see the module docstring)."""

    @threaded
    def run_summaries(self, thread_ids: Sequence[str]) -> dict[str, RunSummary]:
        """The current summaries of these runs, by thread id, read together.

        A run without one, with a stale one (its row changed since), or with one whose values
        are not of their types (a damaged row) is left out: read its checkpoint instead.
        """
        found: dict[str, RunSummary] = {}
        wanted = list(dict.fromkeys(thread_ids))
        with self._read() as session:
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start : start + _CHUNK]
                marks = ", ".join("?" * len(chunk))
                rows = session.all(
                    "SELECT s.thread_id, s.stop_reason, s.model, s.tokens, s.cost "  # noqa: S608 - fixed text and placeholders
                    "FROM agent_run_summaries AS s JOIN agent_runs AS r "
                    "ON r.thread_id = s.thread_id AND r.updated_at = s.run_updated_at "
                    f"WHERE s.thread_id IN ({marks})",
                    chunk,
                )
                found.update((row[0], summary) for row in rows if (summary := _summary(row)))
        return found


def _summary(row: Sequence[Any]) -> RunSummary | None:
    """A stored summary, or None when a value is not of its type."""
    _, reason, model, tokens, cost = row
    texts_ok = all(v is None or isinstance(v, str) for v in (reason, model))
    tokens_ok = tokens is None or (isinstance(tokens, int) and tokens >= 0)
    cost_ok = cost is None or (isinstance(cost, int | float) and math.isfinite(cost) and cost >= 0)
    if not (texts_ok and tokens_ok and cost_ok):
        return None
    return RunSummary(
        stop_reason=reason,
        model=model,
        tokens=tokens,
        cost=None if cost is None else float(cost),
    )
