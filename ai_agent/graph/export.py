"""Pictures of the pipeline and of a run: Mermaid text, and one self-contained HTML page.

``mermaid()`` draws the nine-stage graph (LangGraph's ``draw_mermaid``), optionally marking the
stages a run went through and how often. ``Agent.run_report`` gathers everything about a run that
the page shows (timeline, path, tool calls with inputs and outputs, gate decisions and plans, the
conversation, the checkpoints) and ``Agent.export_html`` writes the page.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from pathlib import Path
from typing import Any

from ai_agent.graph.build import build_graph
from ai_agent.graph.html_report import render_html
from ai_agent.graph.inspection import InspectionMixin

__all__ = ["ExportMixin", "mermaid"]


def mermaid(visits: dict[str, int] | None = None) -> str:
    """The pipeline as a Mermaid flowchart.

    With ``visits``, the stages a run went through are marked and labelled with how often they
    ran.

    Examples:
        >>> text = mermaid({"draft": 2})
        >>> 'draft("draft x2"):::visited' in text and "classDef visited" in text
        True
    """
    text: str = build_graph().get_graph().draw_mermaid()
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


class ExportMixin(InspectionMixin):
    """``run_report`` and ``export_html`` (see the module docstring)."""

    async def run_report(self, thread_id: str | None = None) -> dict[str, Any]:
        """Everything the HTML page shows about a run, as JSON-ready data."""
        thread, state, snapshot = await self._state(thread_id)
        record = await self.store.get_run(thread)
        trace = await self.get_execution_trace(thread)
        timeline = trace["timeline"]
        path = [row["stage"] for row in timeline]
        history = [entry.to_dict() for entry in await self.ahistory(thread)]
        visits = dict(Counter(path))
        return {
            "thread_id": thread,
            "task": state.get("task", ""),
            "status": (await self.get_agent_state(thread))["status"],
            "origin": record["origin"] if record else "run",
            "parent_thread_id": record["parent_thread_id"] if record else None,
            "created_at": record["created_at"] if record else None,
            "final_text": state.get("final_text"),
            "error": record["error"] if record else None,
            "system_prompt": await self.get_system_prompt(thread),
            "iterations": state.get("iteration", 0),
            "usage": await self.get_token_usage(thread),
            "timeline": timeline,
            "path": path,
            "visits": visits,
            "tool_calls": trace["tool_calls"],
            "gates": [row for row in timeline if row["stage"] == "gate"],
            "pending_gate": snapshot.interrupts[0].value if snapshot.interrupts else None,
            "plans": list(state.get("plans", [])),
            "messages": list(state.get("messages", [])),
            "model_calls": await self.get_usage_history(thread),
            "history": history,
            "mermaid": mermaid(visits),
        }

    async def export_html(self, thread_id: str | None, path: str | Path) -> Path:
        """Write the run's page to ``path`` (one file, nothing fetched when it is opened)."""
        page = render_html(await self.run_report(thread_id))
        return await asyncio.to_thread(_write, Path(path), page)


def _write(target: Path, text: str) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target
