"""What a stream and ``Agent(on_event=...)`` make of the engine's typed events.

The events themselves, and the order a stream yields them in, are described in
`ai_agent.events` (import them from there). The engine's
producers build them; here they are only shown: `StreamView` picks a stream's events and holds
back the final answer until it is known not to be a tool phase, and `rendering` gives the
``on_event`` callback its dicts.

Examples:
    >>> from ai_agent.events import _ModelFinished
    >>> view = StreamView()
    >>> view(ModelDelta("Hi", 1))
    [ModelDelta(text='Hi', iteration=1)]
    >>> view(_ModelFinished("Hi", (), 1))
    [FinalDelta(text='Hi')]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

from ai_agent.context import Event
from ai_agent.events import (
    CustomEvent,
    FinalDelta,
    GatePaused,
    ModelDelta,
    ModelRetry,
    NodePaused,
    ProgressEvent,
    StageFinished,
    StageStarted,
    StreamEvent,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    _ModelFinished,
    _ModelToolCall,
    _ModelWaiting,
    _TypedAnswer,
)

__all__ = ["StreamView", "rendering"]

# Text held back before it is known whether a turn is the final answer or a tool call. A turn
# offered no tools can only be an answer: past this many characters it streams live. A turn that
# may still call a tool is held whole (its text may be a tool phase's prose, however long): only
# the final answer's text streams as the final answer.
HOLD_CHARS = 256

# The events a stream passes on as they are (model text and tool output unless quiet).
_PASSED = (
    *(StageStarted, StageFinished, ModelRetry, ToolStarted, ToolFinished, GatePaused),
    *(NodePaused, CustomEvent),
)
_CHATTY = (ModelDelta, ToolOutput)


@dataclass
class StreamView:
    """The stream's events for each of a run's events (``Agent.astream``).

    Args:
        quiet_tools: Leave out model deltas and tool output: stream only the final answer.
        hold_chars: Text held back per turn before it streams as the final answer.
    """

    quiet_tools: bool = False
    hold_chars: int = HOLD_CHARS
    _held: list[str] = field(default_factory=list)
    _mode: str = "holding"  # holding -> live | tool
    _streamed: bool = False
    _tools_offered: bool = False
    _typed: bool = False

    def __call__(self, event: ProgressEvent) -> list[StreamEvent]:
        """The stream events for one event of the run (often none, sometimes two)."""
        if isinstance(event, StageStarted) and event.stage == "draft":
            self._held, self._mode, self._streamed = [], "holding", False
        if isinstance(event, _ModelWaiting):
            self._tools_offered, self._typed = event.tools_offered, event.typed
            return []
        if isinstance(event, ModelDelta):
            return self._delta(event)
        if isinstance(event, _ModelToolCall):
            if self._mode == "holding":
                self._held, self._mode = [], "tool"
            return []
        if isinstance(event, _ModelFinished | _TypedAnswer):
            return self._finished(event)
        if isinstance(event, _CHATTY):
            return [] if self.quiet_tools else [event]
        return [event] if isinstance(event, _PASSED) else []

    def _delta(self, event: ModelDelta) -> list[StreamEvent]:
        self._streamed = True
        out: list[StreamEvent] = [] if self.quiet_tools else [event]
        if self._mode == "live":
            out.append(FinalDelta(event.text))
        elif self._mode == "holding":
            self._held.append(event.text)
            held = "".join(self._held)
            if len(held) > self.hold_chars and not (self._tools_offered or self._typed):
                self._held, self._mode = [], "live"
                out.append(FinalDelta(held))
        return out

    def _finished(self, event: _ModelFinished | _TypedAnswer) -> list[StreamEvent]:
        if isinstance(event, _TypedAnswer):  # a typed run's answer: no draft's text was it
            return [FinalDelta(event.text)]
        mode, held = self._mode, "".join(self._held)
        self._held, self._mode = [], "tool" if event.tool_calls else "done"
        if event.tool_calls or mode != "holding" or self._typed:
            return []
        text = held if self._streamed else event.text
        return [FinalDelta(text)] if text else []


def rendering(
    on_event: Callable[[Event], None] | None,
) -> Callable[[ProgressEvent], None] | None:
    """``Agent(on_event=...)`` as a sink of typed events: each reaches it as its dict.

    This is the one place the dicts are made (by each event's ``progress()``).

    Examples:
        >>> seen = []
        >>> rendering(seen.append)(StageStarted("act", 2))
        >>> seen
        [{'type': 'stage_started', 'stage': 'act', 'iteration': 2}]
        >>> rendering(None) is None
        True
    """
    if on_event is None:
        return None
    callback = on_event

    def render(event: ProgressEvent) -> None:
        callback(cast(Event, event.progress()))

    return render
