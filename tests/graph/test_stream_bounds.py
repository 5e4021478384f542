"""What a stream holds for a consumer that reads slowly or not at all: bounded, status kept.

Each test stops reading, lets the run go as far as it can, then checks how much the run got
ahead of the consumer (counted in characters and events, never in time), and that what is
read afterwards still has every status event and every character it promises.
"""

from __future__ import annotations

import asyncio
import re
import threading
import tracemalloc
from typing import Any

import pytest

from ai_agent import ToolCategory, ToolSpec
from ai_agent.events import (
    FinalDelta,
    ModelDelta,
    RunFinished,
    StageFinished,
    StreamEvent,
    ToolFinished,
    ToolOutput,
    ToolStarted,
)
from ai_agent.graph import streaming
from tests.graph.conftest import MakeAgent, call, text

BOUND = 64 * 1024  # characters a stream may hold (small, so the tests stay quick)
PIECE = 4096  # characters per on_output call
TOTAL = 8 * 1024 * 1024  # characters a tool prints: far past the bound


@pytest.fixture(autouse=True)
def small_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    # raising=False: the same tests run against code without the bound, and fail there.
    monkeypatch.setattr(streaming, "MAX_WAITING_CHARS", BOUND, raising=False)
    monkeypatch.setattr(streaming, "MAX_WAITING_EVENTS", 16, raising=False)


class Printer:
    """A tool that prints TOTAL characters, counting what it got to print so far."""

    def __init__(self, *, is_async: bool = False) -> None:
        self.sent = 0
        self.done = threading.Event()
        self.peak = 0  # traced memory grown while it printed (when tracemalloc is on)
        self.spec = ToolSpec(
            "printer",
            self._async if is_async else self._sync,
            description="Print a lot.",
            category=ToolCategory.READ_ONLY,
            parameters={"type": "object", "properties": {}},
        )

    def _piece(self, i: int) -> str:
        return f"{i:07d}" + "x" * (PIECE - 8) + "\n"

    def _sync(self, args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        start = self._begin()
        for i in range(TOTAL // PIECE):
            ctx["on_output"](self._piece(i))
            self.sent += PIECE
        return self._end(start)

    async def _async(self, args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        start = self._begin()
        for i in range(TOTAL // PIECE):
            ctx["on_output"](self._piece(i))
            self.sent += PIECE
            await asyncio.sleep(0)  # like a shell command's output, read chunk by chunk
        return self._end(start)

    def _begin(self) -> int:
        if not tracemalloc.is_tracing():
            return 0
        tracemalloc.reset_peak()
        return tracemalloc.get_traced_memory()[0]

    def _end(self, start: int) -> dict[str, Any]:
        if tracemalloc.is_tracing():
            self.peak = tracemalloc.get_traced_memory()[1] - start
        self.done.set()
        return {"status": "ok", "content": "printed"}

    def expected(self) -> str:
        return "".join(self._piece(i) for i in range(TOTAL // PIECE))


def output_of(events: list[StreamEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, ToolOutput))


def check_statuses(events: list[StreamEvent]) -> None:
    """Every status event a run of one tool call and one answer has, in order."""
    assert [type(e) for e in events if isinstance(e, ToolStarted | ToolFinished)] == [
        ToolStarted,
        ToolFinished,
    ]
    stages = [e.stage for e in events if isinstance(e, StageFinished)]
    assert stages[:3] == ["recall", "draft", "decide"]
    assert stages[-2:] == ["finalize", "persist"]
    assert isinstance(events[-1], RunFinished)
    assert events[-1].result.status == "completed"
    assert events[-1].result.final_text == "printed it"


def check_counted(printer: Printer, events: list[StreamEvent]) -> None:
    """The tool printed everything; the stream kept a bounded part and counted the rest.

    What is kept, read with the notes, is the tool's output in order: each kept stretch is
    the text at that point, and each note says how much was passed over there.
    """
    assert printer.sent == TOTAL  # never held back by the consumer
    parts = re.split(
        r"\n\[\.\.\. (\d+) more characters of output not streamed[^\]]*\]\n",
        output_of(events),
    )
    expected, at, kept = printer.expected(), 0, 0
    for i, part in enumerate(parts):
        if i % 2:  # a note's count
            at += int(part)
        else:
            assert part == expected[at : at + len(part)]
            at, kept = at + len(part), kept + len(part)
    assert at == TOTAL  # every character is kept or counted, in order
    assert len(parts) > 1 and kept <= 2 * BOUND + 2 * PIECE
    check_statuses(events)


@pytest.mark.parametrize("is_async", [False, True], ids=["sync tool", "async tool"])
async def test_a_tools_output_past_the_bound_is_counted_not_kept(
    make_agent: MakeAgent, is_async: bool
) -> None:
    # The consumer reads nothing while the tool prints 8 MiB: the tool is not held back (it
    # finishes while the consumer waits for it), and the stream keeps a bounded start.
    printer = Printer(is_async=is_async)
    agent = make_agent([call("printer"), text("printed it")], tools=[printer.spec])
    events: list[StreamEvent] = []
    async with agent:
        async for event in agent.astream("print"):
            events.append(event)
            if isinstance(event, ToolStarted):
                assert await asyncio.to_thread(printer.done.wait, 60)
    check_counted(printer, events)


def test_the_sync_stream_has_the_same_bound(make_agent: MakeAgent) -> None:
    printer = Printer()
    agent = make_agent([call("printer"), text("printed it")], tools=[printer.spec])
    events: list[StreamEvent] = []
    for event in agent.stream("print"):
        events.append(event)
        if isinstance(event, ToolStarted):
            assert printer.done.wait(60)
    check_counted(printer, events)


async def test_many_model_deltas_merge_while_the_consumer_lags(make_agent: MakeAgent) -> None:
    answer = " ".join(f"word{i}" for i in range(3000))
    agent = make_agent([text(answer)])
    finished = asyncio.Event()
    agent.add_listener(lambda _: finished.set(), RunFinished)
    events: list[StreamEvent] = []
    async with agent:
        async for event in agent.astream("write a lot"):
            events.append(event)
            if len(events) == 1:
                await asyncio.wait_for(finished.wait(), 60)  # the whole run, nothing read
    deltas = [e for e in events if isinstance(e, ModelDelta | FinalDelta)]
    statuses = len(events) - len(deltas)
    # One entry per source (model, answer) between two status events once 16 wait, instead
    # of one per token: about 6,000 events.
    assert len(deltas) <= 16 + 2 * (statuses + 1)
    assert "".join(e.text for e in deltas if isinstance(e, ModelDelta)) == answer
    assert "".join(e.text for e in deltas if isinstance(e, FinalDelta)) == answer
    assert isinstance(events[-1], RunFinished)
    assert events[-1].result.final_text == answer


async def test_a_quiet_stream_holds_no_tool_output(make_agent: MakeAgent) -> None:
    # quiet_tools filters before anything waits: the tool is not held back by output the
    # stream never yields, and that output takes no memory while the consumer is away.
    printer = Printer()
    agent = make_agent([call("printer"), text("printed it")], tools=[printer.spec])
    events: list[StreamEvent] = []
    tracemalloc.start()
    try:
        async with agent:
            async for event in agent.astream("print", quiet_tools=True):
                events.append(event)
                if isinstance(event, ToolStarted):
                    assert await asyncio.to_thread(printer.done.wait, 60)
    finally:
        tracemalloc.stop()
    assert printer.sent == TOTAL
    assert printer.peak < TOTAL // 8  # the output went nowhere
    assert output_of(events) == ""
    check_statuses(events)
