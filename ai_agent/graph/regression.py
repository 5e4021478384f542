"""A recorded case replayed against the current code: the same run, or where it diverged.

`check_case` writes the case into the Agent's database (`ai_agent.graph.cases.import_case`),
replays it, and compares the replay with what the recorded run did:

- offline (``live=False``, what a generated test does): the model's replies and the tools'
  results come from the recording; the Agent's system prompt, tools' schemas, hooks and stages
  are today's. A request the recording has no reply for stops the replay where it differs
  (``Agent.replay``'s divergence report: the step, the stage and a diff);
- live (``live=True``, ``ai-agent eval --model``): the Agent's model and tools are called again,
  and at each gate the original was answered at, the replay gets the same plan.

Then the replay's tool calls (name and arguments, in order), its status and its answer are
compared with the recorded ones; the first difference is the case's divergence.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ai_agent.errors import ConfigError, RunError
from ai_agent.graph.cases import import_case, read_case
from ai_agent.graph.divergence import text_diff

if TYPE_CHECKING:
    from ai_agent.graph.agent import Agent
    from ai_agent.graph.result import RunResult

__all__ = ["CaseResult", "check_case", "replay_case"]

MAX_PLAN_ROUNDS = 100
"""A live replay is given at most this many recorded plans (a loop of pauses ends there)."""


@dataclass(frozen=True)
class CaseResult:
    """What a recorded case's replay did, against what the recorded run did.

    Attributes:
        case: The recorded run's thread id.
        thread_id: The replay's thread (in the database the replay ran in).
        status: The replay's status.
        final_text: The replay's answer.
        tool_calls: The replay's tool calls, ``(name, arguments)`` in order.
        step: Where it diverged: the LangGraph step of the first call the recording could
            not answer, or the position (1-based) of the first tool call that differs.
        where: What diverged, in words (None: nothing did).
        detail: How: the diff between the recorded and the new.
    """

    case: str
    thread_id: str
    status: str
    final_text: str | None
    tool_calls: list[tuple[str, dict[str, Any]]]
    step: int | None = None
    where: str | None = None
    detail: str = ""
    expected: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def same(self) -> bool:
        """True when the replay did what the recorded run did."""
        return self.where is None

    @property
    def diverged(self) -> str | None:
        """None, or the first divergence in words (a test's assertion message)."""
        return None if self.same else str(self)

    def __str__(self) -> str:
        if self.same:
            return f"case {self.case}: same"
        at = f" at step {self.step}" if self.step is not None else ""
        return f"case {self.case}: diverged{at}: {self.where}\n{self.detail}".rstrip()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (``ai-agent eval --json``)."""
        return {
            "case": self.case,
            "same": self.same,
            "step": self.step,
            "where": self.where,
            "detail": self.detail,
            "replay_thread_id": self.thread_id,
            "status": self.status,
            "final_text": self.final_text,
            "tool_calls": [{"name": n, "args": a} for n, a in self.tool_calls],
        }


async def check_case(
    agent: Agent, case: Mapping[str, Any] | str | Path, *, live: bool = False
) -> CaseResult:
    """Replay a recorded case with this Agent and compare it with the recorded run.

    Args:
        agent: Today's code: its tools, system prompt, hooks and pipeline (and, ``live``, its
            model). The case is written into its database.
        case: The case, or the path of its file.
        live: Call the Agent's model and tools again instead of answering from the recording.

    Raises:
        ConfigError: the case file is missing or damaged.
    """
    data = read_case(case) if isinstance(case, (str, Path)) else case
    _check_expected(data)
    await agent.archive.database.open()
    thread = await import_case(agent.archive.database, data)
    if live:
        result = await _live(agent, thread, data)
    else:
        result = await agent.replay(thread)
    state = await agent.archive.get_state(result.thread_id)
    calls = [(r["call"]["name"], dict(r["call"]["args"])) for r in state.get("results", [])]
    return _compare(data, result, calls)


def replay_case(agent: Agent, case: Mapping[str, Any] | str | Path) -> CaseResult:
    """`check_case` offline, from synchronous code (a test): closes the Agent afterwards.

    Examples:
        >>> import asyncio, tempfile, os
        >>> from ai_agent import Agent
        >>> from ai_agent.graph.cases import export_case
        >>> from ai_agent.testing import ScriptedModel
        >>> d = tempfile.mkdtemp()
        >>> async def record():
        ...     async with Agent(model=ScriptedModel(["hi"]), memory_path=None,
        ...                      checkpoint_path=os.path.join(d, "runs.sqlite")) as agent:
        ...         run = await agent.run("greet")
        ...         return await export_case(agent.archive.database, run.thread_id)
        >>> case = asyncio.run(record())
        >>> agent = Agent(model=ScriptedModel([]), memory_path=None,
        ...               checkpoint_path=os.path.join(d, "replay.sqlite"))
        >>> replay_case(agent, case).same
        True
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass  # no loop: this is synchronous code, as it should be
    else:
        raise RunError(
            "replay_case is for synchronous code (a plain test function); in async code use "
            "`await check_case(agent, case)`"
        )

    async def replaying() -> CaseResult:
        async with agent:
            return await check_case(agent, case)

    return asyncio.run(replaying())


async def _live(agent: Agent, thread: str, case: Mapping[str, Any]) -> RunResult:
    """A live replay, given the recorded plans at the gates it pauses at, in order."""
    plans = list(_recorded_plans(case))
    result = await agent.replay(thread, mode="live", model_identity="agent")
    for plan in plans[:MAX_PLAN_ROUNDS]:
        if result.status != "paused":
            break
        result = await agent.resume(result.thread_id, plan)
    return result


def _recorded_plans(case: Mapping[str, Any]) -> list[dict[str, Any]]:
    head = case["checkpoints"][-1]["checkpoint"]["channel_values"]
    records = head.get("plans") or []
    if not isinstance(records, list) or not all(
        isinstance(p, dict) and isinstance(p.get("plan"), dict) for p in records
    ):
        raise _damaged(case, "its plans are not a list of recorded plans")
    return [dict(p["plan"]) for p in records if p.get("source") != "hook"]


def _check_expected(case: Mapping[str, Any]) -> None:
    """Refuse a case whose ``expected`` part cannot be compared with a replay, before replaying.

    A case file is input: edited by hand, ``expected`` may lack a key or hold another type,
    which the comparison would fail on with a KeyError after the whole replay.

    Raises:
        ConfigError: which part is wrong, and what to do.
    """
    expected = case.get("expected")
    if not isinstance(expected, Mapping):
        raise _damaged(case, "its expected outcome is not an object")
    if not isinstance(expected.get("status"), str):
        raise _damaged(case, "its expected status is not text")
    if "final_text" not in expected or not isinstance(expected["final_text"], str | None):
        raise _damaged(case, "its expected final text is neither text nor null")
    calls = expected.get("tool_calls")
    if not isinstance(calls, list) or not all(_is_call(c) for c in calls):
        raise _damaged(case, 'its expected tool calls are not a list of {"name", "args"}')


def _is_call(call: Any) -> bool:
    return (
        isinstance(call, Mapping)
        and isinstance(call.get("name"), str)
        and isinstance(call.get("args"), Mapping)
    )


def _damaged(case: Mapping[str, Any], problem: str) -> ConfigError:
    return ConfigError(
        f"the recorded case of run {case.get('thread_id')!r} is damaged ({problem}); write it "
        "again with `ai-agent test-from-run`"
    )


def _compare(
    case: Mapping[str, Any], result: RunResult, calls: list[tuple[str, dict[str, Any]]]
) -> CaseResult:
    expected = case["expected"]
    base = CaseResult(
        case=str(case["thread_id"]),
        thread_id=result.thread_id,
        status=result.status,
        final_text=result.final_text,
        tool_calls=calls,
        expected=dict(expected),
    )
    if result.divergence is not None:
        report = result.divergence
        return _with(base, report.step, f"{report.stage}: {report.reason}", report.diff)
    recorded = [(c["name"], dict(c["args"])) for c in expected["tool_calls"]]
    for index, (old, new) in enumerate(zip(recorded, calls, strict=False), start=1):
        if _canonical(old) != _canonical(new):
            return _with(base, index, f"tool call {index} differs", _diff([old], [new]))
    if len(recorded) != len(calls):
        index = min(len(recorded), len(calls)) + 1
        what = (
            "a tool call the recorded run did not make"
            if len(calls) > len(recorded)
            else ("a recorded tool call the replay did not make")
        )
        return _with(
            base,
            index,
            f"tool call {index}: {what}",
            _diff(recorded[index - 1 :], calls[index - 1 :]),
        )
    if result.status != expected["status"]:
        return _with(base, None, f"the run ended {result.status}, not {expected['status']}", "")
    if result.final_text != expected["final_text"]:
        return _with(
            base,
            None,
            "the final answer differs",
            text_diff(_lines(expected["final_text"]), _lines(result.final_text)),
        )
    return base


def _canonical(call: tuple[str, Any]) -> str:
    """A tool call as JSON with sorted keys: what the tool is given, compared exactly.

    Python's ``==`` says ``{"n": 1} == {"n": True} == {"n": 1.0}``; a tool is given ``1``,
    ``true`` or ``1.0``, and a model that now writes another is a call that differs.
    """
    return json.dumps(call, sort_keys=True, ensure_ascii=False, default=repr)


def _with(base: CaseResult, step: int | None, where: str, detail: str) -> CaseResult:
    from dataclasses import replace

    return replace(base, step=step, where=where, detail=detail)


def _diff(old: list[tuple[str, Any]], new: list[tuple[str, Any]]) -> str:
    def lines(calls: list[tuple[str, Any]]) -> list[str]:
        return [
            f"{name} {json.dumps(args, sort_keys=True, ensure_ascii=False)}" for name, args in calls
        ]

    return text_diff(lines(old), lines(new))


def _lines(text: str | None) -> list[str]:
    return [] if text is None else text.split("\n")
