"""The translation from the engine's progress events to the typed events of `ai_agent.events`.

The events themselves, and the order a stream yields them in, are described in
`ai_agent.events`; they are named here too, for code that imports them from here.

Examples:
    >>> translate = EventTranslator()
    >>> translate({"type": "model_delta", "detail": "Hi", "iteration": 1})
    [ModelDelta(text='Hi', iteration=1)]
    >>> translate({"type": "model_finished", "detail": "Hi", "iteration": 1,
    ...            "data": {"tool_calls": []}})
    [FinalDelta(text='Hi')]
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ai_agent.context import Event
from ai_agent.events import (
    Compacted,
    FinalDelta,
    GatePaused,
    GateResumed,
    LifecycleEvent,
    ModelDelta,
    ModelRetry,
    RunFinished,
    RunStarted,
    StageFinished,
    StageStarted,
    StreamEvent,
    ToolFinished,
    ToolOutput,
    ToolStarted,
)
from ai_agent.observability.tooldata import ToolTelemetry, tool_telemetry

__all__ = [
    "Compacted",
    "EventTranslator",
    "FinalDelta",
    "GatePaused",
    "GateResumed",
    "LifecycleEvent",
    "ModelDelta",
    "ModelRetry",
    "RunFinished",
    "RunStarted",
    "StageFinished",
    "StageStarted",
    "StreamEvent",
    "ToolFinished",
    "ToolOutput",
    "ToolStarted",
    "lifecycle_event",
]

# Text held back before it is known whether a turn is the final answer or a tool call. Past this
# many characters without a tool call the turn is taken to be prose and streams live.
HOLD_CHARS = 256


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
        return [_stage_started(event)]

    def _stage_finished(self, event: Event) -> list[StreamEvent]:
        return [_stage_finished(event)]

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
        return [_retry(event)]

    def _tool_started(self, event: Event) -> list[StreamEvent]:
        return [_tool_started(event)]

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
        return [_tool_finished(event)]

    def _gate_paused(self, event: Event) -> list[StreamEvent]:
        return [_gate_paused(event)]


# Builders of the events that are both stream and lifecycle events (no translator state).


def _stage_started(event: Event) -> StageStarted:
    return StageStarted(str(event.get("stage", "")), int(event.get("iteration", 0)))


def _stage_finished(event: Event) -> StageFinished:
    return StageFinished(
        str(event.get("stage", "")),
        int(event.get("iteration", 0)),
        float(event.get("duration_ms", 0.0)),
    )


def _retry(event: Event) -> ModelRetry:
    wait = float(event.get("duration_ms", 0.0)) / 1000
    return ModelRetry(str(event.get("detail", "")), wait, int(event.get("iteration", 0)))


def _tool_started(event: Event) -> ToolStarted:
    call_id = str(_data(event).get("call_id", ""))
    return ToolStarted(str(event.get("tool", "")), call_id, int(event.get("iteration", 0)))


def _gate_paused(event: Event) -> GatePaused:
    report = event.get("data")
    return GatePaused(int(event.get("iteration", 0)), report if report else None)


def _tool_finished(event: Event) -> ToolFinished:
    data = _data(event)
    call, result = data.get("call"), data.get("result")
    facts = tool_telemetry(call, result) if call and result else ToolTelemetry()
    return ToolFinished(
        str(event.get("tool", "")),
        str(data.get("call_id", "")),
        str(event.get("detail", "")),
        float(event.get("duration_ms", 0.0)),
        int(event.get("iteration", 0)),
        facts,
    )


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list | tuple) else ()


def _gate_resumed(event: Event) -> GateResumed:
    data = _data(event)
    plan: Mapping[str, Any] = data.get("plan") or {}
    return GateResumed(
        int(event.get("iteration", 0)),
        str(data.get("source", "resume")),
        bool(plan.get("allow_continue", True)),
        _strings(plan.get("approve")),
        _strings(plan.get("deny")),
        _strings(plan.get("activate_tools")),
    )


def _compacted(event: Event) -> Compacted:
    data = _data(event)
    return Compacted(
        int(event.get("iteration", 0)),
        str(data.get("strategy", "")),
        int(data.get("tokens_before", 0)),
        int(data.get("tokens_after", 0)),
    )


def lifecycle_event(event: Event) -> LifecycleEvent | None:
    """The typed lifecycle event for a progress event, or None (deltas, output, waiting...).

    Examples:
        >>> lifecycle_event({"type": "stage_finished", "stage": "act", "iteration": 2,
        ...                  "duration_ms": 1.5})
        StageFinished(stage='act', iteration=2, duration_ms=1.5)
        >>> lifecycle_event({"type": "model_delta", "detail": "Hi"}) is None
        True
    """
    build = _LIFECYCLE.get(str(event.get("type", "")))
    return build(event) if build is not None else None


_LIFECYCLE: dict[str, Callable[[Event], LifecycleEvent]] = {
    "stage_started": _stage_started,
    "stage_finished": _stage_finished,
    "model_retry": _retry,
    "tool_started": _tool_started,
    "gate_paused": _gate_paused,
    "tool_finished": _tool_finished,
    "gate_resumed": _gate_resumed,
    "compacted": _compacted,
}


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
