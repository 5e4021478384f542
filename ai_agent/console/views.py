"""What the console's pages show, read from the run archive: runs, the inbox, one run.

Each function reads through `ai_agent.graph.RunArchive` (the run store's rows and the
checkpoints), never with queries of its own, and returns plain data for the templates. A run
whose checkpoint cannot be read (a crash before the first one, a corrupt row) is still listed,
with what its row says and the reason its state is missing: one bad run never hides the others.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ai_agent.errors import AgentError
from ai_agent.usage import token_usage

if TYPE_CHECKING:
    from ai_agent.checkpoints import PlanRecord, RunRecord
    from ai_agent.graph import RunArchive
    from ai_agent.state import GateReport

__all__ = [
    "InboxItem",
    "RuleRow",
    "RunRow",
    "RunView",
    "inbox_items",
    "rule_rows",
    "run_rows",
    "run_view",
]

STATUSES = ("running", "paused", "completed", "failed", "cancelled", "forked")
"""The statuses the runs page filters by."""


@dataclass(frozen=True)
class RunRow:
    """One line of the runs page."""

    thread_id: str
    status: str
    task: str
    created_at: float
    updated_at: float
    stop_reason: str | None = None
    model: str | None = None
    tokens: int | None = None
    cost: float | None = None
    problem: str | None = None  # why the state could not be read

    @property
    def duration(self) -> float:
        """Seconds from the run's start to its last change."""
        return max(0.0, self.updated_at - self.created_at)


async def run_rows(
    archive: RunArchive, *, status: str | None = None, query: str = "", limit: int = 50
) -> list[RunRow]:
    """The runs, most recently updated first: one status, or those whose task holds ``query``."""
    needle = query.strip().casefold()
    # A search reads every row of the status (the store has no text index); a page reads a page.
    records = await archive.list_runs(limit=None if needle else limit, status=status)
    if needle:
        records = [r for r in records if needle in r["task"].casefold()][:limit]
    return [await _row(archive, record) for record in records]


async def _row(archive: RunArchive, record: RunRecord) -> RunRow:
    base = RunRow(
        record["thread_id"],
        record["status"],
        record["task"],
        record["created_at"],
        record["updated_at"],
    )
    try:
        # The result says why the run stopped as everywhere else (its defaults included); the
        # state holds the model calls' usage. Each is one read of the latest checkpoint.
        result = await archive.get_result(record["thread_id"])
        state: dict[str, Any] = dict(await archive.get_state(record["thread_id"]))
    except AgentError as exc:
        return replace(base, stop_reason=record["error"], problem=str(exc))
    usage = token_usage(state)
    log = state.get("usage_log") or []
    return replace(
        base,
        stop_reason=result.stop_reason,
        model=str(log[-1].get("model") or "") or None if log else None,
        tokens=int(usage["total_tokens"]),
        cost=float(usage["cost"]),
    )


@dataclass(frozen=True)
class InboxItem:
    """A paused run and the decision it waits for."""

    thread_id: str
    task: str
    paused_at: float
    report: GateReport | None
    plans: list[PlanRecord] = field(default_factory=list)
    problem: str | None = None

    @property
    def queued(self) -> PlanRecord | None:
        """The answer queued for this gate and not served yet, if any."""
        return next((p for p in self.plans if p["status"] in ("queued", "claimed")), None)


async def inbox_items(archive: RunArchive, *, limit: int = 100) -> list[InboxItem]:
    """Every paused run, the longest waiting first, with its gate report and queued answers."""
    records = await archive.list_runs(limit=limit, status="paused")
    items = []
    for record in sorted(records, key=lambda r: r["updated_at"]):
        thread = record["thread_id"]
        report, problem = await _report(archive, record)
        plans = await archive.list_plans(thread_id=thread, limit=None)
        items.append(
            InboxItem(thread, record["task"], record["updated_at"], report, plans, problem)
        )
    return items


async def _report(archive: RunArchive, record: RunRecord) -> tuple[GateReport | None, str | None]:
    """The paused gate's report, as the paused checkpoint holds it (the row's copy may lag)."""
    try:
        result = await archive.get_result(record["thread_id"])
    except AgentError as exc:
        return None, str(exc)
    if result.gate is None:
        return None, "the run is paused without a gate report; resume it from the command line"
    return result.gate, None


@dataclass(frozen=True)
class RunView:
    """Everything the run page shows."""

    record: RunRecord | None
    status: str
    task: str
    final_text: str | None
    error: str | None
    stop_reason: str | None
    gate: GateReport | None
    timeline: list[dict[str, Any]]
    tool_calls: list[dict[str, Any]]
    model_calls: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    plans: list[PlanRecord]
    usage: dict[str, Any]


async def run_view(archive: RunArchive, thread_id: str) -> RunView:
    """One run: its outcome, timeline, model and tool calls, conversation and answers.

    Raises:
        UnknownThreadError: no run with this thread id has a checkpoint.
    """
    result = await archive.get_result(thread_id)
    state: dict[str, Any] = dict(await archive.get_state(thread_id))
    trace = await archive.get_execution_trace(thread_id)
    return RunView(
        record=await archive.store.get_run(thread_id),
        status=result.status,
        task=str(state.get("task", "")),
        final_text=result.final_text,
        error=result.error,
        stop_reason=result.stop_reason,
        gate=result.gate,
        timeline=[dict(row) for row in trace["timeline"]],
        tool_calls=[dict(call) for call in trace["tool_calls"]],
        model_calls=[dict(r) for r in state.get("usage_log") or []],
        messages=[dict(m) for m in await archive.get_message_history(thread_id)],
        plans=await archive.list_plans(thread_id=thread_id, limit=None),
        usage=token_usage(state),
    )


@dataclass(frozen=True)
class RuleRow:
    """One always-allow rule as the Rules page lists it."""

    id: int
    tool: str
    allows: str
    source: str
    created_at: float
    revoked_at: float | None
    unusable: bool


async def rule_rows(archive: RunArchive) -> list[RuleRow]:
    """Every rule, newest first, revoked ones too; a row that cannot be used says why."""
    from ai_agent.graph import rule_allows

    rows = []
    for rule in await archive.store.list_rules(revoked=True):
        allows = rule_allows(rule)
        unusable = allows.startswith("NOT USED: ")
        rows.append(
            RuleRow(
                rule["id"],
                rule["tool"],
                allows,
                rule["source"],
                rule["created_at"],
                rule["revoked_at"],
                unusable,
            )
        )
    return rows


def now() -> float:
    """The clock the pages measure ages against."""
    return time.time()
