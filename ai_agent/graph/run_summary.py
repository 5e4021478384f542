"""What a list of runs shows about each run, read for a whole page at once.

A page of runs (the console's runs page, its inbox) shows for each run why it stopped, its model,
its tokens and its cost. The runner stores those with the run row when the run stops or pauses
(`summary_of`, ``update_run(..., summary=...)``), so `read_summaries` reads them for the whole
page in one query. A run without a current summary (it is running, a fork or an older ai-agent
wrote its row, the summary was damaged) is read from its latest checkpoint, all such runs in one
graph session: a page never opens a graph per row, and one unreadable run is reported, not
raised, so it never hides the others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ai_agent.checkpoints import RunSummary
from ai_agent.errors import AgentError, UnknownThreadError
from ai_agent.graph.database import config_for
from ai_agent.graph.plain_reads import checked
from ai_agent.graph.result import RunResult, result_of, with_run_row
from ai_agent.usage import token_usage

if TYPE_CHECKING:
    from ai_agent.checkpoints import RunRecord
    from ai_agent.graph.database import RunDatabase

__all__ = ["Summaries", "read_summaries", "summary_of"]


def summary_of(result: RunResult, state: Mapping[str, Any]) -> RunSummary:
    """The summary of a run whose result (as stored in its row) and latest state these are."""
    usage = token_usage(state)
    log = state.get("usage_log") or []
    model = log[-1].get("model") if log and isinstance(log[-1], Mapping) else None
    return RunSummary(
        stop_reason=result.stop_reason,
        model=str(model) if model else None,
        tokens=int(usage["total_tokens"]),
        cost=float(usage["cost"]),
    )


@dataclass(frozen=True)
class Summaries:
    """The summaries of a page of runs, and why a run's could not be read."""

    found: dict[str, RunSummary] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)
    from_checkpoints: int = 0  # how many were read from a checkpoint (the rest: one query)


async def read_summaries(database: RunDatabase, records: Sequence[RunRecord]) -> Summaries:
    """The summaries of these runs: stored ones in one query, the rest in one graph session."""
    threads = [r["thread_id"] for r in records]
    found = dict(await database.store.run_summaries(threads)) if threads else {}
    missing = [r for r in records if r["thread_id"] not in found]
    problems: dict[str, str] = {}
    if missing:
        async with database.graph(reading=True) as graph:
            for record in missing:
                thread = record["thread_id"]
                try:
                    snapshot = checked(await graph.aget_state(config_for(thread)))
                    if not snapshot.values:
                        raise UnknownThreadError(f"no run with thread id {thread}")
                    result = with_run_row(result_of(thread, snapshot, None), record)
                    found[thread] = summary_of(result, snapshot.values)
                except AgentError as exc:
                    problems[thread] = str(exc)
    return Summaries(found, problems, len(missing))
