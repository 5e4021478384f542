"""Spans: toolsets entered together for a span that may call their tools, or held open.

Each span (a run, a resume, a replay, a plan served, a direct call) enters every toolset, all
at once (MCP servers start together), and leaves them when it ends; a toolset counts its
spans itself (an MCP server stops when its last span ends). While `ToolsetSpans.hold` is in
force (an ``async with Agent`` block), the first span that enters a toolset keeps that entry
until `ToolsetSpans.aclose`, so the toolset stays open between spans, and every later span
still enters it (an MCP server that failed gets another try, and its restart allowance back).

Examples:
    >>> import asyncio
    >>> from ai_agent.tools.toolsets.base import Toolset
    >>> class Counted(Toolset):
    ...     entered = 0
    ...     def tools(self):
    ...         return []
    ...     async def __aenter__(self):
    ...         self.entered += 1
    ...         return self
    ...     async def __aexit__(self, *exc):
    ...         self.entered -= 1
    >>> counted = Counted()
    >>> spans = ToolsetSpans(lambda: [counted])
    >>> async def demo():
    ...     spans.hold()
    ...     async with spans.session():
    ...         inside = counted.entered
    ...     between = counted.entered
    ...     await spans.aclose()
    ...     return inside, between, counted.entered
    >>> asyncio.run(demo())
    (1, 1, 0)
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Sequence

from ai_agent.state import Issue
from ai_agent.tools.toolsets.base import Toolset

__all__ = ["ToolsetSpans"]


class ToolsetSpans:
    """The lifecycle of a changing list of toolsets (see the module docstring).

    Args:
        members: The toolsets now (read at each span: toolsets added later take part).
    """

    def __init__(self, members: Callable[[], Sequence[Toolset]]) -> None:
        self._members = members
        self._holding = False
        self._held = contextlib.AsyncExitStack()
        self._held_ids: set[int] = set()

    def hold(self) -> None:
        """Keep the toolsets open between spans until `aclose`."""
        self._holding = True

    async def aclose(self) -> None:
        """Leave what the hold kept open (last entered, first left) and stop holding."""
        self._holding = False
        held, self._held = self._held, contextlib.AsyncExitStack()
        self._held_ids.clear()
        await held.aclose()

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[list[Issue]]:
        """A span: every toolset entered for it. Yields the issues they report."""
        members = list(self._members())
        # Decided before any await, so two spans starting together never both keep an entry.
        kept = {id(t) for t in members if self._holding and id(t) not in self._held_ids}
        self._held_ids |= kept
        async with contextlib.AsyncExitStack() as span:
            entries = [(t, self._held if id(t) in kept else span) for t in members]
            failed = await _enter_all(entries)
            if failed:
                self._held_ids -= {id(t) for t, _ in failed}
                raise failed[0][1]
            yield [issue for toolset in members for issue in toolset.issues()]


async def _enter_all(
    entries: Sequence[tuple[Toolset, contextlib.AsyncExitStack]],
) -> list[tuple[Toolset, BaseException]]:
    """Enter each toolset into its stack, all at once; returns those that failed, and why.

    Every entry runs to its end first, so each one that succeeded is in its stack and is left
    again when the stack closes.
    """
    outcomes = await asyncio.gather(
        *(stack.enter_async_context(toolset) for toolset, stack in entries),
        return_exceptions=True,
    )
    return [
        (toolset, outcome)
        for (toolset, _), outcome in zip(entries, outcomes, strict=True)
        if isinstance(outcome, BaseException)
    ]
