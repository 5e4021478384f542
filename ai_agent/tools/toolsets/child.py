"""ChildToolset: a child agent (a subagent) offered to a parent agent as one tool.

``child.as_tool(name=..., description=...)`` makes one (`ai_agent.Agent.as_tool`). The tool's
arguments are the subtask (``task``) and, optionally, what the child should know besides
(``context``); its result is the child's final answer, with the child's thread id, status and
token usage in ``meta`` (act rolls the usage up into the parent's, so the parent's budget
counts its children).

The toolset does not run the child itself: the parent Agent binds it to a `Spawn`, the child
running on the parent's database (``ai_agent.graph.subagents``), when it takes the toolset
among its tools. The tools layer stays below the graph layer that way. A toolset belongs to one
parent; a parent given one that another has taken binds a `ChildToolset.copy`.

The child's thread id is derived from the parent's call (``<parent thread>.<call id>``), so the
same call always names the same child: a parent resumed after a crash, whose journal has the
call's intent but no outcome, runs the call again and re-attaches to the child's thread, which
goes on from its own last checkpoint (its own journal keeps its own calls from running twice).
That is why the tool is ``read_only`` by default: running it again repeats nothing.

Examples:
    >>> toolset = ChildToolset(object(), name="research", description="Research a question.")
    >>> [spec.name for spec in toolset.tools()], toolset.tools()[0].category.value
    (['research'], 'read_only')
    >>> sorted(toolset.tools()[0].parameters["properties"])
    ['context', 'task']
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol, cast

from ai_agent.errors import ConfigError
from ai_agent.state import ToolResult
from ai_agent.tools.spec import ToolCategory, ToolSpec
from ai_agent.tools.toolsets.base import Toolset

__all__ = ["ChildToolset", "Spawn", "child_task"]

# A child may run for as long as its own pipeline takes: well past a plain tool's timeout.
DEFAULT_CHILD_TIMEOUT = 600.0
# The spawn stops its child when the timeout runs out, and reads what it spent (the parent's
# budget counts it); the tool's own timeout, past this, is only a backstop for that.
_BACKSTOP_SECONDS = 30.0

_PARAMETERS = {
    "type": "object",
    "properties": {
        "task": {"type": "string", "description": "The subtask, in plain language."},
        "context": {
            "type": "string",
            "description": "What the helper should know besides (facts, constraints).",
        },
    },
    "required": ["task"],
    "additionalProperties": False,
}


class Spawn(Protocol):
    """Runs the child on the parent's database as the child of one parent call."""

    async def __call__(
        self,
        task: str,
        *,
        parent_thread: str,
        parent_iteration: int,
        parent_call_id: str,
        plan: Mapping[str, Any] | None = None,
        usage: Mapping[str, Any] | None = None,
        allowance: Mapping[str, Any] | None = None,
        time_limit: float | None = None,
    ) -> ToolResult:
        """Run (or re-attach to) the child of this call; its outcome as a tool result.

        ``plan`` is the plan that answered the parent's gate, handed on to a child that
        waits at its own gate; ``usage`` the parent's usage so far (its budget's spent part);
        ``allowance`` the budget allowance a person granted the parent, handed down;
        ``time_limit`` the seconds the child may run before it is stopped (its result then
        still carries what it spent).
        """


def child_task(task: str, context: str | None) -> str:
    """The task a child is given: the subtask, then the context when there is one.

    Examples:
        >>> child_task("Sum the list.", None)
        'Sum the list.'
        >>> print(child_task("Sum the list.", "The list is 1, 2, 3."))
        Sum the list.
        <BLANKLINE>
        Context:
        The list is 1, 2, 3.
    """
    return f"{task}\n\nContext:\n{context}" if context else task


class ChildToolset(Toolset):
    """A child agent as one tool of a parent agent (see the module docstring).

    Args:
        child: The child agent (`ai_agent.Agent`); the tools layer only holds it for the
            parent that binds this toolset.
        name: The tool's name (what the parent's model calls).
        description: What the child does, for the parent's model.
        category: The tool's oversight category in the parent (default ``read_only``: running
            the call again re-attaches to the same child, see the module docstring).
        timeout: Seconds the child may run for one call (default 600); when they run out the
            child is cancelled with the call.
    """

    def __init__(
        self,
        child: object,
        *,
        name: str,
        description: str,
        category: ToolCategory | str = ToolCategory.READ_ONLY,
        timeout: float = DEFAULT_CHILD_TIMEOUT,
    ) -> None:
        self.name = f"child {name}"
        self.child = child
        self._options = {
            "name": name,
            "description": description,
            "category": category,
            "timeout": timeout,
        }
        self._spawn: Spawn | None = None
        self._owner: object = None
        self._spec = ToolSpec(
            name,
            self._call,
            description=description,
            parameters=_PARAMETERS,
            category=category,  # type: ignore[arg-type]  # checked by ToolSpec
            timeout=timeout,  # checked by ToolSpec; the backstop is added below
            group="subagents",
            concurrent=True,  # one cycle's children run together (max_concurrent_calls)
            engine_meta=True,  # its results carry the child's usage, and say when it paused
        )
        self._spec = replace(self._spec, timeout=timeout + _BACKSTOP_SECONDS)

    def tools(self) -> Sequence[ToolSpec]:
        """The one tool that delegates to the child."""
        return [self._spec]

    @property
    def bound(self) -> bool:
        """Whether a parent has taken this toolset (`bind`)."""
        return self._owner is not None

    def copy(self) -> ChildToolset:
        """The same child tool, not bound to any parent yet (for another parent)."""
        return ChildToolset(self.child, **self._options)  # type: ignore[arg-type]

    def bind(self, owner: object, spawn: Spawn) -> None:
        """Run the child through ``spawn`` when ``owner`` (the parent Agent) calls the tool.

        Raises:
            ConfigError: another parent has this toolset already.
        """
        if self._owner is not None and self._owner is not owner:
            raise ConfigError(
                f"the subagent tool {self._spec.name!r} belongs to another agent already; "
                "call child.as_tool(...) once for each parent"
            )
        self._owner, self._spawn = owner, spawn

    async def release(self, call_id: str, thread_id: str) -> ToolResult | None:
        """Stop the child of the parent's call ``call_id`` (of run ``thread_id``) at its gate.

        The parent's plan denied the call while the child waited at its own gate, or stopped
        the parent: the child is cancelled as its own gate would cancel it (its run leaves the
        inbox, answered), and the outcome carries all it spent, for the parent to count. None
        when the call has no child, or the toolset no parent.
        """
        # A spawn may know how (the Agent's does: `ai_agent.graph.subagents.Subagent.release`).
        release = getattr(self._spawn, "release", None)
        if release is None:
            return None
        released = await release(parent_thread=thread_id, parent_call_id=call_id)
        return cast(ToolResult | None, released)

    async def _call(self, args: dict[str, Any], ctx: dict[str, Any]) -> ToolResult:
        thread, call_id = ctx.get("thread_id"), ctx.get("call_id")
        if self._spawn is None or not thread or not call_id:
            return ToolResult(
                status="error",
                error=f"{self._spec.name} is a subagent tool: it runs only as a call of a run of "
                "the agent it was given to (Agent(tools=[child.as_tool(...)]))",
                meta={"code": "TOOL_ERROR"},
            )
        context = args.get("context")
        return await self._spawn(
            child_task(str(args["task"]), str(context) if context else None),
            parent_thread=str(thread),
            parent_iteration=int(ctx.get("iteration") or 0),
            parent_call_id=str(call_id),
            plan=ctx.get("plan") or None,
            usage=ctx.get("usage") or None,
            allowance=ctx.get("budget_allowance") or None,
            time_limit=self._options["timeout"],  # type: ignore[arg-type]  # a float, given above
        )
