"""BaseTool: a tool as a small class (the tool-oversight spec's form).

A subclass gives a name, a description, a category and ``async execute(**kwargs)``; it may
override ``format_result`` (the line shown in traces), ``preview`` (what a person sees before
approving) and ``escalate`` (why one call needs a person even when its category runs unasked).

The arguments' schema comes from ``execute``'s signature and its docstring's ``Args:``, exactly as
for ``@tool`` functions; an ``execute(self, **kwargs)`` without named parameters takes any object
unless the class sets ``parameters`` to a JSON schema. A parameter named ``ctx`` receives the tool
context (thread id, iteration, working directory, ``env``).

Registering an instance adapts it into a ToolSpec (`ai_agent.tools.adapters.as_tool_spec`).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ai_agent.state import ToolResult
from ai_agent.tools.results import default_summary
from ai_agent.tools.spec import ToolCategory

__all__ = ["BaseTool"]


class BaseTool(ABC):
    """Base class of class-based tools.

    Class attributes a subclass may set: ``requires_env`` (environment variables it needs),
    ``timeout`` (seconds), ``parameters`` (an explicit JSON schema), ``group``.

    Examples:
        >>> import asyncio
        >>> class Shout(BaseTool):
        ...     name = "shout"
        ...     description = "Upper-case a text."
        ...     category = ToolCategory.READ_ONLY
        ...
        ...     async def execute(self, text: str) -> ToolResult:
        ...         '''Shout.
        ...
        ...         Args:
        ...             text: What to shout.
        ...         '''
        ...         return {"status": "ok", "content": text.upper()}
        >>> tool = Shout()
        >>> asyncio.run(tool.execute(text="hi"))
        {'status': 'ok', 'content': 'HI'}
        >>> tool.format_result({"status": "ok", "content": "HI"})
        'shout: HI'
    """

    requires_env: ClassVar[Sequence[str]] = ()
    timeout: ClassVar[float | None] = None
    parameters: ClassVar[Mapping[str, Any] | None] = None
    group: ClassVar[str | None] = None

    @property
    @abstractmethod
    def name(self) -> str:
        """Unique tool identifier (dots namespace it)."""

    @property
    @abstractmethod
    def description(self) -> str:
        """What the tool does, for the model and for people."""

    @property
    @abstractmethod
    def category(self) -> ToolCategory:
        """The oversight category that decides whether a call needs a person."""

    if TYPE_CHECKING:
        # For type checkers ``execute`` takes any parameters, so a subclass can name its own
        # (``async def execute(self, text: str)``) without breaking the override rules.
        execute: Callable[..., Awaitable[Any]]
    else:

        @abstractmethod
        async def execute(self, **kwargs: Any) -> ToolResult:
            """Run the tool with the model's (validated) arguments."""

    def format_result(self, result: ToolResult) -> str:
        """The human-readable line for a result, shown in traces."""
        return default_summary(self.name, result)

    def preview(self, args: dict[str, Any]) -> str:
        """What a call would do, shown to a person deciding on it."""
        return f"{self.name}({json.dumps(args, sort_keys=True, ensure_ascii=False)})"

    def escalate(self, args: dict[str, Any]) -> str | None:
        """Why this call needs a person even under an ``auto`` policy; None when it does not."""
        return None
