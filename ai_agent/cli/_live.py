"""Live output of a streamed run: the answer on stdout as it arrives, progress on stderr.

stdout carries only the final answer (so ``ai-agent "task" > answer.txt`` still works); status
lines, retries and tool output go to stderr as they happen. The answer and the tool output are
shown through a `VisibleStream` each, so an escape sequence split over two pieces is still shown
as one escape.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TextIO

from ai_agent.events import (
    FinalDelta,
    GatePaused,
    ModelRetry,
    RunFinished,
    StageStarted,
    StreamEvent,
    ToolFinished,
    ToolOutput,
    ToolStarted,
)
from ai_agent.graph import RunResult
from ai_agent.visible import VisibleStream, visible

__all__ = ["LivePrinter", "consume"]


@dataclass
class LivePrinter:
    """Prints stream events; remembers what of the answer it already printed."""

    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)
    answer: list[str] = field(default_factory=list)
    _tool_line_open: bool = False
    _answer_shown: VisibleStream = field(default_factory=lambda: VisibleStream("text"))
    _tool_shown: VisibleStream = field(default_factory=lambda: VisibleStream("text"))

    def __call__(self, event: StreamEvent) -> None:
        """Print one event where it belongs."""
        if isinstance(event, FinalDelta):
            self.answer.append(event.text)
            self.out.write(self._answer_shown.feed(event.text))
            self.out.flush()
        elif isinstance(event, ToolOutput):
            self.err.write(self._tool_shown.feed(event.text))
            self._tool_line_open = not event.text.endswith("\n")
            self.err.flush()
        else:
            line = _status(event)
            if line:
                self.end_tool_output()
                print(line, file=self.err, flush=True)

    def end_tool_output(self) -> None:
        """Show what a tool's output still holds back, and end its line."""
        rest = self._tool_shown.flush()
        self.err.write(rest)
        if self._tool_line_open:
            self.err.write("\n")
            self._tool_line_open = False

    def end_answer(self) -> None:
        """Show what the answer still holds back, and end its line."""
        self.out.write(self._answer_shown.flush())
        if self.answer:
            self.out.write("\n")
        self.out.flush()

    @property
    def streamed(self) -> str:
        """The answer text printed so far."""
        return "".join(self.answer)


def _status(event: StreamEvent) -> str:
    if isinstance(event, StageStarted) and event.stage == "draft":
        return f"[{event.iteration + 1}] draft: waiting for the model"
    if isinstance(event, ModelRetry):
        error = visible(str(event.error))
        return f"[{event.iteration}] draft: {error}; retrying in {event.wait_seconds:.1f}s"
    if isinstance(event, ToolStarted):
        # The phase's plan line first (on its first call), then the call's status line.
        plan = f"[{event.iteration}] plan: {visible(event.plan)}\n" if event.plan else ""
        doing = visible(event.status) if event.status else f"running {visible(event.tool)}"
        return f"{plan}[{event.iteration}] act: {doing}"
    if isinstance(event, ToolFinished):
        tool = visible(event.tool)
        return f"[{event.iteration}] act: {tool} {event.status} ({event.duration_ms:.0f} ms)"
    if isinstance(event, GatePaused):
        return f"[{event.iteration}] gate: paused for a plan"
    return ""


async def consume(events: AsyncIterator[StreamEvent], printer: LivePrinter) -> RunResult:
    """Print a stream and return its RunResult."""
    result: RunResult | None = None
    async for event in events:
        if isinstance(event, RunFinished):
            result = event.result
        else:
            printer(event)
    printer.end_tool_output()
    printer.end_answer()
    if result is None:  # pragma: no cover - a stream always ends with RunFinished
        raise RuntimeError("the stream ended without a RunFinished event")
    return result
