"""The tool contract: ``ToolSpec(name, fn, requires_env=[...])``, ``fn(args, ctx) -> ToolResult``.

A tool is a plain function (sync or async) that takes the model's arguments as a dict and a small
context dict (thread id, task, iteration, call id, working directory, the values of its
``requires_env`` under ``env``; in a run also ``plan``, the plan that answered the run's gate,
and ``usage``, the run's token usage so far, which a subagent's tool hands on to its child) and
returns a ToolResult dict. Recoverable problems are returned as
``{"status": "error", "error": ..., "meta": {"code": ...}}``; an exception from a tool is a bug in
the tool and becomes a TOOL_ERROR result, never a dead run.

Every other form of tool (``@tool`` functions, `BaseTool` subclasses,
pydantic models with ``__call__``, LangChain tools) is adapted into a ToolSpec when it is
registered (`ai_agent.tools.adapters.as_tool_spec`), so the registry, the policy and the
stages only ever deal with this one shape.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from ai_agent.errors import ToolRegistrationError
from ai_agent.tools.docstrings import parse_docstring

if TYPE_CHECKING:
    from ai_agent.state import ToolResult

__all__ = [
    "ENGINE_META",
    "ToolCategory",
    "ToolFn",
    "ToolSpec",
    "category_of",
    "described",
    "without_engine_meta",
]

# A tool may return a ToolResult, any dict of that shape, or a plain value (wrapped as content).
ToolFn = Callable[[dict[str, Any], dict[str, Any]], Any]

_PART = r"[A-Za-z_][A-Za-z0-9_\-]{0,63}"
_NAME = re.compile(rf"^{_PART}(\.{_PART})*\Z")
_GROUP = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]{0,63}\Z")


ENGINE_META = frozenset({"activate_tools", "child_usage"})
"""Result ``meta`` keys that steer the run, honoured from `ToolSpec.engine_meta` tools only (as is
the code ``SUBAGENT_PAUSED``, `_ENGINE_CODES`)."""

_ENGINE_CODES = frozenset({"SUBAGENT_PAUSED"})


def without_engine_meta(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` without the `ENGINE_META` keys and codes (a tool other than the engine's own).

    Examples:
        >>> without_engine_meta({"status": "error", "meta": {"code": "SUBAGENT_PAUSED", "n": 1}})
        {'status': 'error', 'meta': {'n': 1}}
        >>> without_engine_meta({"status": "ok", "meta": {"activate_tools": ["run_bash"]}})
        {'status': 'ok', 'meta': {}}
    """
    meta = result.get("meta")
    if not isinstance(meta, dict):
        return result
    code = meta.get("code")
    engine_code = isinstance(code, str) and code.upper() in _ENGINE_CODES
    if not engine_code and ENGINE_META.isdisjoint(meta):
        return result
    dropped = ENGINE_META | ({"code"} if engine_code else set())
    kept = {k: v for k, v in meta.items() if k not in dropped}
    return {**result, "meta": kept}


class ToolCategory(StrEnum):
    """How much human oversight a tool needs (see the tool-oversight spec).

    READ_ONLY runs without asking; NOTE_TAKING runs, with optional confirmation by policy;
    MODIFICATION needs approval with a preview; EXTERNAL needs confirmation plus a first-time gate.

    Examples:
        >>> ToolCategory("read_only") is ToolCategory.READ_ONLY
        True
    """

    READ_ONLY = "read_only"
    NOTE_TAKING = "note_taking"
    MODIFICATION = "modification"
    EXTERNAL = "external"


def category_of(value: ToolCategory | str, owner: str) -> ToolCategory:
    """``value`` as a ToolCategory; ToolRegistrationError naming the choices when it is none.

    Examples:
        >>> category_of("read_only", "t")
        <ToolCategory.READ_ONLY: 'read_only'>
    """
    try:
        return ToolCategory(value)
    except ValueError:
        choices = ", ".join(c.value for c in ToolCategory)
        raise ToolRegistrationError(
            f"tool {owner!r}: unknown category {value!r}; use one of {choices}"
        ) from None


def described(fn: Callable[..., Any], name: str) -> str:
    """What a tool without a description tells the model: its function's docstring, else its name.

    Only a function's own docstring counts: a callable object's class docstring (a
    ``functools.partial``'s, say) describes the class, not the tool. The docstring's text before
    its first section is used (`ai_agent.tools.docstrings`), so ``Args:`` and examples stay out.

    Examples:
        >>> def fetch(args, ctx):
        ...     '''Fetch the users.
        ...
        ...     Args:
        ...         args: Filters.
        ...     '''
        >>> described(fetch, "fetch"), described(lambda a, c: None, "echo")
        ('Fetch the users.', 'echo')
    """
    own = fn.__doc__ if inspect.isroutine(fn) else None
    text = parse_docstring(own).description if own else ""
    return text.strip() or name


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool: a name, the function, and what it needs.

    Args:
        name: Unique name the model calls it by; dots namespace it (``fs.read_file``). On the
            wire (OpenAI function names allow no dots) a dot becomes ``__``; the registry maps the
            name back, so everything but the model sees the dotted name.
        fn: ``fn(args: dict, ctx: dict) -> ToolResult``, sync or async.
        requires_env: Environment variables that must be set before it may run. A missing one
            gives a structured error (``meta.code == "MISSING_ENV"``) and an AUTH-severity gate
            issue, without calling ``fn``. Their values reach ``fn`` as ``ctx["env"]`` and are
            scrubbed from everything the tool returns.
        description: What it does, shown to the model. Without one, ``fn``'s docstring (its
            text before the first section), else the tool's name (which says little).
        parameters: JSON schema of ``args`` (an object schema). Defaults to "any object".
        category: Oversight category. When in doubt the spec says pick the stricter one, so a
            tool that does not say is EXTERNAL.
        timeout: Seconds before the call is abandoned with a timeout error (None: the registry's).
        preview: Optional ``preview(args) -> str`` shown to a person before approving a call.
        format_result: Optional ``format_result(result) -> str``: the human-readable line shown
            in traces (the model still gets the full content).
        escalate: Optional ``escalate(args) -> str | None``: a reason why this particular call
            needs a person even when the category policy would run it unasked (a destructive
            shell command, a delete). A tool-wide grant does not cover an escalated call.
        validator: Optional ``validator(args) -> [problem, ...]``; by default the registry checks
            ``args`` against ``parameters``. A call with problems never runs (SchemaViolation).
        group: A group name (``files``, ``shell``...) for activating or disabling tools together.
        secret_env: Further environment variables whose values must never leave the tool
            (optional API keys), besides ``requires_env``.
        concurrent: Calls of this tool in one cycle may run at the same time (with the
            cycle's other concurrent calls, up to ``tool_config.max_concurrent_calls``); a
            subagent's tool is. Others run one after another, in the order the model asked.
        engine_meta: The engine's own tools only (``propose_tool``, a subagent's tool): its
            results may carry the `ENGINE_META` keys that steer the run (tools to activate,
            a child's usage, a paused child). Every other tool's result has them taken out: a
            tool that returns what a server sent must not activate a tool, add to the
            budget, or make its own call forgotten and run again after the next plan.

    Examples:
        >>> def fetch_users(args, ctx):
        ...     return {"status": "ok", "content": ["ada"]}
        >>> spec = ToolSpec("fetch_users", fetch_users, requires_env=["MY_API_KEY"],
        ...                 description="List users of the service.")
        >>> spec.category
        <ToolCategory.EXTERNAL: 'external'>
    """

    name: str
    fn: ToolFn
    requires_env: Sequence[str] = ()
    description: str = ""
    parameters: Mapping[str, Any] | None = None
    category: ToolCategory = ToolCategory.EXTERNAL
    timeout: float | None = None
    preview: Callable[[dict[str, Any]], str] | None = field(default=None, compare=False)
    format_result: Callable[[ToolResult], str] | None = field(default=None, compare=False)
    escalate: Callable[[dict[str, Any]], str | None] | None = field(default=None, compare=False)
    validator: Callable[[dict[str, Any]], list[str]] | None = field(default=None, compare=False)
    group: str | None = None
    secret_env: Sequence[str] = ()
    concurrent: bool = False
    engine_meta: bool = field(default=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ToolRegistrationError(
                f"tool name {self.name!r} is invalid: use letters, digits, '_' or '-', "
                "optionally namespaced with dots (fs.read_file), at most 64 characters a part"
            )
        if not callable(self.fn):
            raise ToolRegistrationError(f"tool {self.name!r}: fn must be callable")
        if not isinstance(self.description, str):
            raise ToolRegistrationError(
                f"tool {self.name!r}: description must be text, not {type(self.description)!r}"
            )
        if not self.description.strip():
            object.__setattr__(self, "description", described(self.fn, self.name))
        if self.parameters is not None and self.parameters.get("type", "object") != "object":
            raise ToolRegistrationError(
                f"tool {self.name!r}: parameters must be a JSON object schema"
            )
        if self.group is not None and not _GROUP.match(self.group):
            raise ToolRegistrationError(
                f"tool {self.name!r}: group {self.group!r} is invalid: use letters, digits, "
                "'_' or '-'"
            )
        if self.timeout is not None and not self.timeout > 0:
            raise ToolRegistrationError(f"tool {self.name!r}: timeout must be above 0 seconds")
        object.__setattr__(self, "category", category_of(self.category, self.name))
        object.__setattr__(self, "requires_env", tuple(self.requires_env))
        object.__setattr__(self, "secret_env", tuple(self.secret_env))

    @property
    def namespace(self) -> str | None:
        """The part of the name before the last dot (``fs`` for ``fs.read_file``), or None.

        Examples:
            >>> ToolSpec("fs.read_file", lambda a, c: None, description="Read.").namespace
            'fs'
        """
        head, dot, _ = self.name.rpartition(".")
        return head if dot else None

    @property
    def schema(self) -> dict[str, Any]:
        """The OpenAI function schema, under the tool's own (dotted) name.

        The registry puts the wire name in before a schema reaches the model.
        """
        params = dict(self.parameters) if self.parameters is not None else {}
        params.setdefault("type", "object")
        params.setdefault("properties", {})
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": params},
        }
