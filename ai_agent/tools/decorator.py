"""``@tool``: a typed function (or a pydantic model with ``__call__``) becomes a tool.

The schema comes from the signature (types, defaults) and the Google-style docstring (the
description and each parameter's text). A function without a description fails here, when it is
decorated, not when a model first calls it. The decorator returns the function unchanged, so it
can still be called and tested directly; the adapted ToolSpec rides along on it and
`ai_agent.tools.adapters.as_tool_spec` (which the registry and ``Agent(tools=...)`` use)
picks it up.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypedDict, TypeVar, Unpack, cast, overload

from pydantic import BaseModel, ValidationError

from ai_agent.errors import ToolRegistrationError
from ai_agent.tools.docstrings import parse_docstring
from ai_agent.tools.results import schema_violation
from ai_agent.tools.schema import (
    CONTEXT_PARAMETER,
    json_schema_of,
    pydantic_problems,
    signature_schema,
)
from ai_agent.tools.spec import ToolCategory, ToolSpec, category_of

__all__ = ["TOOL_ATTRIBUTE", "ToolOptions", "function_spec", "model_spec", "tool"]

F = TypeVar("F", bound=Callable[..., Any])
TOOL_ATTRIBUTE = "__ai_agent_tool__"


class ToolOptions(TypedDict, total=False):
    """What ``@tool``, `function_spec` and `model_spec` may be told (see `ToolSpec`).

    ``name`` defaults to the function's (a model's, in snake case), ``description`` to the
    docstring's first paragraph, ``category`` to EXTERNAL; the rest to ToolSpec's defaults.
    """

    name: str | None
    description: str | None
    category: ToolCategory | str
    requires_env: Sequence[str]
    timeout: float | None
    group: str | None
    preview: Callable[[dict[str, Any]], str] | None
    format_result: Callable[[Any], str] | None
    escalate: Callable[[dict[str, Any]], str | None] | None


def _snake(name: str) -> str:
    out = [("_" + c.lower()) if c.isupper() and i else c.lower() for i, c in enumerate(name)]
    return "".join(out)


def function_spec(
    fn: Callable[..., Any],
    *,
    extra: Literal["forbid", "ignore"] = "forbid",
    compact: bool = False,
    **options: Unpack[ToolOptions],
) -> ToolSpec:
    """The ToolSpec of a typed function (what ``@tool`` attaches).

    ``extra`` and ``compact`` are passed on to `signature_schema` (unknown arguments refused or
    dropped; the JSON schema written compactly).

    Raises:
        ToolRegistrationError: no description (docstring), or a signature without a schema.
    """
    tool_name = str(options.get("name") or getattr(fn, "__name__", ""))
    doc = parse_docstring(inspect.getdoc(fn))
    text = options.get("description")
    text = doc.description if text is None else text
    if not text or not text.strip():
        raise ToolRegistrationError(
            f"tool {tool_name!r} has no description: give the function a docstring saying what "
            "it does (its first paragraph is what the model reads), or pass description='...'"
        )
    sig = signature_schema(fn, owner=tool_name, docs=doc.args, extra=extra, compact=compact)
    is_async = inspect.iscoroutinefunction(fn)
    why = _untyped_note(fn, tool_name)

    def problems(args: dict[str, Any]) -> list[str]:
        found = sig.problems(args)
        return [*found, why] if found and why else found

    async def call(args: dict[str, Any], ctx: dict[str, Any]) -> Any:
        try:
            positional, kwargs = sig.bind(args, ctx)
        except ValidationError as exc:
            found = pydantic_problems(exc)
            return schema_violation(tool_name, [*found, why] if why else found)
        if is_async:
            return await fn(*positional, **kwargs)
        # This wrapper is async (it validates first), so it hands a sync body to a thread itself,
        # keeping the event loop free as the registry does for plain sync tools.
        return await asyncio.to_thread(fn, *positional, **kwargs)

    return _spec(tool_name, call, text, sig.parameters, problems, options)


def _untyped_note(fn: Callable[..., Any], name: str) -> str | None:
    """Why a call may not fit a function read as typed when none of its parameters has a type.

    Such a function may well be meant as the spec's ``fn(args, ctx)`` under other names: its
    schema then asks the model for arguments the author never meant, and a failing call must say
    where the schema came from, not only what is missing.
    """
    params = [p for p in inspect.signature(fn).parameters.values() if p.name != CONTEXT_PARAMETER]
    if not params or any(p.annotation is not p.empty for p in params):
        return None
    listed = ", ".join(p.name for p in params)
    return (
        f"({name}'s schema was read from its signature, whose parameters ({listed}) have no "
        "types; a tool that takes the model's arguments as one dict is written fn(args, ctx))"
    )


def model_spec(model: type[BaseModel], **options: Unpack[ToolOptions]) -> ToolSpec:
    """The ToolSpec of a pydantic model whose ``__call__`` does the work.

    The model's fields are the arguments; a call validates them into an instance and calls it
    (``__call__(self)`` or ``__call__(self, ctx)``, sync or async). The class docstring is the
    description; ``Field(description=...)`` documents each argument.

    Raises:
        ToolRegistrationError: no docstring, or no ``__call__`` of its own.
    """
    # Looked up in the class's own MRO: ``model.__call__`` would find type.__call__ instead.
    call_method = next(
        (c.__dict__["__call__"] for c in model.__mro__ if "__call__" in c.__dict__), None
    )
    tool_name = options.get("name") or _snake(model.__name__)
    if call_method is None:
        raise ToolRegistrationError(
            f"tool {tool_name!r}: the model {model.__name__} has no __call__; define "
            "__call__(self) to do the work with the validated fields"
        )
    text = options.get("description")
    text = parse_docstring(model.__doc__).description if text is None else text
    if not text or not text.strip():
        raise ToolRegistrationError(
            f"tool {tool_name!r} has no description: give {model.__name__} a docstring saying "
            "what it does, or pass description='...'"
        )
    wants_context = CONTEXT_PARAMETER in inspect.signature(call_method).parameters
    is_async = inspect.iscoroutinefunction(call_method)

    async def call(args: dict[str, Any], ctx: dict[str, Any]) -> Any:
        try:
            instance = model.model_validate(args)
        except ValidationError as exc:
            return schema_violation(tool_name, pydantic_problems(exc))
        extra = (ctx,) if wants_context else ()
        run = cast(Callable[..., Any], instance)  # the model class defines __call__
        if is_async:
            return await run(*extra)
        return await asyncio.to_thread(run, *extra)

    def problems(args: dict[str, Any]) -> list[str]:
        try:
            model.model_validate(args)
        except ValidationError as exc:
            return pydantic_problems(exc)
        return []

    return _spec(tool_name, call, text, json_schema_of(model), problems, options)


def _spec(
    name: str,
    call: Callable[..., Any],
    description: str,
    parameters: dict[str, Any],
    problems: Callable[[dict[str, Any]], list[str]],
    options: ToolOptions,
) -> ToolSpec:
    """The ToolSpec of a decorated function or model: what it does, and the options given."""
    return ToolSpec(
        name=name,
        fn=call,
        requires_env=options.get("requires_env", ()),
        description=description,
        parameters=parameters,
        category=category_of(options.get("category", ToolCategory.EXTERNAL), name),
        timeout=options.get("timeout"),
        preview=options.get("preview"),
        format_result=options.get("format_result"),
        escalate=options.get("escalate"),
        validator=problems,
        group=options.get("group"),
    )


@overload
def tool(fn: F, /) -> F: ...


@overload
def tool(**options: Unpack[ToolOptions]) -> Callable[[F], F]: ...


def tool(fn: Any = None, /, **options: Any) -> Any:
    """Make a typed function, or a pydantic model with ``__call__``, a tool.

    Use it bare (``@tool``) or with options (``@tool(category="read_only", requires_env=[...])``).
    The category defaults to EXTERNAL, the strictest, as the tool-oversight spec asks when in
    doubt. A parameter named ``ctx`` receives the tool context instead of a model argument.

    Args:
        fn: The function or model class (when used bare).
        **options: ``name``, ``description`` (default: the docstring), ``category``,
            ``requires_env``, ``timeout``, ``group``, ``preview``, ``format_result``,
            ``escalate`` (see `ToolSpec`).

    Returns:
        The function or class itself, unchanged, carrying its ToolSpec.

    Raises:
        ToolRegistrationError: no description, or parameters without a JSON schema.

    Examples:
        >>> @tool(category="read_only")
        ... def add(a: int, b: int = 1) -> int:
        ...     '''Add two integers.
        ...
        ...     Args:
        ...         a: The first number.
        ...         b: The second number.
        ...     '''
        ...     return a + b
        >>> add(2, 3)
        5
        >>> from ai_agent.tools.adapters import as_tool_spec
        >>> spec = as_tool_spec(add)
        >>> spec.name, spec.category.value, spec.parameters["required"]
        ('add', 'read_only', ['a'])
    """

    def attach(target: Any) -> Any:
        if isinstance(target, type) and issubclass(target, BaseModel):
            spec = model_spec(target, **options)
        elif callable(target):
            spec = function_spec(target, **options)
        else:
            raise ToolRegistrationError(
                f"@tool applies to functions and pydantic models, not {target!r}"
            )
        setattr(target, TOOL_ATTRIBUTE, spec)
        return target

    if fn is not None:
        return attach(fn)
    return attach
