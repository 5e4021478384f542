"""The journal of tool calls: intent before a tool runs, outcome after (spec: crash safety).

`Journal` is the protocol the act stage writes through and `JournalEntry` what it reads back; the
run store implements it. They live apart from `ai_agent.context` (which re-exports both) so the
run store, and every command that reads it, need not import the run context's dataclasses and
protocols (issue 20: ``ai-agent show`` within a quarter of a second).
"""

from __future__ import annotations

from typing import Literal, Protocol, TypedDict

# The state's types are loaded by whatever reads runs anyway; at run time, so that resolving this
# TypedDict's hints works as it did in `ai_agent.context`.
from ai_agent.state import ToolCall, ToolResult

__all__ = ["Journal", "JournalEntry"]


class JournalEntry(TypedDict):
    """The journal's record of one call: an intent, and an outcome once it finished."""

    call_id: str
    tool: str
    status: Literal["intent", "done"]
    result: ToolResult | None
    # When the latest attempt was started: identifies that attempt, so a person's approval to
    # re-run a call whose outcome is unknown covers that attempt only, never a later one.
    attempt: float


class Journal(Protocol):
    """Intent before a tool runs, outcome after: how a crash mid-call is detected on resume."""

    async def lookup(self, thread_id: str, iteration: int, call_id: str) -> JournalEntry | None:
        """The journal entry of one call, or None when it was never started."""

    async def intent(self, thread_id: str, iteration: int, call: ToolCall) -> None:
        """Record that a call is about to run (committed before the tool starts)."""

    async def outcome(
        self, thread_id: str, iteration: int, call: ToolCall, result: ToolResult
    ) -> None:
        """Record a call's result."""

    async def forget(self, thread_id: str, iteration: int, call_id: str) -> None:
        """Drop the intent of a call that will run again (a subagent waiting at its gate)."""
