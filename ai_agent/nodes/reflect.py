"""reflect: an optional note on progress; by default, notice when the agent repeats itself."""

from __future__ import annotations

import json
from typing import TypedDict

from langgraph.runtime import Runtime

from ai_agent.context import RunContext
from ai_agent.errors import HookError
from ai_agent.issues import IssueKind
from ai_agent.nodes._common import call_hook, hook_issue, hook_view, stage
from ai_agent.nodes._issues import issue
from ai_agent.state import Issue, RunState, ToolOutcome, TraceEvent

__all__ = ["ReflectUpdate", "reflect", "repeated_calls"]


class ReflectUpdate(TypedDict, total=False):
    """What the reflect stage writes to the run state."""

    reflection: str | None
    issues: list[Issue]
    trace: list[TraceEvent]


def _signature(outcomes: list[ToolOutcome], iteration: int) -> list[str]:
    # Outcomes are appended cycle by cycle, so the wanted ones sit at the end: walking back
    # keeps a reflect step's cost flat however long the run is.
    found = []
    for outcome in reversed(outcomes):
        if outcome["iteration"] < iteration:
            break
        if outcome["iteration"] == iteration:
            call, result = outcome["call"], outcome["result"]
            # What came back counts too: a stateful tool asked the same thing again (a queue,
            # a clock, a job's status) that answers something new is progress.
            answer = [result.get("status"), result.get("content"), result.get("error")]
            found.append(
                json.dumps([call["name"], call["args"], answer], sort_keys=True, default=str)
            )
    return sorted(found)


def repeated_calls(results: list[ToolOutcome], iteration: int) -> bool:
    """True when this cycle ran exactly the calls of the previous one, with the same results."""
    if iteration < 2:
        return False
    now = _signature(results, iteration)
    return bool(now) and now == _signature(results, iteration - 1)


@stage("reflect")
async def reflect(state: RunState, *, runtime: Runtime[RunContext]) -> ReflectUpdate:
    """Run the reflect hook, or the no-progress check (the same call twice is an issue)."""
    context = runtime.context
    iteration = state.get("iteration", 0)
    if context.hooks.reflect is not None:
        try:
            note = await call_hook(
                "reflect", context.hooks.reflect, state.get("task", ""), hook_view(state, context)
            )
        except HookError as exc:  # the gate comes next
            line = TraceEvent(stage="reflect", iteration=iteration, status="error", detail=str(exc))
            return ReflectUpdate(reflection=None, issues=[hook_issue(exc)], trace=[line])
        return ReflectUpdate(
            reflection=None if note is None else str(note),
            trace=[TraceEvent(stage="reflect", iteration=iteration, detail=str(note or ""))],
        )
    if repeated_calls(list(state.get("results", [])), iteration):
        found = issue(
            IssueKind.NO_PROGRESS,
            "the agent repeated the previous cycle's tool call(s) "
            "with the same arguments and got the same results; it may be stuck",
        )
        return ReflectUpdate(
            reflection="no progress: same call(s) and result(s) as the previous cycle",
            issues=[found],
            trace=[
                TraceEvent(
                    stage="reflect", iteration=iteration, status="warning", detail="no progress"
                )
            ],
        )
    return ReflectUpdate(reflection=None, trace=[TraceEvent(stage="reflect", iteration=iteration)])
