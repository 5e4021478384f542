"""How a built-in tool becomes a ToolSpec: from its typed signature and docstring, as ``@tool``.

Each built-in is a typed function (or method) whose docstring gives the description the model
reads and each argument's text; `Omittable` and ``Annotated[..., Field(...)]`` give what else
the schema says (bounds, choices, arguments that may be left out). A setting the schema shows (a
default from the settings, a backend's choices) is a default in a function made for those
settings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Literal

from ai_agent.tools.decorator import function_spec
from ai_agent.tools.spec import ToolCategory, ToolSpec

__all__ = ["builtin_spec"]


def builtin_spec(
    fn: Callable[..., Any],
    *,
    category: ToolCategory,
    group: str,
    extra: Literal["forbid", "ignore"] = "forbid",
    **options: Any,
) -> ToolSpec:
    """The ToolSpec of a built-in tool function (`function_spec` with the built-ins' checks).

    The arguments are checked against the JSON schema the model is shown (the registry does
    it, as for every tool that only gives a schema), not by pydantic as ``@tool`` functions are:
    what the model hears about a wrong call then speaks of the schema it saw, and what the
    schema refuses (a number in a string, an explicit null for an omittable argument) never
    runs. What passes the schema also passes pydantic, which hands the function its values.

    The schema is written compactly (`ai_agent.tools.schema.compact_schema`), as the built-ins'
    schemas always were: a recorded run replays offline only while every schema in its model
    requests is the same, to the byte.

    Args:
        fn: The tool function; ``ctx`` receives the tool context.
        category: Its oversight category.
        group: Its group.
        extra: ``ignore`` drops unknown arguments instead of refusing them (the calculator).
        **options: ``name``, ``description``, ``preview``, ``escalate``, ``format_result``,
            ``timeout``, ``requires_env`` (see `function_spec`).

    Examples:
        >>> def shout(text: str) -> str:
        ...     '''Upper-case a text.
        ...
        ...     Args:
        ...         text: What to shout.
        ...     '''
        ...     return text.upper()
        >>> spec = builtin_spec(shout, category=ToolCategory.READ_ONLY, group="demo")
        >>> spec.parameters["properties"]["text"], spec.validator
        ({'description': 'What to shout.', 'type': 'string'}, None)
    """
    spec = function_spec(fn, category=category, group=group, extra=extra, compact=True, **options)
    return dataclasses.replace(spec, validator=None)
