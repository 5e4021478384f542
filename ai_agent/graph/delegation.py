"""How the Agent offers its collaborators' methods: one line each, with their docstrings.

``run = delegated("_runner", PipelineRunner.run)`` on the Agent is the runner's ``run``: the
same signature, docstring and examples (``help(agent.run)``), and a coroutine function when it
is one; the call goes to the collaborator the Agent holds in that attribute.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar, cast

if TYPE_CHECKING:
    from ai_agent.graph.archive import RunArchive

__all__ = ["archive_method", "delegated"]

P = ParamSpec("P")
R = TypeVar("R")


def delegated(
    collaborator: str, method: Callable[Concatenate[Any, P], R]
) -> Callable[Concatenate[Any, P], R]:
    """A method of the Agent that is ``method`` of the collaborator held in ``collaborator``.

    The Agent keeps the collaborator's signature, docstring and examples (``help(agent.run)``),
    and whether it is a coroutine function; the call goes to ``getattr(self, collaborator)``.
    """
    name = method.__name__

    def call(self: Any, *args: P.args, **kwargs: P.kwargs) -> R:
        return cast(R, getattr(getattr(self, collaborator), name)(*args, **kwargs))

    async def call_async(self: Any, *args: P.args, **kwargs: P.kwargs) -> Any:
        return await getattr(getattr(self, collaborator), name)(*args, **kwargs)

    delegate: Any = call_async if inspect.iscoroutinefunction(method) else call
    return cast(Callable[Concatenate[Any, P], R], functools.update_wrapper(delegate, method))


def archive_method(
    method: Callable[Concatenate[RunArchive, P], R],
) -> Callable[Concatenate[Any, P], R]:
    """A method of the Agent that is the archive's method of the same name (``self.archive``)."""
    return delegated("archive", method)
