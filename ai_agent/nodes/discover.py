"""discover: propose tools for the NEXT cycle only. Nothing is installed or activated here."""

from __future__ import annotations

import re
from typing import Any, TypedDict

from langgraph.runtime import Runtime

from ai_agent.context import RunContext, ToolInfo
from ai_agent.errors import HookError
from ai_agent.nodes._common import call_hook, hook_issue, hook_view, stage
from ai_agent.state import Discovery, Issue, RunState, TraceEvent

__all__ = ["DiscoverUpdate", "discover", "keyword_proposals"]

_MAX_PROPOSALS = 5
_WORD = re.compile(r"[a-z][a-z0-9]{2,}")
_STOP = frozenset(
    {
        *("the", "and", "for", "with", "from", "that", "this", "into", "your", "you", "are"),
        *("was", "were", "have", "has", "what", "when", "then", "than", "them", "they"),
        *("use", "using", "tool", "tools", "call", "please", "can"),
    }
)


class DiscoverUpdate(TypedDict, total=False):
    """What the discover stage writes to the run state."""

    discovered: list[Discovery]
    issues: list[Issue]
    trace: list[TraceEvent]


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def keyword_proposals(text: str, catalog: list[ToolInfo], active: set[str]) -> list[Discovery]:
    """Inactive catalog tools whose name or description shares words with ``text``.

    Examples:
        >>> cat = [{"name": "read_file", "description": "Read a file", "category": "read_only",
        ...         "requires_env": [], "parameters": {}}]
        >>> keyword_proposals("read the config file", cat, set())[0]["name"]
        'read_file'
    """
    wanted = _words(text)
    scored: list[tuple[int, str, str]] = []
    for tool in catalog:
        if tool["name"] in active:
            continue
        name_words = _words(tool["name"].replace("_", " ").replace(".", " "))
        hits = sorted(wanted & (name_words | _words(tool["description"])))
        if hits:
            score = 2 * len(wanted & name_words) + len(hits)
            scored.append((score, tool["name"], "matches " + ", ".join(repr(h) for h in hits)))
    scored.sort(key=lambda s: (-s[0], s[1]))
    return [Discovery(name=n, reason=r) for _, n, r in scored[:_MAX_PROPOSALS]]


def _clean(proposals: Any, known: set[str]) -> list[Discovery]:
    out: list[Discovery] = []
    for p in proposals or []:
        name = p.get("name") if isinstance(p, dict) else None
        if name in known and name not in {d["name"] for d in out}:
            out.append(Discovery(name=name, reason=str(p.get("reason", ""))))
    return out[:_MAX_PROPOSALS]


@stage("discover")
async def discover(state: RunState, *, runtime: Runtime[RunContext]) -> DiscoverUpdate:
    """Suggest catalog tools that could help next cycle (hook, else keyword match)."""
    context = runtime.context
    catalog = context.tools.catalog()
    active = set(state.get("active_tools", []))
    decision = state.get("decision")
    if context.hooks.discover_tools is not None:
        try:
            raw = await call_hook(
                "discover_tools",
                context.hooks.discover_tools,
                state.get("task", ""),
                dict(decision) if decision else None,
                hook_view(state, context),
                [dict(t) for t in catalog],
            )
        except HookError as exc:  # proposals only: the gate hears of it at the cycle's end
            return DiscoverUpdate(
                discovered=[],
                issues=[hook_issue(exc)],
                trace=[TraceEvent(stage="discover", iteration=0, status="error", detail=str(exc))],
            )
        proposals = _clean(raw, {t["name"] for t in catalog})
    else:
        text = " ".join([state.get("task", ""), decision["text"] if decision else ""])
        calls = decision["calls"] if decision else []
        wanted = [c["name"] for c in calls if c["name"] not in active]
        proposals = [
            Discovery(name=n, reason="the model asked for it")
            for n in wanted
            if context.tools.info(n) is not None
        ]
        taken = {p["name"] for p in proposals}
        proposals += [p for p in keyword_proposals(text, catalog, active) if p["name"] not in taken]
        proposals = proposals[:_MAX_PROPOSALS]
    return DiscoverUpdate(
        discovered=proposals,
        trace=[
            TraceEvent(
                stage="discover",
                iteration=0,
                detail=", ".join(p["name"] for p in proposals) or "none",
            )
        ],
    )
