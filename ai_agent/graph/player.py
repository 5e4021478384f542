"""The replay player: a ModelCaller and a ToolBox that answer from a run's recording.

A replay re-executes a run into a new thread. Where it is "recorded" (everywhere in mode
``recorded``; up to the chosen checkpoint in ``live-after``), the player answers each model call
with the recorded reply whose request hash matches, and each tool call with the recorded result
of the same tool with the same arguments: no model server is asked and no tool runs. Where it is
live, calls go to the Agent's model and tools under the normal policy and approvals.

Matching. Several recorded calls may share a hash (a step re-run after a crash makes the same
request twice). The player prefers the one recorded at the same step (the last of them: that is
the one whose reply the run went on with), then the first not used yet, then the last one.

A call the recording cannot answer stops the replay with a `DivergenceReport`: the step,
the stage, and a diff between the new request and the one recorded at that point.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ai_agent.checkpoints._rows import corrupt_row
from ai_agent.checkpoints.recorded import (
    CallPosition,
    ModelCallRecord,
    ModelRequest,
    ToolCallRecord,
)
from ai_agent.checkpoints.store import RunStoreProtocol
from ai_agent.context import CallerBase, Hook, ModelCall, ModelCaller, ModelReply, ToolBox
from ai_agent.datafiles import valid_data
from ai_agent.errors import (
    CircuitOpenError,
    CorruptRunError,
    InvalidPlanError,
    ModelAuthError,
    ModelError,
    ModelRateLimitError,
    ModelResponseError,
    ModelUnavailableError,
    ReplayDivergedError,
    ScriptExhaustedError,
)
from ai_agent.graph.divergence import DivergenceReport, call_lines, request_lines, text_diff
from ai_agent.graph.recording import call_position, request_params
from ai_agent.graph.state_shape import shape_problem
from ai_agent.graph.toolboxes import DelegatingToolBox
from ai_agent.models import request_hash
from ai_agent.nodes._common import call_hook
from ai_agent.nodes.gate import check_plan
from ai_agent.plans import PlanAnswer, read_plan
from ai_agent.state import GateReport, Message, PlanRecord, ToolCall, ToolOutcome, ToolResult
from ai_agent.tools.policy import args_hash

__all__ = ["ReplayMode", "ReplayModel", "ReplaySession", "ReplayToolBox", "Tape"]

ReplayMode = Literal["recorded", "live", "live-after"]
#: Whose generation parameters a replay's requests are compared with: the original's, as
#: recorded, or the replaying Agent's.
ModelIdentity = Literal["recorded", "agent"]

_ERRORS: dict[str, type[ModelError]] = {
    cls.__name__: cls
    for cls in (
        ModelError,
        ModelUnavailableError,
        ModelAuthError,
        ModelRateLimitError,
        ModelResponseError,
        CircuitOpenError,
        ScriptExhaustedError,
    )
}


def _call_problem(call: Any) -> str | None:
    """What is wrong with a recorded reply's tool call (None: nothing)."""
    if not isinstance(call, dict):
        return "a tool call that is not an object"
    if not isinstance(call.get("id"), str) or not isinstance(call.get("name"), str):
        return "a tool call without a text id and name"
    if not isinstance(call.get("args"), dict):
        return f"a call of {call['name']} whose arguments are not an object"
    return None


def _reply_problem(message: Message) -> str | None:
    """What keeps a recorded reply from being the model's reply (None: nothing).

    The store checks only that it is an object; a row edited by hand (or a case file) may hold
    an object of another shape, which the draft stage would fail on with a KeyError.
    """
    if message.get("role") != "assistant":
        return f"it is not the model's reply (its role is {message.get('role')!r})"
    if not isinstance(message.get("content"), str):
        return "its content is not text"
    calls: Any = message.get("tool_calls", [])  # edited by hand: any JSON at all
    if not isinstance(calls, list):
        return "its tool calls are not a list"
    return next(filter(None, map(_call_problem, calls)), None)


def recorded_reply(record: ModelCallRecord, message: Message) -> Message:
    """A recorded call's reply (``message``) as the draft stage takes it: checked, a copy.

    Its texts are made writable as a live reply's are (`valid_data`): a lone surrogate escaped
    in the stored JSON would otherwise fail the checkpoint it is written to.

    Raises:
        CorruptRunError: the reply has not the shape of a model's reply.
    """
    message = copy.deepcopy(message)
    problem = _reply_problem(message)
    if problem is not None:
        thread = str(record["thread_id"])
        hint = (
            f"a replay cannot use it: replay the run live (`ai-agent replay {thread} --live`), "
            "or record it again"
        )
        raise corrupt_row(f"the reply of recorded call {record['seq']}", thread, problem, hint)
    return valid_data(message)


def recorded_result(record: ToolCallRecord, call: ToolCall, iteration: int) -> ToolResult:
    """A recorded call's result as the act stage takes it: checked, a copy.

    The store checks only that it is an object; an edited row may hold an object no tool
    returns (no status, a meta that is a number), which act failed on with a KeyError.

    Raises:
        CorruptRunError: the result does not have the shape of a tool's result.
    """
    result = copy.deepcopy(record["result"])
    outcome = ToolOutcome(iteration=iteration, call=call, result=result)
    problem = shape_problem({"results": [outcome]})  # the run's state takes it as it is
    if problem is not None:
        thread = str(record["thread_id"])
        hint = (
            f"a replay cannot use it: replay the run live (`ai-agent replay {thread} --live`), "
            "or record it again"
        )
        what = f"the result of recorded tool call {record['seq']}"
        raise corrupt_row(what, thread, f"it is not a tool's result ({problem})", hint)
    return result


def _model_error(record: dict[str, str]) -> ModelError:
    """The model error a recorded call ended with, raised again so the replay takes its path.

    Read as text: an edited row's type may be a list (unhashable) and its message a number.
    """
    kind = _ERRORS.get(str(record.get("type", "")), ModelError)
    return kind(str(record.get("message", "")))


class Tape:
    """The recorded calls a replay may use, in recording order (oldest ancestor first).

    Args:
        models: Recorded model calls.
        tools: Recorded tool calls.
    """

    def __init__(self, models: Sequence[ModelCallRecord], tools: Sequence[ToolCallRecord]):
        self.models = list(models)
        self.tools = list(tools)
        self._used: set[int] = set()

    def _pick(self, candidates: list[Any], step: int | None) -> Any:
        same = [c for c in candidates if c["step"] == step]
        unused = [c for c in candidates if c["seq"] not in self._used]
        pick = same[-1] if same else unused[0] if unused else candidates[-1] if candidates else None
        if pick is not None:
            self._used.add(pick["seq"])
        return pick

    def take_model(self, digest: str, step: int | None) -> ModelCallRecord | None:
        """The recorded call that answers a request with this hash, or None."""
        found: ModelCallRecord | None = self._pick(
            [c for c in self.models if c["request_hash"] == digest], step
        )
        return found

    def take_tool(self, call: ToolCall, step: int | None) -> ToolCallRecord | None:
        """The recorded result of this tool with these arguments, or None."""
        digest = args_hash(call["args"])
        candidates = [t for t in self.tools if t["call"]["name"] == call["name"]]
        candidates = [t for t in candidates if t["args_hash"] == digest]
        exact = [t for t in candidates if t["call"]["id"] == call["id"]]
        found: ToolCallRecord | None = self._pick(exact or candidates, step)
        return found

    def near(self, records: Sequence[Any], step: int | None) -> Any:
        """What was recorded at this point: at the same step, else the next one not used."""
        same = [r for r in records if r["step"] == step]
        if same:
            return same[-1]
        return next((r for r in records if r["seq"] not in self._used), None)


@dataclass
class ReplaySession:
    """The state of one replay, shared by its player, its hooks and its driver.

    Attributes:
        source: The run being replayed.
        thread_id: The replay's thread.
        mode: ``recorded``, ``live`` or ``live-after``.
        switch_step: In ``live-after``, the last step answered from the recording.
        tape: The recorded calls.
        store: The run store (to read a recorded request for a diff).
        plans: The plans the original run received, in order.
        applied: How many of them this replay has received so far.
        source_paused: The original run is itself waiting at the gate after its last plan.
        live_model: Gives the Agent's live model caller (built only when needed).
        resuming: The driver is resuming a pause with a recorded plan (the gate's re-run must
            not ask the plan hook again).
        divergence: Set when the replay stopped.
        forget: A journal entry (iteration, call id) of a tool call that never ran.
    """

    source: str
    thread_id: str
    mode: ReplayMode
    switch_step: int | None
    tape: Tape
    store: RunStoreProtocol
    plans: list[PlanRecord]
    applied: int
    source_paused: bool
    live_model: Callable[[], Awaitable[ModelCaller]]
    catalog: list[str] = field(default_factory=list)
    resuming: bool = False
    divergence: DivergenceReport | None = None
    forget: tuple[int, str] | None = None

    def recorded_at(self, step: int | None) -> bool:
        """True where the replay answers from the recording."""
        if self.mode == "recorded":
            return True
        if self.mode == "live" or step is None or self.switch_step is None:
            return False
        return step <= self.switch_step

    def stop(
        self,
        position: CallPosition,
        reason: str,
        diff: str,
        *,
        recorded: Any = None,
        new: Any = None,
        stage: str | None = None,
    ) -> ReplayDivergedError:
        """Record why the replay stops, and return the error that stops it."""
        self.divergence = DivergenceReport(
            source_thread_id=self.source,
            thread_id=self.thread_id,
            step=position["step"],
            stage=stage or position["stage"] or "?",
            reason=reason,
            diff=diff,
            recorded=recorded,
            new=new,
        )
        return ReplayDivergedError(str(self.divergence).split("\n", 1)[0])

    async def model_divergence(
        self, position: CallPosition, request: ModelRequest
    ) -> ReplayDivergedError:
        """Stop at a model request that is not in the recording."""
        near: ModelCallRecord | None = self.tape.near(self.tape.models, position["step"])
        if near is None:
            return self.stop(
                position,
                "the original run made no model request here",
                text_diff([], request_lines(request)),
                new=request,
            )
        recorded = await self.store.model_request(near["seq"])
        return self.stop(
            position,
            "the model request differs from the recorded one",
            text_diff(request_lines(recorded), request_lines(request)),
            recorded=recorded,
            new=request,
        )

    def tool_divergence(
        self, position: CallPosition, call: ToolCall, iteration: int
    ) -> ReplayDivergedError:
        """Stop at a tool call that is not in the recording."""
        self.forget = (iteration, call["id"])
        near: ToolCallRecord | None = self.tape.near(self.tape.tools, position["step"])
        recorded = near["call"] if near else None
        return self.stop(
            position,
            f"the original run never called {call['name']} with these arguments",
            text_diff(call_lines(recorded) if recorded else [], call_lines(call)),
            recorded=recorded,
            new=call,
        )

    def next_plan(self) -> PlanRecord | None:
        """The next plan the original run received, if any."""
        return self.plans[self.applied] if self.applied < len(self.plans) else None

    def take_plan(self, report: GateReport, position: CallPosition) -> PlanAnswer:
        """The next recorded plan for this gate, checked against it.

        Raises:
            ReplayDivergedError: there is none, or it belongs to another cycle, or it does not fit.
        """
        record = self.next_plan()
        if record is None or record["iteration"] != report["iteration"]:
            where = (
                "did not pause here" if record is None else f"paused in cycle {record['iteration']}"
            )
            raise self.stop(
                position,
                f"the replay paused at the gate in cycle {report['iteration']}; the original "
                f"run {where}",
                text_diff([], report["prompt"].split("\n")),
                recorded=record,
                new=report,
                stage="gate",
            )
        try:
            plan = read_plan(record["plan"])
            check_plan(plan, report, self.catalog)
        except InvalidPlanError as exc:
            raise self.stop(
                position,
                f"the recorded plan does not fit this gate: {exc}",
                text_diff([], report["prompt"].split("\n")),
                recorded=record,
                new=report,
                stage="gate",
            ) from None
        self.applied += 1
        return PlanAnswer(plan)  # read and checked: the gate takes it as it is


class ReplayModel(CallerBase):
    """A ModelCaller that answers from the recording where the replay is recorded.

    Args:
        session: The replay.
        params: The Agent's generation parameters (part of the request hash).
    """

    def __init__(self, session: ReplaySession, params: dict[str, Any]) -> None:
        self.session = session
        self.params = params
        self.last_source: Literal["live", "recorded"] = "recorded"

    async def answer(self, call: ModelCall) -> ModelReply:
        """Answer from the recording; past the recorded steps, call the live model."""
        position = call_position()
        session = self.session
        if not session.recorded_at(position["step"]):
            self.last_source = "live"
            return await call.to(await session.live_model())
        self.last_source = "recorded"
        params = request_params(self.params, call.response_format)
        digest = request_hash(call.messages, call.tools, params)
        record = session.tape.take_model(digest, position["step"])
        if record is None:
            request = ModelRequest(
                messages=list(call.messages), tools=list(call.tools), params=params
            )
            raise await session.model_divergence(position, request)
        if record["error"] is not None or record["message"] is None:
            raise _model_error(record["error"] or {})
        return ModelReply(
            message=recorded_reply(record, record["message"]),
            usage=dict(record["usage"]),
            latency_ms=record["latency_ms"],
        )


class ReplayToolBox(DelegatingToolBox):
    """A ToolBox that answers tool calls from the recording where the replay is recorded.

    Everything but ``execute`` comes from the Agent's tool box, so a changed schema or a removed
    tool changes the replayed requests (and is reported as a divergence).
    """

    def __init__(self, session: ReplaySession, inner: ToolBox) -> None:
        super().__init__(inner)
        self.session = session
        self.last_source: Literal["live", "recorded"] = "recorded"

    async def execute(self, call: ToolCall, tool_ctx: dict[str, Any]) -> ToolResult:
        """The recorded result (no tool runs), or a live call where the replay is live."""
        position = call_position()
        if not self.session.recorded_at(position["step"]):
            self.last_source = "live"
            return await self.inner.execute(call, tool_ctx)
        self.last_source = "recorded"
        iteration = int(tool_ctx.get("iteration", 0))
        record = self.session.tape.take_tool(call, position["step"])
        if record is None:
            raise self.session.tool_divergence(position, call, iteration)
        try:
            return recorded_result(record, call, iteration)
        except CorruptRunError:
            self.session.forget = (iteration, call["id"])  # act journaled it; it never ran
            raise


def plan_hook(session: ReplaySession, original: Hook | None) -> Hook:
    """The ``query_user_plan`` hook of a replay.

    A plan the original got from its hook comes from the recording; a plan it got by pausing
    is left to the driver.
    """

    async def hook(task: str, report: GateReport, ctx: dict[str, Any]) -> Any:
        position = call_position()
        if not session.recorded_at(position["step"]):
            return (
                await call_hook("query_user_plan", original, task, report, ctx)
                if original
                else None
            )
        if session.resuming:  # the gate re-runs on resume: the plan is the resume value
            session.resuming = False
            return None
        record = session.next_plan()
        if record is not None and record["source"] == "hook":
            return session.take_plan(report, position)
        return None

    return hook


def recall_hook(items: list[Any]) -> Hook:
    """A recall hook that gives back what the original run recalled."""

    def hook(task: str, ctx: dict[str, Any]) -> list[Any]:
        return copy.deepcopy(items)

    return hook
