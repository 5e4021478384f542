"""JSON schemas with ``$ref``s: recursive ones check arguments, ones that cannot be checked are
refused when the tool is registered, and arguments nested too deeply are refused as such."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ai_agent import ToolSpec
from ai_agent.errors import ToolRegistrationError
from ai_agent.tools import ToolRegistry
from ai_agent.tools.schema import MAX_ARGUMENT_DEPTH, json_schema_validator

NODE = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
    },
    "required": ["name"],
}
TREE = {
    "type": "object",
    "properties": {"root": {"$ref": "#/$defs/Node"}},
    "required": ["root"],
    "$defs": {"Node": NODE},
}


def with_defs(**defs: Any) -> dict[str, Any]:
    """An object schema whose property ``r`` is ``#/$defs/A``."""
    return {"type": "object", "properties": {"r": {"$ref": "#/$defs/A"}}, "$defs": defs}


def nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


def deep_schema(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


# Schemas that can be checked: none of these may be refused (they passed before the checks of
# references were added, and must still) ------------------------------------------------------
@pytest.mark.parametrize(
    ("schema", "args"),
    [
        (TREE, {"root": {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}}),
        (  # A -> B -> A, through properties
            with_defs(
                A={"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}},
                B={"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}},
            ),
            {"r": {"b": {"a": {"b": {}}}}},
        ),
        ({"type": "object", "properties": {"x": {"$ref": "#"}}}, {"x": {"x": {}}}),
        (  # draft-07 definitions
            {
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "properties": {"n": {"$ref": "#/definitions/N"}},
                "definitions": {"N": {"properties": {"k": {"items": {"$ref": "#/definitions/N"}}}}},
            },
            {"n": {"k": [{"k": []}]}},
        ),
        (  # a reference by $id, and one by $anchor
            {
                "$id": "https://tools.test/root",
                "type": "object",
                "properties": {"n": {"$ref": "node"}, "m": {"$ref": "#leaf"}},
                "$defs": {
                    "N": {"$id": "node", "properties": {"k": {"$ref": "node"}}},
                    "L": {"$anchor": "leaf", "properties": {"k": {"$ref": "#leaf"}}},
                },
            },
            {"n": {"k": {"k": {}}}, "m": {"k": 1}},
        ),
        (  # the meta-schema: the argument must be a schema
            {"properties": {"s": {"$ref": "https://json-schema.org/draft/2020-12/schema"}}},
            {"s": {"type": "string"}},
        ),
        (with_defs(L={"$ref": "#/$defs/L"}, A={"type": "string"}), {"r": "x"}),  # L: unused
        (with_defs(A=False), {}),  # false forbids r: a schema may say so
        (  # A needs an A only when it is an object: a string ends it
            with_defs(A={"required": ["a"], "properties": {"a": {"$ref": "#/$defs/A"}}}),
            {"r": {"a": {"a": "end"}}},
        ),
        (deep_schema(90), {"a": {"a": {}}}),
    ],
)
def test_a_schema_whose_references_end_checks_arguments(
    schema: dict[str, Any], args: dict[str, Any]
) -> None:
    check = json_schema_validator(schema, owner="t")
    assert check(args) == []


def test_a_recursive_schema_names_the_bad_part_of_a_deep_value() -> None:
    check = json_schema_validator(TREE, owner="t")
    value: dict[str, Any] = {"name": 7}
    for _ in range(40):  # 80 levels of lists and objects, within MAX_ARGUMENT_DEPTH
        value = {"name": "n", "children": [value]}
    (problem,) = check({"root": value})
    assert problem.startswith("root" + ".children.0" * 40 + ".name: 7 is not of type 'string'")


# Schemas that cannot be checked: refused at registration, saying which $ref and why -----------
@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        (with_defs(), "the $ref '#/$defs/A' leads to nothing in the schema"),
        (
            {"properties": {"s": {"$ref": "https://schemas.test/remote.json"}}},
            "'https://schemas.test/remote.json' leads to nothing in the schema (ai-agent "
            "fetches no schema from elsewhere)",
        ),
        ({"properties": {"n": {"$ref": "#/required"}}, "required": ["n"]}, "not a schema"),
        (with_defs(A={"$ref": "#/$defs/A"}), "'#/$defs/A' leads into a cycle of schemas"),
        (
            with_defs(
                A={"allOf": [{"$ref": "#/$defs/B"}]},
                B={"anyOf": [{"type": "string"}, {"$ref": "#/$defs/A"}]},
            ),
            "apply to the same value again and again",
        ),
        (
            with_defs(
                A={"type": "object", "required": ["a"], "properties": {"a": {"$ref": "#/$defs/A"}}}
            ),
            "'#/$defs/A' leads to a schema that always needs itself again",
        ),
        (
            with_defs(A={"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/A"}}),
            "no finite value fits it",
        ),
        (deep_schema(10_000), "a JSON schema nested more than 200 levels deep"),
    ],
)
def test_a_schema_whose_references_cannot_be_checked_is_refused_at_registration(
    schema: dict[str, Any], reason: str
) -> None:
    with pytest.raises(ToolRegistrationError) as caught:
        ToolRegistry([ToolSpec("t", lambda a, c: None, description="T.", parameters=schema)])
    message = str(caught.value)
    assert message.startswith("tool 't': its parameters ")
    assert reason in message
    assert "RecursionError" not in message


# Arguments nested too deeply -------------------------------------------------------------------
def test_arguments_nested_too_deeply_are_refused_as_such_and_the_tool_never_runs() -> None:
    ran: list[Any] = []

    def plant(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        ran.append(args)
        return {"status": "ok", "content": "ran"}

    tree = ToolSpec("tree", plant, description="Takes a tree.", parameters=TREE)
    registry = ToolRegistry([tree])
    snapshot = registry.snapshot()
    too_deep = f"nested too deeply (more than {MAX_ARGUMENT_DEPTH} levels of lists and objects)"
    for depth in (MAX_ARGUMENT_DEPTH + 1, 10_000):
        args = {"root": {"name": "a", "children": nested(depth)}}
        result = asyncio.run(snapshot.execute({"id": "c1", "name": "tree", "args": args}, {}))
        assert result["status"] == "error"
        assert result["meta"]["code"] == "SCHEMA_VIOLATION"
        assert too_deep in str(result["error"])
        assert "could not be checked" not in str(result["error"])
    assert ran == []
    fits = {"root": {"name": "a", "children": [{"name": "b"}]}}
    result = asyncio.run(snapshot.execute({"id": "c2", "name": "tree", "args": fits}, {}))
    assert (result["status"], result["content"]) == ("ok", "ran")
