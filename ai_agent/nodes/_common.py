"""Helpers shared by the stages: the stage wrapper (events + trace), hook calls, the hook view."""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar, cast

from langgraph.config import get_config
from langgraph.errors import GraphInterrupt
from langgraph.runtime import Runtime

from ai_agent.context import RunContext
from ai_agent.errors import HookError
from ai_agent.events import GatePaused, NodePaused, StageFinished, StageStarted
from ai_agent.issues import IssueKind
from ai_agent.nodes._issues import issue
from ai_agent.observability.scopes import stage_scope
from ai_agent.state import Issue, Message, RunState, TraceEvent

__all__ = ["call_hook", "hook_issue", "hook_view", "last_assistant", "stage"]

U = TypeVar("U")
U_co = TypeVar("U_co", covariant=True)


class Node(Protocol[U_co]):
    """A stage: ``async def <stage>(state, *, runtime) -> <Stage>Update``."""

    def __call__(
        self, state: RunState, *, runtime: Runtime[RunContext]
    ) -> Awaitable[U_co]: ...  # pragma: no cover - protocol


async def call_hook(name: str, fn: Callable[..., Any], *args: Any) -> Any:
    """Call the user's hook ``name`` (sync or async); what it raises is a `HookError` naming it.

    The stages before the gate turn it into a HOOK_ERROR issue (`hook_issue`); after the gate it
    fails the run where it stands, and ``resume`` runs the stage again. A hook is never an
    exception out of ``Agent.run``.
    """
    try:
        outcome = fn(*args)
        if inspect.isawaitable(outcome):
            outcome = await outcome
    except HookError:
        raise  # a hook that calls through another (a replay's) is named once
    except Exception as exc:
        raise HookError(name, exc) from exc
    return outcome


def hook_issue(error: HookError) -> Issue:
    """The gate issue of a hook that raised."""
    return issue(IssueKind.HOOK_ERROR, str(error))


def hook_view(state: RunState, context: RunContext) -> dict[str, Any]:
    """What hooks may see of the run: data only, copied so a hook cannot change state."""
    gate = state.get("gate")
    return {
        "thread_id": context.thread_id,
        "task": state.get("task", ""),
        "iteration": state.get("iteration", 0),
        "messages": [dict(m) for m in state.get("messages", [])],
        "results": [dict(r) for r in state.get("results", [])],
        "gate": dict(gate) if gate else None,
        "active_tools": list(state.get("active_tools", [])),
        "discovered": list(state.get("discovered", [])),
        "stop_reason": state.get("stop_reason"),
        "status": state.get("status", "running"),
    }


def last_assistant(state: RunState) -> Message | None:
    """The latest assistant message, if any."""
    messages: list[Message] = state.get("messages", [])
    for message in reversed(messages):
        if message["role"] == "assistant":
            return cast(Message, message)
    return None


def _step() -> int | None:
    """LangGraph's step number of the running node (None outside a graph run)."""
    try:
        step = get_config().get("metadata", {}).get("langgraph_step")
    except RuntimeError:
        return None
    return step if isinstance(step, int) else None


def stage(name: str) -> Callable[[Node[U]], Node[U]]:
    """Wrap a stage: announce it, time it, observe it, and complete its trace lines.

    A stage returns its own trace details (``{"trace": [{"tool": ..., "status": ...}]}``); the
    wrapper fills in the stage name, iteration, start time and duration, and adds one line when the
    stage gave none. Every secret the run knows is masked in the update (``RunContext.scrub``).
    The stage runs in an observability scope (its id, span, duration metric and log lines; see
    `ai_agent.observability.scopes`). An interrupt from the gate passes through
    untouched, as does one from a node of the user's pipeline (reported as `NodePaused`).
    """

    def wrap(fn: Node[U]) -> Node[U]:
        @functools.wraps(fn)
        async def run(state: RunState, *, runtime: Runtime[RunContext]) -> U:
            context = runtime.context
            iteration = state.get("iteration", 0)
            with stage_scope(name, iteration, step=_step()) as observed:
                context.emit(StageStarted(name, iteration))
                started_at, started = time.time(), time.perf_counter()
                try:
                    update = await fn(state, runtime=runtime)
                except GraphInterrupt as exc:
                    interrupts = exc.args[0] if exc.args else ()
                    report = getattr(interrupts[0], "value", None) if interrupts else None
                    if name != "gate":  # a node of the user's pipeline asks for an answer
                        context.emit(NodePaused(name, iteration, report))
                        raise
                    observed.pause(report if isinstance(report, dict) else None)
                    context.emit(GatePaused(iteration, report or None))
                    raise
                except Exception as exc:
                    # LangGraph stores a failed node's error in the checkpoint as it is (its
                    # repr, made of its args): a secret in its text, such as the password of the
                    # model server's URL in "cannot reach ...", would stay in the database.
                    exc.args = context.scrub(exc.args)
                    raise
                elapsed = round((time.perf_counter() - started) * 1000, 3)
                out = cast(dict[str, Any], update)
                iteration = out.get("iteration", iteration)
                observed.finish(iteration)
                lines: list[TraceEvent] = out.get("trace") or [TraceEvent(stage=name, iteration=0)]
                out["trace"] = [
                    _complete(line, name, iteration, started_at, elapsed) for line in lines
                ]
                context.emit(StageFinished(name, iteration, elapsed))
            # The one way into state: no configured secret passes, whoever produced the text.
            return cast(U, context.scrub(update))

        return run

    return wrap


def _complete(
    line: TraceEvent, name: str, iteration: int, started_at: float, elapsed: float
) -> TraceEvent:
    done = TraceEvent(stage=name, iteration=iteration, started_at=started_at, duration_ms=elapsed)
    done.update({k: v for k, v in line.items() if k not in ("stage", "iteration")})  # type: ignore[typeddict-item]
    done.setdefault("status", "ok")
    return done
