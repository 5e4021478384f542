"""Typed stream events, and the translation from the engine's progress events to them.

``Agent.astream`` / ``Agent.stream`` yield these, in order:

- :class:`StageStarted` / :class:`StageFinished` around each of the nine stages;
- :class:`ModelDelta`: text as the model writes it, every turn (tool phases included);
- :class:`ModelRetry`: a failed model call about to be retried, and how long until then;
- :class:`ToolStarted`, :class:`ToolOutput` (live chunks of a long tool's output),
  :class:`ToolFinished`;
- :class:`GatePaused`: the run stopped at the gate and waits for a plan;
- :class:`FinalDelta`: the final answer's text. It is held back while a turn could still turn out
  to be a tool call, so it never carries tool-phase text; without streaming it arrives in one piece;
- :class:`RunFinished`: the :class:`~ai_agent.graph.result.RunResult`, always last.

With ``quiet_tools=True`` (the "quiet tool phases" policy) :class:`ModelDelta` and
:class:`ToolOutput` are left out: only status events and the final answer are streamed.

Example:
    >>> translate = EventTranslator()
    >>> translate({"type": "model_delta", "detail": "Hi", "iteration": 1})
    [ModelDelta(text='Hi', iteration=1)]
    >>> translate({"type": "model_finished", "detail": "Hi", "iteration": 1,
    ...            "data": {"tool_calls": []}})
    [FinalDelta(text='Hi')]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ai_agent.context import Event
from ai_agent.graph.result import RunResult
from ai_agent.state import GateReport

__all__ = [
    "EventTranslator",
    "FinalDelta",
    "GatePaused",
    "ModelDelta",
    "ModelRetry",
    "RunFinished",
    "StageFinished",
    "StageStarted",
    "StreamEvent",
    "ToolFinished",
    "ToolOutput",
    "ToolStarted",
]

# Text held back before it is known whether a turn is the final answer or a tool call. Past this
# many characters without a tool call the turn is taken to be prose and streams live.
HOLD_CHARS = 256


@dataclass(frozen=True, slots=True)
class StageStarted:
    """A stage began."""

    stage: str
    iteration: int


@dataclass(frozen=True, slots=True)
class StageFinished:
    """A stage ended, after ``duration_ms``."""

    stage: str
    iteration: int
    duration_ms: float


@dataclass(frozen=True, slots=True)
class ModelDelta:
    """Text the model just wrote (any turn)."""

    text: str
    iteration: int


@dataclass(frozen=True, slots=True)
class ModelRetry:
    """A model call failed with a retryable error; the next attempt starts in ``wait_seconds``."""

    error: str
    wait_seconds: float
    iteration: int


@dataclass(frozen=True, slots=True)
class ToolStarted:
    """A tool call began."""

    tool: str
    call_id: str
    iteration: int


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """A chunk of a running tool's output (``stream`` is ``stdout`` or ``stderr``)."""

    tool: str
    call_id: str
    text: str
    stream: str
    iteration: int


@dataclass(frozen=True, slots=True)
class ToolFinished:
    """A tool call ended with ``status`` (ok, error, skipped)."""

    tool: str
    call_id: str
    status: str
    duration_ms: float
    iteration: int


@dataclass(frozen=True, slots=True)
class GatePaused:
    """The run paused at the gate; ``report`` says why and what a plan may do."""

    iteration: int
    report: GateReport | None = None


@dataclass(frozen=True, slots=True)
class FinalDelta:
    """Text of the final answer."""

    text: str


@dataclass(frozen=True, slots=True)
class RunFinished:
    """The run ended (completed, paused, failed or cancelled): always the last event."""

    result: RunResult


StreamEvent = (
    StageStarted
    | StageFinished
    | ModelDelta
    | ModelRetry
    | ToolStarted
    | ToolOutput
    | ToolFinished
    | GatePaused
    | FinalDelta
    | RunFinished
)


def _data(event: Event) -> dict[str, Any]:
    data = event.get("data")
    return data if isinstance(data, dict) else {}


@dataclass
class EventTranslator:
    """Turns the engine's progress events into typed stream events.

    Args:
        quiet_tools: Leave out model deltas and tool output: stream only the final answer.
        hold_chars: Text held back per turn before it streams as the final answer.
    """

    quiet_tools: bool = False
    hold_chars: int = HOLD_CHARS
    _held: list[str] = field(default_factory=list)
    _mode: str = "holding"  # holding -> live | tool
    _streamed: bool = False

    def __call__(self, event: Event) -> list[StreamEvent]:
        """The typed events for one progress event (often none, sometimes two)."""
        handler = _HANDLERS.get(str(event.get("type", "")))
        return handler(self, event) if handler is not None else []

    def _stage_started(self, event: Event) -> list[StreamEvent]:
        if event.get("stage") == "draft":
            self._held, self._mode, self._streamed = [], "holding", False
        return [StageStarted(str(event.get("stage", "")), int(event.get("iteration", 0)))]

    def _stage_finished(self, event: Event) -> list[StreamEvent]:
        return [
            StageFinished(
                str(event.get("stage", "")),
                int(event.get("iteration", 0)),
                float(event.get("duration_ms", 0.0)),
            )
        ]

    def _delta(self, event: Event) -> list[StreamEvent]:
        text = str(event.get("detail", ""))
        self._streamed = True
        out: list[StreamEvent] = []
        if not self.quiet_tools:
            out.append(ModelDelta(text, int(event.get("iteration", 0))))
        if self._mode == "live":
            out.append(FinalDelta(text))
        elif self._mode == "holding":
            self._held.append(text)
            held = "".join(self._held)
            if len(held) > self.hold_chars:
                self._held, self._mode = [], "live"
                out.append(FinalDelta(held))
        return out

    def _tool_call(self, event: Event) -> list[StreamEvent]:
        if self._mode == "holding":
            self._held, self._mode = [], "tool"
        return []

    def _model_finished(self, event: Event) -> list[StreamEvent]:
        calls = _data(event).get("tool_calls") or []
        mode, held = self._mode, "".join(self._held)
        self._held, self._mode = [], "tool" if calls else "done"
        if calls or mode != "holding":
            return []
        text = held if self._streamed else str(event.get("detail", ""))
        return [FinalDelta(text)] if text else []

    def _retry(self, event: Event) -> list[StreamEvent]:
        wait = float(event.get("duration_ms", 0.0)) / 1000
        return [ModelRetry(str(event.get("detail", "")), wait, int(event.get("iteration", 0)))]

    def _tool_started(self, event: Event) -> list[StreamEvent]:
        call_id = str(_data(event).get("call_id", ""))
        return [ToolStarted(str(event.get("tool", "")), call_id, int(event.get("iteration", 0)))]

    def _tool_output(self, event: Event) -> list[StreamEvent]:
        if self.quiet_tools:
            return []
        data = _data(event)
        return [
            ToolOutput(
                str(event.get("tool", "")),
                str(data.get("call_id", "")),
                str(event.get("detail", "")),
                str(data.get("stream", "stdout")),
                int(event.get("iteration", 0)),
            )
        ]

    def _tool_finished(self, event: Event) -> list[StreamEvent]:
        return [
            ToolFinished(
                str(event.get("tool", "")),
                str(_data(event).get("call_id", "")),
                str(event.get("detail", "")),
                float(event.get("duration_ms", 0.0)),
                int(event.get("iteration", 0)),
            )
        ]

    def _gate_paused(self, event: Event) -> list[StreamEvent]:
        report = event.get("data")
        return [GatePaused(int(event.get("iteration", 0)), report if report else None)]


_HANDLERS: dict[str, Callable[[EventTranslator, Event], list[StreamEvent]]] = {
    "stage_started": EventTranslator._stage_started,
    "stage_finished": EventTranslator._stage_finished,
    "model_delta": EventTranslator._delta,
    "model_tool_call": EventTranslator._tool_call,
    "model_finished": EventTranslator._model_finished,
    "model_retry": EventTranslator._retry,
    "tool_started": EventTranslator._tool_started,
    "tool_output": EventTranslator._tool_output,
    "tool_finished": EventTranslator._tool_finished,
    "gate_paused": EventTranslator._gate_paused,
}
