"""What the console's pages show, read from the run archive: runs, the inbox, one run.

Each function reads through `ai_agent.graph.RunArchive` (the run store's rows and the
checkpoints), never with queries of its own, and returns plain data for the templates. The runs
page and the inbox read a whole page at once (the rows, their summaries, the open plans), never
a graph per row (``ai_agent.graph.run_summary``). A run whose checkpoint cannot be read (a crash
before the first one, a corrupt row) is still listed, with what its row says and the reason its
state is missing: one bad run never hides the others.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, cast

from ai_agent.errors import AgentError
from ai_agent.graph.inspection import message_view
from ai_agent.graph.result import UNFINISHED
from ai_agent.graph.run_page import read_run_page
from ai_agent.usage import token_usage

if TYPE_CHECKING:
    from ai_agent.checkpoints import PlanRecord, RunRecord
    from ai_agent.graph import RunArchive
    from ai_agent.graph.run_page import CheckpointMark
    from ai_agent.graph.run_summary import Summaries
    from ai_agent.state import GateReport

__all__ = [
    "InboxItem",
    "RuleRow",
    "RunRow",
    "RunView",
    "gate_report",
    "inbox_items",
    "rule_rows",
    "run_rows",
    "run_view",
]

STATUSES = ("running", "paused", "completed", "failed", "cancelled", "forked")
"""The statuses the runs page filters by."""

ROW_CHARS = {"thread_id": 200, "status": 40, "task": 10_000}
"""The most of a run row's text the runs page and the inbox show (a row edited by hand, or
a task of megabytes, would otherwise make a page of megabytes); the rest is counted."""


def cut(text: str, limit: int) -> str:
    """``text``, or its first ``limit`` characters and how many more there were.

    Examples:
        >>> cut("abc", 5), cut("abcdef", 3)
        ('abc', 'abc… (3 more characters)')
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def _shown_row(record: RunRecord) -> tuple[str, str, str]:
    """A run row's thread id, status and task, each cut to what a page shows (`ROW_CHARS`)."""
    thread, status, task = (
        cut(str(record[k]), ROW_CHARS[k]) for k in ("thread_id", "status", "task")
    )
    return thread, status, task


@dataclass(frozen=True)
class RunRow:
    """One line of the runs page."""

    thread_id: str
    status: str
    task: str
    created_at: float | None  # None: unknown (a damaged row; its stop reason says so)
    updated_at: float | None
    stop_reason: str | None = None
    model: str | None = None
    tokens: int | None = None
    cost: float | None = None
    problem: str | None = None  # why the state could not be read

    @property
    def duration(self) -> float | None:
        """Seconds from the run's start to its last change (None: unknown)."""
        return _run_duration(self.created_at, self.updated_at)


def _run_duration(created_at: float | None, updated_at: float | None) -> float | None:
    """Seconds from a run's start to its last change, or None when either time is unknown."""
    if created_at is None or updated_at is None:
        return None
    return max(0.0, updated_at - created_at)


async def run_rows(
    archive: RunArchive, *, status: str | None = None, query: str = "", limit: int = 50
) -> list[RunRow]:
    """The runs, most recently updated first: one status, or those whose task holds ``query``.

    The rows and their summaries are read together (`RunArchive.run_summaries`): no graph per
    row. The status is the row's, so a run that is running shows as running.
    """
    needle = query.strip().casefold()
    # A search reads every row of the status (the store has no text index); a page reads a page.
    records = await archive.list_runs(limit=None if needle else limit, status=status)
    if needle:
        records = [r for r in records if needle in r["task"].casefold()][:limit]
    summaries = await archive.run_summaries(records)
    return [_row(record, summaries) for record in records]


def _row(record: RunRecord, summaries: Summaries) -> RunRow:
    base = RunRow(*_shown_row(record), record["created_at"], record["updated_at"])
    summary = summaries.found.get(record["thread_id"])
    if summary is None:
        problem = summaries.problems.get(record["thread_id"], "its summary could not be read")
        return replace(base, stop_reason=record["error"], problem=problem)
    return replace(
        base,
        stop_reason=summary["stop_reason"],
        model=summary["model"],
        tokens=summary["tokens"],
        cost=summary["cost"],
    )


@dataclass(frozen=True)
class InboxItem:
    """A paused run and the decision it waits for."""

    thread_id: str
    task: str
    paused_at: float | None  # None: unknown (a damaged row)
    report: GateReport | None
    plans: list[PlanRecord] = field(default_factory=list)  # its open (queued, claimed) ones
    problem: str | None = None

    @property
    def queued(self) -> PlanRecord | None:
        """The answer queued for this gate and not served yet, if any."""
        return next((p for p in self.plans if p["status"] in ("queued", "claimed")), None)


async def inbox_items(archive: RunArchive, *, limit: int = 100) -> list[InboxItem]:
    """Every paused run, the longest waiting first, with its gate report and open answers.

    The report is the run row's copy, written with the paused status in one transaction; the
    open (queued or claimed) plans of every run are read in two queries. Only a run whose row
    holds no readable report is read from its checkpoint.
    """
    records = await archive.list_runs(limit=limit, status="paused")
    open_plans: dict[str, list[PlanRecord]] = {}
    for state in ("queued", "claimed"):
        for plan in await archive.list_plans(status=state, limit=None):
            open_plans.setdefault(plan["thread_id"], []).append(plan)
    items = []
    for record in sorted(records, key=_waiting):
        thread = record["thread_id"]
        report, problem = gate_report(record["gate"]), None
        if report is None:
            report, problem = await _report(archive, record)
        plans = open_plans.get(thread, [])
        shown, _, task = _shown_row(record)
        items.append(InboxItem(shown, task, record["updated_at"], report, plans, problem))
    return items


def _waiting(record: RunRecord) -> tuple[bool, float]:
    """The inbox's order: the longest waiting first, and runs paused at an unknown time last."""
    paused = record["updated_at"]
    return (paused is None, paused or 0.0)


def gate_report(value: Any) -> GateReport | None:
    """A gate report read from a run row, or None when it does not have a report's shape."""
    if not isinstance(value, dict):
        return None
    numbers = all(_number(value.get(k)) for k in ("severity", "threshold", "iteration"))
    issues, pending = value.get("issues"), value.get("pending")
    if not numbers or not isinstance(issues, list) or not isinstance(pending, list):
        return None
    # Each issue's severity too is a number: the inbox prints it as one ("%.2f"), and a row
    # edited by hand ("high") would otherwise fail the whole inbox, not just this run.
    issues_ok = all(
        isinstance(i, dict)
        and {"code", "severity", "message"} <= i.keys()
        and _number(i["severity"])
        for i in issues
    )
    pending_ok = all(
        isinstance(p, dict)
        and isinstance(p.get("call"), dict)
        and {"id", "name", "args"} <= p["call"].keys()
        and {"blocked", "preview"} <= p.keys()
        for p in pending
    )
    return cast("GateReport", value) if issues_ok and pending_ok else None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


async def _report(archive: RunArchive, record: RunRecord) -> tuple[GateReport | None, str | None]:
    """The paused gate's report, as the paused checkpoint holds it (when the row has none)."""
    try:
        result = await archive.get_result(record["thread_id"])
    except AgentError as exc:
        return None, str(exc)
    if result.gate is None:
        return None, "the run is paused without a gate report; resume it from the command line"
    return result.gate, None


WINDOW = 5
"""Cycles the run page shows in detail at a time (the latest first; older ones page by page)."""
CONVERSATION = 40
"""The latest messages the run page shows (the whole conversation is a link away)."""


@dataclass(frozen=True)
class RunView:
    """Everything the run page shows: the run, and a window of its cycles in detail."""

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
    checkpoints: list[CheckpointMark] = field(default_factory=list)
    cycles: int = 0  # the run's last cycle
    first: int = 0  # the window shown: cycles first..last
    last: int = 0
    window: int = WINDOW
    messages_total: int = 0

    @property
    def duration(self) -> float | None:
        """Seconds from the run's start to its last change (None: unknown, or no run row)."""
        if self.record is None:
            return None
        return _run_duration(self.record["created_at"], self.record["updated_at"])


async def run_view(
    archive: RunArchive,
    thread_id: str,
    *,
    last: int | None = None,
    window: int = WINDOW,
    conversation: int | None = CONVERSATION,
) -> RunView:
    """One run: its outcome, answers, the last messages, and cycles up to ``last`` in detail.

    ``conversation``: how many of the latest messages to show (None: all of them).

    One read of the latest checkpoint and of the window's checkpoints
    (``ai_agent.graph.run_page``), never the run's whole history.

    Raises:
        UnknownThreadError: no run with this thread id has a checkpoint.
    """
    output = None if archive.runner is None else archive.policy.output
    page = await read_run_page(archive.database, thread_id, output=output, window=window, last=last)
    result, state = page.result, page.state
    messages = state.get("messages", [])
    # A run between two checkpoints reads as one that stopped before finishing; it is one only
    # when nobody holds its lease (a crash). While a process works on it, it is running.
    unfinished = (result.status, result.error) == ("failed", UNFINISHED)
    running = unfinished and await archive.store.working(thread_id)
    return RunView(
        record=page.record,
        status="running" if running else result.status,
        task=str(state.get("task", "")),
        final_text=result.final_text,
        error=None if running else result.error,
        stop_reason=result.stop_reason,
        gate=result.gate,
        timeline=[dict(row) for row in page.timeline],
        tool_calls=[dict(call) for call in page.tool_calls],
        model_calls=[dict(r) for r in page.model_calls],
        messages=[dict(m) for m in message_view(messages, None, last=conversation)],
        messages_total=len(messages),
        plans=await archive.list_plans(thread_id=thread_id, limit=None),
        usage=token_usage(state),
        checkpoints=page.checkpoints,
        cycles=page.cycles,
        first=page.first,
        last=page.last,
        window=window,
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
