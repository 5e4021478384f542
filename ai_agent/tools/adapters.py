"""Every form of tool, adapted into the one `ToolSpec` shape.

Accepted forms, tried in this order:

1. a ``ToolSpec`` (the original contract);
2. anything ``@tool`` decorated (a function or a pydantic model class);
3. a `BaseTool` instance (or a subclass with a no-argument
   constructor);
4. a LangChain tool (``langchain_core.tools.BaseTool``);
5. a pydantic model class with ``__call__``;
6. a plain ``fn(args, ctx)`` function, the spec's contract (`takes_args_and_ctx`): wrapped in a
   ToolSpec as it is, taking the model's arguments as one dict (any object schema);
7. a plain typed function with a docstring (as if decorated with ``@tool``).

Registration-time options (``name``, ``namespace``, ``category``, ``group``...) override what
the tool says about itself, so a third-party tool can be filed under a namespace or a stricter
category without editing it.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from ai_agent.errors import ToolRegistrationError
from ai_agent.state import ToolResult
from ai_agent.tools.base import BaseTool
from ai_agent.tools.decorator import TOOL_ATTRIBUTE, function_spec, model_spec
from ai_agent.tools.docstrings import parse_docstring
from ai_agent.tools.schema import (
    CONTEXT_PARAMETER,
    json_schema_validator,
    pydantic_problems,
    signature_schema,
)
from ai_agent.tools.spec import ToolCategory, ToolSpec, category_of

__all__ = ["as_tool_spec", "is_tool", "takes_args_and_ctx"]

_OVERRIDABLE = ("name", "category", "group", "description", "requires_env", "timeout")


def _with_overrides(spec: ToolSpec, options: dict[str, Any]) -> ToolSpec:
    changes = {k: options[k] for k in _OVERRIDABLE if options.get(k) is not None}
    if "category" in changes:
        changes["category"] = category_of(changes["category"], spec.name)
    namespace = options.get("namespace")
    if namespace:
        changes["name"] = f"{namespace}.{changes.get('name', spec.name)}"
    return dataclasses.replace(spec, **changes) if changes else spec


def _base_tool_spec(obj: BaseTool) -> ToolSpec:
    name = obj.name
    method = type(obj).execute
    explicit = obj.parameters
    params = [
        p
        for p in list(inspect.signature(method).parameters.values())[1:]
        if p.kind is not p.VAR_KEYWORD and p.name != CONTEXT_PARAMETER
    ]
    wants_context = CONTEXT_PARAMETER in inspect.signature(method).parameters
    if explicit is not None or not params:
        schema = dict(explicit) if explicit is not None else {"type": "object", "properties": {}}
        validator = json_schema_validator(schema, owner=name)

        async def call(args: dict[str, Any], ctx: dict[str, Any]) -> Any:
            extra = {CONTEXT_PARAMETER: ctx} if wants_context else {}
            return await obj.execute(**args, **extra)

        parameters = schema
    else:
        sig = signature_schema(
            method, owner=name, docs=parse_docstring(method.__doc__).args, skip_first=True
        )

        async def call(args: dict[str, Any], ctx: dict[str, Any]) -> Any:
            positional, kwargs = sig.bind(args, ctx)
            return await obj.execute(*positional, **kwargs)

        validator, parameters = sig.problems, sig.parameters
    return ToolSpec(
        name=name,
        fn=call,
        requires_env=tuple(obj.requires_env),
        description=obj.description,
        parameters=parameters,
        category=category_of(obj.category, name),
        timeout=obj.timeout,
        preview=obj.preview,
        format_result=obj.format_result,
        escalate=obj.escalate,
        validator=validator,
        group=obj.group,
    )


def _is_langchain_tool(obj: Any) -> bool:
    try:
        from langchain_core.tools import BaseTool as LangChainTool
    except ImportError:  # pragma: no cover - langchain-core is a dependency
        return False
    return isinstance(obj, LangChainTool)


def _model_problems(model: type[BaseModel], args: dict[str, Any]) -> list[str]:
    try:
        model.model_validate(args)
    except ValidationError as exc:
        return pydantic_problems(exc)
    return []


def _langchain_spec(obj: Any, category: Any) -> ToolSpec:
    from langchain_core.tools import ToolException
    from langchain_core.utils.function_calling import convert_to_openai_tool

    name = str(obj.name)
    parameters = dict(convert_to_openai_tool(obj)["function"].get("parameters") or {})
    parameters.setdefault("type", "object")
    parameters.setdefault("properties", {})
    schema_model = obj.args_schema if isinstance(obj.args_schema, type) else None
    problems: Callable[[dict[str, Any]], list[str]]
    if schema_model is not None and issubclass(schema_model, BaseModel):
        problems = functools.partial(_model_problems, schema_model)
    else:
        # Built once, here: a schema that cannot be checked is refused when the tool is
        # registered, not at each of its calls.
        problems = json_schema_validator(parameters, owner=name)

    # A tool that handles its own errors (handle_tool_error) answers them as text; only a
    # message (what it answers a tool call with) says the text is an error.
    as_message = bool(obj.handle_tool_error or obj.handle_validation_error)

    async def call(args: dict[str, Any], ctx: dict[str, Any]) -> ToolResult | Any:
        try:
            output = await obj.ainvoke(_tool_call(name, args, ctx) if as_message else args)
        except ToolException as exc:
            return ToolResult(status="error", error=str(exc), meta={"code": "TOOL_ERROR"})
        # Its content (with response_format="content_and_artifact", LangChain gives the content
        # alone), as it is: a tuple or an object with a ``content`` field is the tool's data.
        return _langchain_output(output)

    return ToolSpec(
        name=name,
        fn=call,
        description=str(obj.description or ""),
        parameters=parameters,
        # LangChain tools do not say what they touch: the strictest category unless told.
        category=category_of(category or ToolCategory.EXTERNAL, name),
        validator=problems,
    )


def _tool_call(name: str, args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
    """A LangChain tool call of ``args``: the tool answers it with a message that has a status.

    Also keeps arguments that look like a tool call (``type``: ``tool_call``) arguments.
    """
    call_id = str(ctx.get("call_id") or "call")
    return {"type": "tool_call", "name": name, "args": args, "id": call_id}


def _langchain_output(output: Any) -> Any:
    """What a LangChain tool returned, as a result: a message's content, its status kept."""
    from langchain_core.messages import BaseMessage, ToolMessage

    if isinstance(output, ToolMessage) and output.status == "error":
        text = output.content if isinstance(output.content, str) else str(output.text)
        return ToolResult(status="error", error=text, meta={"code": "TOOL_ERROR"})
    return output.content if isinstance(output, BaseMessage) else output


def _base(obj: Any) -> ToolSpec | None:
    if isinstance(obj, type) and issubclass(obj, BaseTool):
        try:
            obj = obj()
        except TypeError as exc:
            raise ToolRegistrationError(
                f"cannot build the tool {obj.__name__}() without arguments ({exc}); "
                "register an instance instead"
            ) from None
    return _base_tool_spec(obj) if isinstance(obj, BaseTool) else None


# What the first parameter of a ``fn(args, ctx)`` may be annotated with: the arguments' dict.
_MAPPING_HINTS = frozenset({"dict", "Dict", "Mapping", "MutableMapping", "Any", "object"})
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _hint_name(annotation: Any) -> str:
    """The bare name of an annotation (``dict`` for ``dict[str, Any]`` or ``"Dict[str, Any]"``)."""
    if isinstance(annotation, str):  # postponed (``from __future__ import annotations``)
        return annotation.split("[", 1)[0].strip().rpartition(".")[2]
    origin = typing.get_origin(annotation) or annotation
    return str(getattr(origin, "__name__", "")) or repr(origin).rpartition(".")[2]


def takes_args_and_ctx(obj: Any) -> bool:
    """Whether ``obj`` is a plain function of the spec's contract, ``fn(args, ctx)``.

    That is: exactly two positional parameters without defaults, the first named ``args`` and,
    if annotated, a dict (``dict``, ``Mapping``, ``Any``). Such a function takes the model's
    arguments as one dict; read as a typed function instead, its schema would ask the model for
    an argument called ``args``, and every call would fail validation. A typed function whose
    one model argument is named ``args`` (``count(args: list[str])``) stays typed.

    Examples:
        >>> def fetch(args, ctx):
        ...     return {"status": "ok"}
        >>> def count(args: list[str], ctx) -> int:
        ...     return len(args)
        >>> takes_args_and_ctx(fetch), takes_args_and_ctx(count)
        (True, False)
    """
    if not (inspect.isfunction(obj) or inspect.ismethod(obj)):
        return False
    params = list(inspect.signature(obj).parameters.values())
    if len(params) != 2 or any(p.kind not in _POSITIONAL for p in params):
        return False
    if any(p.default is not p.empty for p in params):
        return False
    first = params[0]
    return first.name == "args" and (
        first.annotation is first.empty or _hint_name(first.annotation) in _MAPPING_HINTS
    )


def _contract_spec(obj: Any, options: dict[str, Any]) -> ToolSpec:
    """A ``fn(args, ctx)`` as it is: no schema of its own, its docstring or name describes it."""
    name = options.get("name") or obj.__name__
    return ToolSpec(name=name, fn=obj, category=options.get("category") or ToolCategory.EXTERNAL)


def _plain(obj: Any, options: dict[str, Any]) -> ToolSpec | None:
    if isinstance(obj, type) and issubclass(obj, BaseModel):
        return model_spec(obj, category=options.get("category") or ToolCategory.EXTERNAL)
    if takes_args_and_ctx(obj):
        return _contract_spec(obj, options)
    if inspect.isfunction(obj) or inspect.ismethod(obj):
        return function_spec(obj, category=options.get("category") or ToolCategory.EXTERNAL)
    return None


def is_tool(obj: Any) -> bool:
    """Whether ``obj`` is in one of the forms `as_tool_spec` accepts (valid or not).

    Examples:
        >>> def f(x: int) -> int:
        ...     return x
        >>> is_tool(f), is_tool(42)
        (True, False)
    """
    return (
        isinstance(obj, ToolSpec | BaseTool)
        or hasattr(obj, TOOL_ATTRIBUTE)
        or _is_langchain_tool(obj)
        or (isinstance(obj, type) and issubclass(obj, BaseTool | BaseModel))
        or inspect.isfunction(obj)
        or inspect.ismethod(obj)
    )


def as_tool_spec(obj: Any, **options: Any) -> ToolSpec:
    """Adapt any supported form of tool into a ToolSpec.

    Args:
        obj: A ToolSpec, a ``@tool`` function or model, a BaseTool, a LangChain tool, a
            pydantic model with ``__call__``, a plain ``fn(args, ctx)`` function or a typed
            function with a docstring.
        **options: Overrides: ``name``, ``namespace`` (prefixed with a dot), ``category``,
            ``group``, ``description``, ``requires_env``, ``timeout``.

    Raises:
        ToolRegistrationError: the object is no tool, or it is an invalid one (no description,
            no schema, a bad name).

    Examples:
        >>> def shout(text: str) -> str:
        ...     '''Upper-case a text.'''
        ...     return text.upper()
        >>> spec = as_tool_spec(shout, namespace="fun", category="read_only")
        >>> spec.name, spec.category.value
        ('fun.shout', 'read_only')
    """
    unknown = set(options) - {*_OVERRIDABLE, "namespace"}
    if unknown:
        raise ToolRegistrationError(f"unknown tool option(s): {', '.join(sorted(unknown))}")
    spec: ToolSpec | None
    if isinstance(obj, ToolSpec):
        spec = obj
    elif isinstance(getattr(obj, TOOL_ATTRIBUTE, None), ToolSpec):
        spec = getattr(obj, TOOL_ATTRIBUTE)
    elif _is_langchain_tool(obj):
        spec = _langchain_spec(obj, options.get("category"))
    else:
        spec = _base(obj) or _plain(obj, options)
    if spec is None:
        raise ToolRegistrationError(
            f"cannot use {obj!r} as a tool: pass a ToolSpec, a @tool function, a BaseTool, a "
            "pydantic model with __call__, a LangChain tool, or a built-in tool name"
        )
    return _with_overrides(spec, options)
