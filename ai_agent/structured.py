"""Typed outputs: the type a run's final answer must fit, as a schema, a check and a rebuild.

`OutputSpec.of` takes what ``Agent(output_type=...)`` accepts: a pydantic model, a dataclass or
a TypedDict (each through pydantic's ``TypeAdapter``), or a JSON Schema as a dict (what
``--output-schema FILE`` reads), whose values stay plain data. Its JSON Schema must describe an
object: that is what a chat server's ``response_format`` and a tool's arguments can carry.

A run keeps its answer as plain JSON data (``RunState["output"]``, the strict checkpoint
serializer's kind of value) and its schema beside it (``RunState["output_schema"]``); the typed
value is rebuilt from the data and the type wherever a result is read (`OutputSpec.value`), so no
user type ever enters a checkpoint.

Examples:
    >>> from pydantic import BaseModel
    >>> class Total(BaseModel):
    ...     amount: float
    ...     currency: str
    >>> spec = OutputSpec.of(Total)
    >>> spec.name, spec.schema["required"]
    ('Total', ['amount', 'currency'])
    >>> spec.problems({"amount": "many", "currency": "EUR"})
    ['amount: Input should be a valid number, unable to parse string as a number']
    >>> spec.value(spec.data({"amount": "12.5", "currency": "EUR"}))
    Total(amount=12.5, currency='EUR')
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ai_agent.datafiles import strict_loads, valid_data
from ai_agent.errors import OutputSchemaError, OutputValidationError

__all__ = ["ANSWER_TOOL", "MAX_PROBLEMS", "OutputSpec", "parse_answer"]

#: The name of the final-answer tool (``output.mode = "tool"``): its arguments are the answer.
ANSWER_TOOL = "final_answer"
#: Problems listed for one answer at most (the model and the person get the first ones).
MAX_PROBLEMS = 8
_NAME = re.compile(r"[^A-Za-z0-9_-]+")


def _name(text: str) -> str:
    """A schema name as OpenAI's ``json_schema.name`` takes it (a-z, 0-9, _ and -, 64 at most)."""
    return _NAME.sub("_", text).strip("_")[:64] or "output"


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _problem(path: Iterable[Any], message: str) -> str:
    """One problem, bounded: its path holds the answer's own keys, which the model chose."""
    where = ".".join(_short(str(p), 40) for p in path) or "answer"
    return f"{_short(where, 120)}: {_short(message)}"


def _raised(name: str, doing: str, exc: Exception) -> str:
    return (
        f"answer: {doing} raised {type(exc).__name__} ({_short(str(exc), 120)}); the output "
        f"type {name}'s validators should raise ValueError for an answer they refuse"
    )


# The integers a checkpoint can keep (msgpack's): a larger one failed the run's checkpoint
# write with "Integer exceeds 64-bit range", after the answer had been taken.
_INT_RANGE = range(-(2**63), 2**64)


def _unstorable(data: Any) -> list[str]:
    """What in an answer's plain data no checkpoint can keep, or NaN/Infinity a validator made."""
    try:
        json.dumps(data, allow_nan=False)
    except ValueError:
        return ["answer: NaN and Infinity are not JSON numbers; give a number (or null)"]
    found: list[str] = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(data, ())]
    while stack and len(found) < MAX_PROBLEMS:  # iterative: the data may nest deeply
        item, path = stack.pop()
        if isinstance(item, dict):
            stack.extend((v, (*path, k)) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, (*path, i)) for i, v in enumerate(item))
        elif isinstance(item, int) and not isinstance(item, bool) and item not in _INT_RANGE:
            found.append(_problem(path, "the integer is too large to keep (64 bits at most)"))
    return found


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """What a run's final answer must fit: its JSON Schema, how to check it, how to type it.

    Build it with `OutputSpec.of` (or `OutputSpec.stored` for the schema a run kept).

    Attributes:
        name: The schema's name, sent with it (``response_format``'s ``json_schema.name``).
        schema: The JSON Schema of an object.
        output_type: The Python type answers are rebuilt as (None: plain JSON data).
    """

    name: str
    schema: dict[str, Any]
    output_type: Any = None
    # The typed value of some data and [], or None and what is wrong with it: one validation,
    # so a validator runs once per answer checked (not once to check and again to type it).
    _check: Callable[[Any], tuple[Any, list[str]]] = field(
        repr=False, compare=False, default=lambda d: (d, [])
    )
    _plain: Callable[[Any], Any] = field(repr=False, compare=False, default=lambda v: v)

    @classmethod
    def of(cls, output_type: Any) -> OutputSpec:
        """The spec of a pydantic model, a dataclass, a TypedDict or a JSON Schema dict.

        Raises:
            OutputSchemaError: pydantic cannot describe the type, its schema is not an object's,
                or the JSON Schema is invalid.
        """
        if isinstance(output_type, OutputSpec):
            return output_type
        if isinstance(output_type, Mapping):
            return cls.from_schema(output_type)
        return _from_type(output_type)

    @classmethod
    def from_schema(cls, schema: Mapping[str, Any], name: str | None = None) -> OutputSpec:
        """The spec of a JSON Schema; answers stay plain JSON data.

        Raises:
            OutputSchemaError: the schema is invalid, or does not describe an object.
        """
        # Imported here: jsonschema is slow to import, and only typed runs need it.
        import jsonschema.validators
        from jsonschema.exceptions import SchemaError
        from referencing.exceptions import Unresolvable

        plain = _json_copy(schema)
        try:
            validator_class = jsonschema.validators.validator_for(plain)
            validator_class.check_schema(plain)
        except SchemaError as exc:
            raise OutputSchemaError(
                f"the output schema is not a valid JSON Schema: {_short(exc.message)} (at "
                f"{'/'.join(str(p) for p in exc.path) or 'its root'}); fix the schema"
            ) from None
        _require_object(plain)
        checker = validator_class(plain)
        # jsonschema resolves a $ref only when an answer reaches it: one that points at nothing
        # would pass check_schema and then crash the run's last step. Refused here instead.
        for ref in _local_refs(plain):
            try:
                checker.evolve(schema={"$ref": ref}).is_valid(None)
            except Unresolvable:
                raise OutputSchemaError(
                    f"the output schema's $ref {ref!r} points at nothing in it; fix the schema"
                ) from None

        def check(data: Any) -> tuple[Any, list[str]]:
            try:
                # The first problems only: the answer is the model's, and a list of 250,000
                # wrong items made as many errors (15 s in the event loop and 900 MB).
                found = list(itertools.islice(checker.iter_errors(data), MAX_PROBLEMS))
            except Unresolvable as exc:  # a $ref _local_refs cannot see (under a nested $id)
                return None, [f"answer: the output schema cannot be checked: {_short(str(exc))}"]
            errors = sorted(found, key=lambda e: [str(p) for p in e.path])
            return data if not errors else None, [_problem(e.path, e.message) for e in errors]

        title = plain.get("title")
        return cls(
            _name(name or (title if isinstance(title, str) else "output")), plain, None, check
        )

    @classmethod
    def stored(cls, data: Any) -> OutputSpec:
        """The spec of the schema a run kept (`stored_form`): answers as plain data.

        Raises:
            OutputSchemaError: what the run kept is not a schema of an object.
        """
        schema = data.get("schema") if isinstance(data, Mapping) else None
        if not isinstance(schema, Mapping):
            raise OutputSchemaError(
                "the run's stored output schema cannot be read (its output_schema is not "
                '{"name": ..., "schema": {...}}); resume it with the output type it was made '
                "with (Agent(output_type=...) or --output-schema FILE)"
            )
        return cls.from_schema(schema, str(data.get("name") or "output"))

    def stored_form(self) -> dict[str, Any]:
        """The schema as a run keeps it in its state: plain JSON data."""
        return {"name": self.name, "schema": self.schema}

    def problems(self, data: Any) -> list[str]:
        """What is wrong with an answer (JSON data); empty when it fits."""
        return self.checked(data)[1]

    def checked(self, answer: Any) -> tuple[Any, list[str]]:
        """An answer's plain JSON data (as `data` gives it) and [], or None and its problems.

        The type's validators run once. An answer is the model's output (a final_answer call's
        arguments come parsed by the model's client), so whatever it makes the check do is a
        problem to send back, never a traceback that fails the run: nesting past what the
        checks can recurse into, a validator that raises something other than ValueError, a
        value no checkpoint can keep.
        """
        try:
            # JSON may escape half of a character ("\ud800"): kept, it failed the run where
            # the answer was first written (the memory file), after it had been taken.
            answer = valid_data(answer)
        except RecursionError:
            return None, ["answer: it is nested too deeply to check"]
        typed, found = self._typed_or_problems(answer)
        if found:
            return None, found
        try:
            plain = self._plain(typed)
            found = _unstorable(plain)
        except RecursionError:
            return None, ["answer: it is nested too deeply to keep"]
        except Exception as exc:  # a user type's serializer, as for its validators below
            return None, [_raised(self.name, "writing it as JSON", exc)]
        return (None, found) if found else (plain, [])

    def data(self, answer: Any) -> Any:
        """A fitting answer as the plain JSON data a run keeps (defaults filled, types coerced).

        Raises:
            OutputValidationError: the answer does not fit.
        """
        plain, found = self.checked(answer)
        if found:
            raise self._unfit(found)
        return plain

    def value(self, data: Any) -> Any:
        """The typed value of an answer's data (the data itself for a JSON Schema spec).

        Raises:
            OutputValidationError: the data does not fit the type.
        """
        typed, found = self._typed_or_problems(data)
        if found:
            # A run's output was checked against its type when the model gave it, so stored
            # data that does not fit was read with another type, or was changed since.
            raise OutputValidationError(
                f"the stored output does not fit {self.name}: {'; '.join(found)}; the run "
                "checked it when the model gave it, so either the run was made with another "
                "type (read it as data: get_state(thread)['output'], or with that type) or "
                "its stored state was changed outside ai-agent"
            )
        return typed

    def _typed_or_problems(self, data: Any) -> tuple[Any, list[str]]:
        try:
            json.dumps(data, allow_nan=False)
            return self._check(data)
        except RecursionError:
            return None, ["answer: it is nested too deeply to check"]
        except ValueError:
            return None, ["answer: NaN and Infinity are not JSON numbers; give a number (or null)"]
        except Exception as exc:  # pydantic passes on all but ValueError and AssertionError
            return None, [_raised(self.name, "checking it", exc)]

    def _unfit(self, found: list[str]) -> OutputValidationError:
        return OutputValidationError(f"the output does not fit {self.name}: {'; '.join(found)}")

    def response_format(self) -> dict[str, Any]:
        """The chat-completions ``response_format`` that asks the server for this schema."""
        return {"type": "json_schema", "json_schema": {"name": self.name, "schema": self.schema}}

    def answer_tool(self) -> dict[str, Any]:
        """The final-answer tool (OpenAI function schema): its arguments are the answer."""
        return {
            "type": "function",
            "function": {
                "name": ANSWER_TOOL,
                "description": f"Give the final answer ({self.name}); its arguments are the "
                "answer.",
                "parameters": self.schema,
            },
        }


def parse_answer(text: str) -> tuple[Any, str | None]:
    r"""The JSON value of an answer's text, and None; or None and why it is not JSON.

    A fenced block (```` ```json ... ``` ````) is read as its content: small models wrap JSON
    in one even when asked not to.

    Examples:
        >>> parse_answer('```json\n{"a": 1}\n```')
        ({'a': 1}, None)
        >>> parse_answer("It is 4.")[1]
        'the answer is not JSON: Expecting value at line 1 column 1'
    """
    body = text.strip()
    # Sliced, not matched: the pattern this replaces (```(?:json)?\s*(.*?)\s*```) backtracked
    # in cubic time on a fence left open before a long run of spaces: 4,000 of them took 45 s,
    # in the event loop, and a reply may hold a million characters.
    if len(body) >= 6 and body.startswith("```") and body.endswith("```"):
        inner = body[3:-3]
        body = (inner[4:] if inner.startswith("json") else inner).strip()
    try:
        # strict: json.loads alone keeps the last of a key given twice (an answer saying two
        # things would mean the last) and takes NaN (invalid JSON in the final text).
        return strict_loads(body), None
    except json.JSONDecodeError as exc:
        return None, f"the answer is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    except RecursionError:  # the model's text is hostile input: no traceback for it
        return None, "the answer is not JSON: it is nested too deeply to read"
    except ValueError as exc:  # a key twice, NaN, a number too large or of 4,300+ digits
        return None, f"the answer is not JSON: {_short(str(exc))}"


def _json_copy(schema: Mapping[str, Any]) -> dict[str, Any]:
    try:
        plain = json.loads(json.dumps(dict(schema)))
    except (TypeError, ValueError) as exc:
        raise OutputSchemaError(f"the output schema is not JSON data: {exc}") from None
    return dict(plain)


def _local_refs(schema: Any, root: bool = True) -> set[str]:
    """The ``$ref``s of a schema that point into it (``#...``), outside any nested ``$id``."""
    found: set[str] = set()
    if isinstance(schema, dict):
        if not root and "$id" in schema:
            return found  # its refs resolve against its own $id: the run-time check sees them
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#"):
            found.add(ref)
        for value in schema.values():
            found |= _local_refs(value, False)
    elif isinstance(schema, list):
        for value in schema:
            found |= _local_refs(value, False)
    return found


def _root_inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """A schema whose root is only a ``$ref`` into its ``$defs``, with that definition inlined.

    pydantic writes a model that refers to itself (a tree) as ``{"$defs": {"Node": {...}},
    "$ref": "#/$defs/Node"}``: an object's schema all the same, which `_require_object` (and a
    server's response_format) reads at the root. The ``$defs`` stay for the inner refs.
    """
    ref, defs = schema.get("$ref"), schema.get("$defs")
    if set(schema) != {"$ref", "$defs"} or not isinstance(ref, str) or not isinstance(defs, dict):
        return schema
    target = defs.get(ref.removeprefix("#/$defs/")) if ref.startswith("#/$defs/") else None
    return {**target, "$defs": defs} if isinstance(target, dict) else schema


def _require_object(schema: Mapping[str, Any]) -> None:
    if schema.get("type") != "object":
        raise OutputSchemaError(
            'the output schema must describe a JSON object ("type": "object" at its root): '
            "a chat server's response_format and a tool's arguments carry objects; put a list "
            "or a single value in a field of an object"
        )


def _from_type(output_type: Any) -> OutputSpec:
    """The spec of a Python type pydantic knows (a model, a dataclass, a TypedDict)."""
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(output_type)
        schema = adapter.json_schema()
    except Exception as exc:  # pydantic raises several kinds for a type it cannot describe
        why = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise OutputSchemaError(
            f"output_type {output_type!r} cannot be described as a JSON Schema ({why}); "
            "use a pydantic model, a dataclass or a TypedDict"
        ) from None
    schema = _root_inlined(schema)
    _require_object(schema)

    def check(data: Any) -> tuple[Any, list[str]]:
        try:
            return adapter.validate_python(data), []
        except ValidationError as exc:
            return None, [
                _problem(e["loc"], e["msg"])
                for e in exc.errors(include_input=False, include_url=False)[:MAX_PROBLEMS]
            ]

    def plain(value: Any) -> Any:
        return adapter.dump_python(value, mode="json")

    name = _name(str(getattr(output_type, "__name__", "output")))
    return OutputSpec(name, schema, output_type, check, plain)
