"""Pictures of the pipeline and of a run: Mermaid text, and one self-contained HTML page.

``mermaid()`` draws the nine-stage graph (LangGraph's ``draw_mermaid``), optionally marking the
stages a run went through and how often. `run_report` (``Agent.run_report``) gathers everything
about a run that the page shows (timeline, path, tool calls with inputs and outputs, gate
decisions and plans, the conversation, the checkpoints) and `write_page`
(``Agent.export_html``) writes the page.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ai_agent._loopless import off_loop
from ai_agent.graph.channels import own_fields
from ai_agent.graph.chart import PIPELINE_MERMAID
from ai_agent.graph.family import family_of
from ai_agent.graph.html_report import render_html
from ai_agent.graph.interrupts import waiting_node
from ai_agent.state import RunState

if TYPE_CHECKING:
    from langgraph.types import StateSnapshot

    from ai_agent.checkpoints import RunStoreProtocol
    from ai_agent.graph.database import RunDatabase
    from ai_agent.graph.history import HistoryEntry
    from ai_agent.graph.inspection import AgentStateView
    from ai_agent.graph.stored_state import StoredSnapshot
    from ai_agent.graph.timeline import ExecutionTrace
    from ai_agent.graph.usage_report import TokenUsage, UsagePoint

__all__ = ["RunReader", "mermaid", "run_report", "write_page"]


class RunReader(Protocol):
    """What a run's page is read through: the run archive (`ai_agent.graph.archive`)."""

    database: RunDatabase

    @property
    def store(self) -> RunStoreProtocol:
        """The run store."""

    async def get_execution_trace(self, thread_id: str) -> ExecutionTrace:
        """The timeline and every tool call."""

    async def ahistory(self, thread_id: str) -> list[HistoryEntry]:
        """The run's checkpoints, oldest first."""

    async def get_agent_state(self, thread_id: str) -> AgentStateView:
        """Where the run stands."""

    async def get_system_prompt(self, thread_id: str) -> str:
        """The system prompt the run was sent."""

    async def get_token_usage(self, thread_id: str) -> TokenUsage:
        """The run's token totals and cost."""

    async def get_usage_history(self, thread_id: str) -> list[UsagePoint]:
        """Token usage per model request."""


def mermaid(visits: dict[str, int] | None = None) -> str:
    """The pipeline as a Mermaid flowchart.

    With ``visits``, the stages a run went through are marked and labelled with how often they
    ran.

    Examples:
        >>> text = mermaid({"draft": 2})
        >>> 'draft("draft x2"):::visited' in text and "classDef visited" in text
        True
    """
    text = PIPELINE_MERMAID
    if not visits:
        return text
    for stage, count in visits.items():
        text = re.sub(
            rf"^(\s*){re.escape(stage)}\({re.escape(stage)}\)$",
            rf'\g<1>{stage}("{stage} x{count}"):::visited',
            text,
            flags=re.MULTILINE,
        )
    return text.rstrip("\n") + "\n\tclassDef visited fill:#cfe8d6,stroke:#2b8a3e\n"


async def run_report(
    archive: RunReader, thread_id: str, state: RunState, snapshot: StateSnapshot | StoredSnapshot
) -> dict[str, Any]:
    """Everything the HTML page shows about a stored run, as JSON-ready data.

    ``state`` and ``snapshot`` are the run's latest; the rest is read through the archive.
    """
    record = await archive.store.get_run(thread_id)
    trace = await archive.get_execution_trace(thread_id)
    timeline = trace["timeline"]
    path = [row["stage"] for row in timeline]
    history = [entry.to_dict() for entry in await archive.ahistory(thread_id)]
    visits = dict(Counter(path))
    unread = await archive.database.unread_channels(thread_id)
    waiting = waiting_node(snapshot)
    return {
        "thread_id": thread_id,
        "task": state.get("task", ""),
        "status": (await archive.get_agent_state(thread_id))["status"],
        "origin": record["origin"] if record else "run",
        "parent_thread_id": record["parent_thread_id"] if record else None,
        # A child run's parent step, and the runs this one spawned (subagents).
        "family": await family_of(archive.store, thread_id),
        "created_at": record["created_at"] if record else None,
        # A pipeline of the user's: its own state fields (read with it), or what is not read.
        "fields": own_fields(state),
        "unread": unread.to_dict() if unread else None,
        "final_text": state.get("final_text"),
        "output": state.get("output"),  # a typed run's answer, as the JSON data it keeps
        "citations": list(state.get("citations") or []),
        "error": record["error"] if record else None,
        "system_prompt": await archive.get_system_prompt(thread_id),
        "iterations": state.get("iteration", 0),
        "usage": await archive.get_token_usage(thread_id),
        "timeline": timeline,
        "path": path,
        "visits": visits,
        "tool_calls": trace["tool_calls"],
        "gates": [row for row in timeline if row["stage"] == "gate"],
        # What the run waits for: the gate's report, or what a node of the pipeline asked.
        "pending_gate": None
        if waiting is not None or not snapshot.interrupts
        else snapshot.interrupts[0].value,
        "waiting_node": None
        if waiting is None
        else {"node": waiting.node, "value": waiting.value, "prompt": waiting.prompt},
        "plans": list(state.get("plans", [])),
        "messages": list(state.get("messages", [])),
        "model_calls": await archive.get_usage_history(thread_id),
        "history": history,
        "mermaid": mermaid(visits),
    }


async def write_page(target: Path, report: dict[str, Any]) -> Path:
    """Write the page of a run's report to ``target`` (off the event loop)."""
    return await off_loop(_write, target, render_html(report))


def _write(target: Path, text: str) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target
