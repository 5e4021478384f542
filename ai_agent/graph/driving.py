"""The run archive's two seams: what it drives runs with, and how the Agent speaks for it.

A replay and a queued plan are runs: the archive decides what to run (a fork of the original, a
plan read from the queue) and hands the driving to the `Runner`, which the Agent's runner fills:
it opens the tools for the span (MCP servers started; the start-up issues handed to the run),
builds the run context (the model, the tools, the recorders), keeps the thread's lease, and
records the outcome. The other way round, each of the Agent's archive methods is
`archive_method` of the archive's method: the call goes to ``agent.archive``.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Protocol, TypeVar, cast

if TYPE_CHECKING:
    from langgraph.types import Command, StateSnapshot

    from ai_agent.checkpoints import Lease
    from ai_agent.context import Hooks, ModelCaller, RunContext, ToolBox
    from ai_agent.graph.archive import RunArchive
    from ai_agent.graph.result import RunResult
    from ai_agent.state import Issue, UserPlan

__all__ = ["Runner", "archive_method"]

P = ParamSpec("P")
R = TypeVar("R")


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
        self, thread_id: str, graph_input: Any, *, issues: Sequence[Issue] = ()
    ) -> RunResult:
        """Run the graph on a thread (its lease held by the caller) and record the outcome.

        ``issues`` (from the span's `tool_session`) are raised by the run's first draft.
        """

    async def resume_input(
        self,
        thread_id: str,
        snapshot: StateSnapshot,
        plan: UserPlan | Mapping[str, Any] | None,
        *,
        token_required: bool = False,
    ) -> Command[Any] | None:
        """The graph input that continues a run, once every check of a resume passed."""

    async def model(self) -> ModelCaller:
        """The live model caller (built when first needed)."""

    def generation_params(self) -> dict[str, Any]:
        """The generation parameters recorded with every model request."""

    def scrub(self, value: Any) -> Any:
        """``value`` with every configured secret masked."""


def archive_method(
    method: Callable[Concatenate[RunArchive, P], R],
) -> Callable[Concatenate[Any, P], R]:
    """A method of the Agent that is the archive's method of the same name.

    The Agent keeps the archive's signature, docstring and examples (``help(agent.history)``),
    and whether it is a coroutine function; the call goes to ``self.archive``.
    """
    name = method.__name__

    def call(self: Any, *args: P.args, **kwargs: P.kwargs) -> R:
        return cast(R, getattr(self.archive, name)(*args, **kwargs))

    async def call_async(self: Any, *args: P.args, **kwargs: P.kwargs) -> Any:
        return await getattr(self.archive, name)(*args, **kwargs)

    delegate: Any = call_async if inspect.iscoroutinefunction(method) else call
    return cast(Callable[Concatenate[Any, P], R], functools.update_wrapper(delegate, method))
