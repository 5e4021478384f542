"""Argument schemas: built from a function's signature, and checked before any tool runs.

Two kinds of check, one interface (``validator(args) -> [problem, ...]``):

- typed Python tools (``@tool`` functions, BaseTool ``execute`` signatures, pydantic models) are
  checked by pydantic, the same model that later converts the arguments for the call;
- tools that only give a JSON schema (a plain ToolSpec, a LangChain tool) are checked by
  ``jsonschema`` against it.

A problem names the argument and what is wrong, in words the model can act on.

A parameter's schema comes from its annotation (``Annotated[int, Field(ge=1)]`` for bounds,
``Literal[...]`` for choices), its default (a value, or ``Field(...)`` for what only the call
site knows, as pydantic's ``validate_call`` allows) and the docstring's ``Args:`` text, which wins
over a ``Field`` description. `Omittable` marks an argument the model may leave out. A compact
schema (`compact_schema`) says the same in fewer words.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeAlias, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo
from pydantic.json_schema import SkipJsonSchema

from ai_agent.datafiles import MAX_DEPTH, nested_past
from ai_agent.errors import ToolRegistrationError

__all__ = [
    "CONTEXT_PARAMETER",
    "MAX_ARGUMENT_DEPTH",
    "MAX_SCHEMA_DEPTH",
    "Omittable",
    "SignatureSchema",
    "compact_schema",
    "json_schema_of",
    "json_schema_validator",
    "pydantic_problems",
    "signature_schema",
]

Validator = Callable[[dict[str, Any]], list[str]]

# A parameter with this name receives the tool context dict instead of a model argument.
CONTEXT_PARAMETER = "ctx"
_MAX_PROBLEMS = 8

MAX_ARGUMENT_DEPTH = MAX_DEPTH
"""How deeply a tool call's arguments may nest (lists and objects): as deep as any data the
engine reads (`ai_agent.datafiles.MAX_DEPTH`), well below Python's recursion limit, which
reading, checking and storing them use several frames of per level."""
MAX_SCHEMA_DEPTH = 200
"""How deeply a tool's JSON schema may nest (each property takes two levels)."""

T = TypeVar("T")


def _no_default(schema: dict[str, Any]) -> None:
    schema.pop("default", None)


# An argument the model may leave out (the function then gets None): ``section: Omittable[str] =
# None``. The model sees the type alone, neither required nor nullable nor with a default, which
# says "leave it out" more plainly than ``anyOf [string, null]``; pydantic still accepts None.
Omittable: TypeAlias = Annotated[T | SkipJsonSchema[None], Field(json_schema_extra=_no_default)]


def _where(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(p) for p in loc) or "arguments"


def pydantic_problems(exc: ValidationError) -> list[str]:
    """The problems of a ValidationError, one line each, without echoing the input."""
    return [f"{_where(e['loc'])}: {e['msg']}" for e in exc.errors()[:_MAX_PROBLEMS]]


def _strip_titles(schema: Any) -> Any:
    """Pydantic's generated titles only repeat the names; drop them to save prompt tokens."""
    if isinstance(schema, dict):
        out = {k: _strip_titles(v) for k, v in schema.items() if k != "title"}
        if "properties" in schema:
            out["properties"] = {k: _strip_titles(v) for k, v in schema["properties"].items()}
        return out
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


# Keywords whose values are data, not schemas: compact_schema leaves them as they are.
_VALUES = frozenset(("default", "enum", "const", "examples"))


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``anyOf [{"type": T, ...}, {"type": "null"}]`` as ``{"type": [T, "null"], ...}``."""
    options = schema.get("anyOf")
    if not isinstance(options, list) or len(options) != 2 or {"type": "null"} not in options:
        return schema
    (other,) = [o for o in options if o != {"type": "null"}]
    if not isinstance(other.get("type"), str) or set(other) & set(schema):
        return schema
    rest = {k: v for k, v in schema.items() if k != "anyOf"}
    return {**other, "type": [other["type"], "null"], **rest}


def compact_schema(schema: Any) -> Any:
    """The same JSON schema without what a reader need not be told.

    A type that may also be null is a list of two types instead of an ``anyOf``, and
    ``additionalProperties: true``, JSON Schema's default, is left out. What fits the schema
    does not change.

    Examples:
        >>> compact_schema({"anyOf": [{"type": "string"}, {"type": "null"}], "default": None})
        {'type': ['string', 'null'], 'default': None}
        >>> compact_schema({"type": "object", "additionalProperties": True,
        ...                 "properties": {"d": {"type": "object", "default": {"anyOf": 1}}}})
        {'type': 'object', 'properties': {'d': {'type': 'object', 'default': {'anyOf': 1}}}}
    """
    if isinstance(schema, list):
        return [compact_schema(v) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = _nullable({k: v if k in _VALUES else compact_schema(v) for k, v in schema.items()})
    if out.get("additionalProperties") is True:
        del out["additionalProperties"]
    return out


def json_schema_of(model: type[BaseModel], *, compact: bool = False) -> dict[str, Any]:
    """The JSON schema of an argument model, as the model will see it (`compact_schema`d)."""
    schema: dict[str, Any] = _strip_titles(model.model_json_schema())
    if compact:
        schema = compact_schema(schema)
    schema.setdefault("properties", {})
    return schema


@dataclass(frozen=True, slots=True)
class SignatureSchema:
    """A callable's arguments as a pydantic model, and how to call it with validated values.

    Attributes:
        model: The argument model (unknown arguments are rejected).
        positional: Names passed positionally (positional-only parameters), in order.
        wants_context: The callable takes the tool context as ``ctx``.
        parameters: The JSON schema of the arguments (written once: making it is most of the
            cost of a built-in tool's spec, and every Agent and ``ai-agent tools`` makes them).
    """

    model: type[BaseModel]
    positional: tuple[str, ...]
    wants_context: bool
    parameters: dict[str, Any]

    def problems(self, args: dict[str, Any]) -> list[str]:
        """What is wrong with ``args``; empty when they are valid."""
        try:
            self.model.model_validate(args)
        except ValidationError as exc:
            return pydantic_problems(exc)
        return []

    def bind(self, args: dict[str, Any], ctx: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """Validate ``args`` and split them into positional and keyword arguments.

        Raises:
            ValidationError: the arguments do not fit the model.
        """
        values = self.model.model_validate(args)
        kwargs = {name: getattr(values, name) for name in type(values).model_fields}
        positional = [kwargs.pop(name) for name in self.positional]
        if self.wants_context:
            kwargs[CONTEXT_PARAMETER] = ctx
        return positional, kwargs


def _hints(fn: Callable[..., Any], owner: str) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise ToolRegistrationError(
            f"tool {owner!r}: cannot read the type hints of its parameters ({exc}); "
            "import the types the annotations name at module level"
        ) from None


def _field(p: inspect.Parameter, described: str | None) -> FieldInfo:
    """The field of one parameter: its default and, when the docstring has one, its text.

    Without docstring text, the ``Field`` of the annotation or the default keeps its own
    description (passing ``description=None`` would erase it).
    """
    field: FieldInfo
    if isinstance(p.default, FieldInfo):
        field = p.default
    else:
        field = Field(... if p.default is p.empty else p.default)
    return FieldInfo.merge_field_infos(field, description=described) if described else field


def signature_schema(
    fn: Callable[..., Any],
    *,
    owner: str,
    docs: Mapping[str, str],
    skip_first: bool = False,
    extra: Literal["forbid", "ignore"] = "forbid",
    compact: bool = False,
) -> SignatureSchema:
    """Build the argument model of ``fn`` from its signature and its docstring's ``Args:``.

    Args:
        fn: The function (or method) the model's arguments are passed to.
        owner: The tool's name, for error messages.
        docs: Parameter descriptions (from the docstring).
        skip_first: Skip the first parameter (``self`` of an unbound method).
        extra: Unknown arguments are refused (``forbid``: the schema says
            ``additionalProperties: false``) or dropped (``ignore``).
        compact: Write the JSON schema compactly (`compact_schema`).

    Raises:
        ToolRegistrationError: the signature has ``*args``/``**kwargs`` beside named parameters,
            or an annotation pydantic cannot turn into a schema.

    Examples:
        >>> def add(a: int, b: int = 2) -> int:
        ...     return a + b
        >>> s = signature_schema(add, owner="add", docs={"a": "First."})
        >>> s.parameters["required"], s.parameters["properties"]["a"]["description"]
        (['a'], 'First.')
        >>> s.problems({"a": "x"})
        ['a: Input should be a valid integer, unable to parse string as an integer']
    """
    params = list(inspect.signature(fn).parameters.values())
    if skip_first and params:
        params = params[1:]
    hints = _hints(fn, owner)
    fields: dict[str, Any] = {}
    positional: list[str] = []
    wants_context = False
    for p in params:
        if p.name == CONTEXT_PARAMETER:
            wants_context = True
            continue
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ToolRegistrationError(
                f"tool {owner!r}: *{p.name} cannot be described to the model; "
                "name every parameter (or give the tool an explicit JSON schema)"
            )
        if p.kind is p.POSITIONAL_ONLY:
            positional.append(p.name)
        fields[p.name] = (hints.get(p.name, Any), _field(p, docs.get(p.name)))
    try:
        model = create_model(
            f"{owner.replace('.', '_').replace('-', '_')}_args",
            __config__=ConfigDict(extra=extra, arbitrary_types_allowed=False),
            **fields,
        )
        schema = json_schema_of(model, compact=compact)
    except Exception as exc:
        raise ToolRegistrationError(
            f"tool {owner!r}: its parameters cannot be described as a JSON schema ({exc})"
        ) from None
    return SignatureSchema(model, tuple(positional), wants_context, schema)


def json_schema_validator(schema: Mapping[str, Any], *, owner: str) -> Validator:
    """A validator checking arguments against a JSON schema.

    A recursive schema (``$ref`` cycles through items or properties) checks any finite value;
    what it cannot check (a ``$ref`` to nothing, a cycle without end) is refused here, not at
    every call (`ai_agent.tools.schema_refs`). Arguments nested deeper than `MAX_ARGUMENT_DEPTH`
    are refused as too deep instead of being checked.

    Raises:
        ToolRegistrationError: ``schema`` is not a valid JSON schema, or its references cannot
            be followed.

    Examples:
        >>> check = json_schema_validator(
        ...     {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        ...     owner="t")
        >>> check({"n": 1}), check({})
        ([], ["arguments: 'n' is a required property"])
    """
    # Imported here: jsonschema (with referencing and attrs) is a quarter of the package's own
    # import time, and nothing needs it until a tool is registered.
    import jsonschema.validators
    import referencing
    from jsonschema.exceptions import SchemaError

    from ai_agent.tools.schema_refs import reference_problem

    def refused(why: str) -> ToolRegistrationError:
        return ToolRegistrationError(f"tool {owner!r}: its parameters {why}")

    if nested_past(schema, MAX_SCHEMA_DEPTH):
        raise refused(f"are a JSON schema nested more than {MAX_SCHEMA_DEPTH} levels deep")
    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(dict(schema))
    except SchemaError as exc:
        raise refused(f"are not a valid JSON schema: {exc.message}") from None
    problem = reference_problem(schema, str(cls.META_SCHEMA.get("$schema", "")))
    if problem is not None:
        raise refused(f"cannot be checked: {problem}; fix the schema, or leave the tool out")
    # An empty registry: a $ref is followed inside the schema only, never fetched from a URL.
    checker = cls(schema, registry=referencing.Registry())

    def validate(args: dict[str, Any]) -> list[str]:
        if nested_past(args, MAX_ARGUMENT_DEPTH):
            return [_too_deep()]
        try:
            errors = sorted(checker.iter_errors(args), key=lambda e: [str(p) for p in e.path])
        except RecursionError:  # the schema's cycles end (checked above): the value is too deep
            return [_too_deep()]
        return [f"{_where(tuple(e.path))}: {_short(e.message)}" for e in errors[:_MAX_PROBLEMS]]

    return validate


def _too_deep() -> str:
    return (
        f"arguments: nested too deeply (more than {MAX_ARGUMENT_DEPTH} levels of lists and "
        "objects); send a flatter value"
    )


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
