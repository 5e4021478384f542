"""What the run archive drives runs with: the `Runner` protocol, which the Agent's runner fills.

A replay and a queued plan are runs: the archive decides what to run (a fork of the original, a
plan read from the queue) and hands the driving to the `Runner`, which the Agent's runner fills:
it opens the tools for the span (MCP servers started; the start-up issues handed to the run),
builds the run context (the model, the tools, the recorders), keeps the thread's lease, and
records the outcome. The archive imports this protocol, never the runner
(tests/test_layering.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from langgraph.types import Command, StateSnapshot

    from ai_agent.checkpoints import Lease
    from ai_agent.context import Hooks, ModelCaller, RunContext, ToolBox
    from ai_agent.graph.interrupts import Answer
    from ai_agent.graph.result import RunResult
    from ai_agent.state import Issue

__all__ = ["Runner"]


class Runner(Protocol):
    """What the archive drives runs with (replays, queued plans): the Agent's runner."""

    @property
    def hooks(self) -> Hooks:
        """The Agent's hooks (a replay answers some of them from the recording)."""

    def tool_session(self) -> contextlib.AbstractAsyncContextManager[list[Issue]]:
        """The span of a replay or a plan served: the toolsets open; yields their start-up issues.

        The issues (a required MCP server that could not start) go to the run (`invoke`).
        """

    async def context(
        self, thread_id: str, *, model: ModelCaller | None = None, tools: ToolBox | None = None
    ) -> RunContext:
        """The run context of a thread, with the model and tools given (a replay's own)."""

    async def drive(
        self, thread_id: str, graph_input: Any, lease: Lease, context: RunContext | None = None
    ) -> RunResult:
        """Run the graph on a thread whose lease is held, keeping the lease while it runs."""

    def holding(self, lease: Lease) -> contextlib.AbstractAsyncContextManager[None]:
        """Keep a lease (renewed) while the block runs, and give it back after."""

    async def invoke(
        self,
        thread_id: str,
        graph_input: Any,
        *,
        issues: Sequence[Issue] = (),
        plan_id: int | None = None,
    ) -> RunResult:
        """Run the graph on a thread (its lease held by the caller) and record the outcome.

        ``issues`` (from the span's `tool_session`) are raised by the run's first draft.
        ``plan_id``: the claimed plan the run applies, recorded as done with the outcome.
        """

    async def resume_input(
        self,
        thread_id: str,
        snapshot: StateSnapshot,
        plan: Answer,
        *,
        token_required: bool = False,
    ) -> Command[Any] | None:
        """The graph input that continues a run, once every check of a resume passed.

        ``plan``: a plan for the gate, or the answer to a node of the run's pipeline.
        """

    async def record_outcome(
        self, thread_id: str, snapshot: StateSnapshot, *, plan_id: int | None = None
    ) -> RunResult:
        """Write where a run stopped (status, answer, gate, summary) into its run row.

        ``plan_id``: the claimed plan that drove the run, recorded as done in the same write.
        """

    async def remember_rules(self, thread_id: str, command: Any) -> None:
        """Store the always-allow rules the plan being applied asks for (``always_allow``)."""

    async def model(self) -> ModelCaller:
        """The live model caller (built when first needed)."""

    def generation_params(self) -> dict[str, Any]:
        """The generation parameters recorded with every model request."""

    def scrub(self, value: Any) -> Any:
        """``value`` with every configured secret masked."""
