"""Time travel from the console: fork a run at a checkpoint, replay it offline, diff two runs.

All three take the engine's own paths, the ones the command line takes:

- `fork`: ``RunArchive.afork`` (``ai-agent fork THREAD CHECKPOINT --update JSON``) copies the run
  up to the checkpoint, with the edited state applied through the state's reducers. A fork at a
  paused gate is paused: a new plan for it is checked and queued with ``Agent.submit_plan`` and
  served by a worker that takes the fork's lease, as an inbox answer is. A fork elsewhere is
  resumed by ``Agent.resume`` (``ai-agent resume NEW``), which takes the lease itself; it runs
  in the console's process, after the response, and its page follows it.
- `replay`: ``Agent.replay`` in recorded mode with the original's model identity (``ai-agent
  replay THREAD``): no model and no tool is called; where the recording cannot answer, the
  replay stops and its `DivergenceReport` says where and how the new call differs.
- `diff`: two runs side by side from their latest checkpoints: the stages of each cycle, the
  tool calls with their arguments and outcomes, the answers, the tokens.

Edited state and plans come from a browser: they are parsed here (a JSON object of known state
keys; a plan as the CLI reads it) and refused with a message that says what to fix.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ai_agent.datafiles import strict_loads
from ai_agent.errors import AgentError, InvalidPlanError, RunError
from ai_agent.graph.state_edits import check_update
from ai_agent.observability.logs import engine_logger
from ai_agent.plans import read_plan
from ai_agent.state import RunState
from ai_agent.usage import token_usage

if TYPE_CHECKING:
    from ai_agent.graph import Agent
    from ai_agent.graph.result import RunResult

__all__ = [
    "Diff",
    "DiffRow",
    "ForkOutcome",
    "ForkedWithoutPlanError",
    "diff",
    "fork",
    "parse_update",
    "replay",
]

MAX_UPDATE_CHARS = 200_000
_STATE_KEYS = frozenset(RunState.__annotations__)
_running: set[asyncio.Task[Any]] = set()  # resumed forks, kept until they finish
log = engine_logger("ai_agent.console")


def parse_update(text: str) -> dict[str, Any] | None:
    """Edited state from a form: None when empty, else a JSON object of state keys.

    Each value is checked against the state's type of its key (`check_update`), so a wrong one
    is shown now, not met later by the resumed fork.

    Raises:
        RunError: not JSON, not an object, too long, a key the state does not have, or a value
            not of its key's type.

    Examples:
        >>> parse_update('{"reflection": "try the other file"}')
        {'reflection': 'try the other file'}
        >>> parse_update("  ") is None
        True
    """
    if not text.strip():
        return None
    if len(text) > MAX_UPDATE_CHARS:
        raise RunError(f"the edited state is longer than {MAX_UPDATE_CHARS:,} characters")
    try:
        value = strict_loads(text)
    except (ValueError, RecursionError) as exc:
        # Not only JSONDecodeError: a number of 4,300+ digits (ValueError) or deep nesting
        # (RecursionError) is a mistake to show, not a crash.
        raise RunError(f"the edited state is not JSON we can read ({_unreadable(exc)})") from None
    if not isinstance(value, dict):
        raise RunError('the edited state must be a JSON object, e.g. {"reflection": "..."}')
    unknown = sorted(set(value) - _STATE_KEYS)
    if unknown:
        raise RunError(
            f"the state has no key {', '.join(map(repr, unknown))}; the checkpoint page lists "
            "its keys"
        )
    check_update(value)
    return value


def parse_plan(text: str, max_chars: int) -> dict[str, Any] | None:
    """A plan from a form: None when empty; a JSON object as a plan; other text as instructions.

    Raises:
        InvalidPlanError: the plan is not valid (each problem named) or too long, or it opens
            with ``{`` and is not JSON (it was meant as a plan, not as instructions).
    """
    if not text.strip():
        return None
    try:
        value = strict_loads(text)
    except (ValueError, RecursionError) as exc:
        # Text that opens like a JSON object was meant as a plan: taken as instructions, a
        # typo (a trailing comma) would silently turn an approval into words for the model.
        if text.lstrip().startswith("{"):
            raise InvalidPlanError(
                f"the plan is not JSON we can read ({_unreadable(exc)}); fix it, or write "
                "instructions as plain text"
            ) from None
        value = {"instructions": text.strip()}
    if not isinstance(value, dict):
        value = {"instructions": text.strip()}
    read_plan(value, max_chars=max_chars)  # the mistake is shown now, not found by a worker
    return value


def _unreadable(exc: ValueError | RecursionError) -> str:
    """Why ``json.loads`` refused a text, in words."""
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at line {exc.lineno}, column {exc.colno}"
    if isinstance(exc, RecursionError):
        return "it is nested too deeply"
    return str(exc)  # a number too long to read


class ForkedWithoutPlanError(InvalidPlanError):
    """The fork was made, but the plan given for it was refused: the fork waits, unanswered.

    The plan can only be checked against the fork's own gate, so the fork exists by then; the
    page must say so (a person told "not forked" would fork again, and again).
    """

    def __init__(self, thread_id: str, reason: str) -> None:
        super().__init__(f"forked as run {thread_id}, but its plan was not queued: {reason}")
        self.thread_id = thread_id


@dataclass(frozen=True)
class ForkOutcome:
    """A fork, and how it goes on: a plan queued for it (its id) or a resume started."""

    thread_id: str
    plan_id: int | None
    resumed: bool


async def fork(
    agent: Agent, thread_id: str, checkpoint_id: str, update_text: str, plan_text: str
) -> ForkOutcome:
    """Fork at a checkpoint with edited state or a new plan, and set the fork going.

    Raises:
        RunError / InvalidPlanError / UnknownThreadError / UnknownCheckpointError: the edit or
            the plan is wrong, or the checkpoint is unknown; nothing was forked.
        ForkedWithoutPlanError: the fork was made, and the plan does not fit it (a plan needs a
            paused gate, and one that the plan fits).
    """
    update = parse_update(update_text)
    plan = parse_plan(plan_text, agent.settings.max_plan_chars)
    new = await agent.archive.afork(thread_id, checkpoint_id, update)
    if plan is not None:
        return await _queue_for_fork(agent, new, checkpoint_id, plan)
    if (await agent.get_result(new)).status == "paused":
        return ForkOutcome(new, None, resumed=False)  # it waits at its gate: the inbox has it
    task = asyncio.get_running_loop().create_task(agent.resume(new))
    _running.add(task)
    task.add_done_callback(lambda done: _finished(new, done))
    return ForkOutcome(new, None, resumed=True)


async def _queue_for_fork(
    agent: Agent, new: str, checkpoint_id: str, plan: dict[str, Any]
) -> ForkOutcome:
    """Queue the plan for the fork's gate, or say that the fork was made without it."""
    if (await agent.get_result(new)).status != "paused":
        raise ForkedWithoutPlanError(
            new,
            f"a plan answers a gate, and checkpoint {checkpoint_id} is not a paused gate; "
            f"resume the fork with `ai-agent resume {new}` (forking again without a plan makes "
            "another run)",
        )
    try:
        record = await agent.submit_plan(new, plan)
    except AgentError as exc:  # checked against the fork's gate: the fork exists by now
        raise ForkedWithoutPlanError(
            new,
            f"{str(exc).rstrip('.')}; the fork waits at its gate: answer it in the inbox or "
            f"on its page, /runs/{new} (forking again makes another run)",
        ) from None
    return ForkOutcome(new, record["id"], resumed=False)


def _finished(thread_id: str, task: asyncio.Task[Any]) -> None:
    """A resumed fork ended: forget its task, and log how it failed if it raised.

    Nobody awaits the task (the response went before it ran), so its exception is retrieved
    here, never left for asyncio to print with a traceback. The runner has marked the run
    failed by then, so its page says so; the log says why (the traceback at DEBUG).
    """
    _running.discard(task)
    if task.cancelled():
        return
    exc = task.exception()
    if exc is not None:
        log.error(
            "fork %s stopped with an error: %s: %s; its page shows it as failed",
            thread_id,
            type(exc).__name__,
            exc,
            exc=exc if log.enabled(logging.DEBUG) else None,
        )


async def replay(agent: Agent, thread_id: str) -> RunResult:
    """Replay a run offline from its recording (see the module docstring)."""
    return await agent.replay(thread_id, None, "recorded", model_identity="recorded")


@dataclass(frozen=True)
class DiffRow:
    """One aligned line of a diff: the left run's text, the right run's, whether they differ."""

    what: str
    left: str
    right: str

    @property
    def differs(self) -> bool:
        """The two sides are not the same."""
        return self.left != self.right


@dataclass(frozen=True)
class Diff:
    """Two runs side by side."""

    left: str
    right: str
    summary: list[DiffRow]
    stages: list[DiffRow]
    tool_calls: list[DiffRow]

    @property
    def same(self) -> bool:
        """Nothing differs."""
        return not any(r.differs for r in (*self.summary, *self.stages, *self.tool_calls))


async def diff(agent: Agent, left: str, right: str) -> Diff:
    """Two runs side by side, from their latest checkpoints.

    Raises:
        UnknownThreadError / InvalidThreadIdError: either run does not exist.
    """
    states = [dict(await agent.archive.get_state(t)) for t in (left, right)]
    results = [await agent.archive.get_result(t) for t in (left, right)]
    usages = [token_usage(s) for s in states]
    summary = [
        DiffRow("status", results[0].status, results[1].status),
        DiffRow(
            "stop reason", str(results[0].stop_reason or ""), str(results[1].stop_reason or "")
        ),
        DiffRow("task", str(states[0].get("task", "")), str(states[1].get("task", ""))),
        DiffRow("answer", results[0].final_text or "", results[1].final_text or ""),
        DiffRow("tokens", str(usages[0]["total_tokens"]), str(usages[1]["total_tokens"])),
        DiffRow("model calls", str(usages[0]["requests"]), str(usages[1]["requests"])),
    ]
    cycles = [_stages_by_cycle(s) for s in states]
    stages = [
        DiffRow(f"cycle {n}", cycles[0].get(n, ""), cycles[1].get(n, ""))
        for n in sorted(set(cycles[0]) | set(cycles[1]))
    ]
    calls = [_tool_calls(s) for s in states]
    tool_calls = [
        DiffRow(
            f"call {i + 1}",
            calls[0][i] if i < len(calls[0]) else "",
            calls[1][i] if i < len(calls[1]) else "",
        )
        for i in range(max(len(calls[0]), len(calls[1])))
    ]
    return Diff(left, right, summary, stages, tool_calls)


def _stages_by_cycle(state: dict[str, Any]) -> dict[int, str]:
    cycles: dict[int, list[str]] = {}
    for line in state.get("trace") or []:
        cycles.setdefault(int(line["iteration"]), []).append(str(line["stage"]))
    return {n: " → ".join(stages) for n, stages in cycles.items()}


def _tool_calls(state: dict[str, Any]) -> list[str]:
    lines = []
    for record in state.get("results") or []:
        call, result = record["call"], record["result"]
        args = json.dumps(call.get("args"), ensure_ascii=False, sort_keys=True, default=str)
        outcome = result.get("summary") or result.get("error") or result.get("content") or ""
        lines.append(f"{call.get('name')}({args}) → {result.get('status')}: {outcome}")
    return lines
