"""The tool contract: ``ToolSpec(name, fn, requires_env=[...])``, ``fn(args, ctx) -> ToolResult``.

A tool is a plain function (sync or async) that takes the model's arguments as a dict and a small
context dict (thread id, task, iteration, call id, working directory) and returns a ToolResult dict.
Recoverable problems are returned as ``{"status": "error", "error": ..., "meta": {"code": ...}}``;
an exception from a tool is a bug in the tool and becomes a TOOL_ERROR result, never a dead run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ai_agent.errors import ToolRegistrationError

__all__ = ["ToolCategory", "ToolFn", "ToolSpec"]

# A tool may return a ToolResult, any dict of that shape, or a plain value (wrapped as content).
ToolFn = Callable[[dict[str, Any], dict[str, Any]], Any]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]{0,63}(\.[A-Za-z_][A-Za-z0-9_\-]{0,63})*$")


class ToolCategory(StrEnum):
    """How much human oversight a tool needs (see the tool-oversight spec).

    READ_ONLY runs without asking; NOTE_TAKING runs, with optional confirmation by policy;
    MODIFICATION needs approval with a preview; EXTERNAL needs confirmation plus a first-time gate.
    """

    READ_ONLY = "read_only"
    NOTE_TAKING = "note_taking"
    MODIFICATION = "modification"
    EXTERNAL = "external"


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool: a name, the function, and what it needs.

    Args:
        name: Unique name the model calls it by; dots namespace it (``fs.read_file``).
        fn: ``fn(args: dict, ctx: dict) -> ToolResult``, sync or async.
        requires_env: Environment variables that must be set before it may run. A missing one
            gives a structured error (``meta.code == "MISSING_ENV"``) and an AUTH-severity gate
            issue, without calling ``fn``.
        description: What it does, shown to the model. Required.
        parameters: JSON schema of ``args`` (an object schema). Defaults to "any object".
        category: Oversight category. When in doubt the spec says pick the stricter one, so a
            tool that does not say is EXTERNAL.
        timeout: Seconds before the call is abandoned with a timeout error (None: the registry's).
        preview: Optional ``preview(args) -> str`` shown to a person before approving a call.

    Example:
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

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ToolRegistrationError(
                f"tool name {self.name!r} is invalid: use letters, digits, '_' or '-', "
                "optionally namespaced with dots (fs.read_file), at most 64 characters a part"
            )
        if not callable(self.fn):
            raise ToolRegistrationError(f"tool {self.name!r}: fn must be callable")
        if not self.description.strip():
            raise ToolRegistrationError(
                f"tool {self.name!r} has no description: the model cannot know when to use it. "
                "Pass description='...'."
            )
        if self.parameters is not None and self.parameters.get("type", "object") != "object":
            raise ToolRegistrationError(
                f"tool {self.name!r}: parameters must be a JSON object schema"
            )
        object.__setattr__(self, "category", ToolCategory(self.category))
        object.__setattr__(self, "requires_env", tuple(self.requires_env))

    @property
    def schema(self) -> dict[str, Any]:
        """The OpenAI function schema the model sees."""
        params = dict(self.parameters) if self.parameters is not None else {}
        params.setdefault("type", "object")
        params.setdefault("properties", {})
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": params},
        }
