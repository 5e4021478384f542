"""What a JSON schema's ``$ref``s do, checked once, when a tool is registered.

``jsonschema`` follows a ``$ref`` only when a value reaches it, so a recursive schema (a tree
node whose ``children`` are nodes) checks any finite value. Three kinds of reference cannot be
handled at a call, and every call would fail the same way, blaming the model's arguments; they
are found here instead, so the tool is refused with the reason:

- a ``$ref`` that leads nowhere (a missing definition, a remote schema: nothing is fetched);
- a cycle that applies a schema to the same value again (``A = {"$ref": "#/$defs/A"}``, or A
  in B's ``allOf`` and B in A's ``anyOf``): checking it never ends;
- a cycle with no way out, which no finite value fits (a node that requires a child node).

The walk keeps its own stack: a hostile schema cannot exhaust Python's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import referencing
import referencing.exceptions
import referencing.jsonschema

__all__ = ["reference_problem"]

# Keywords whose subschemas apply to the value itself, and those that apply to a part of it (an
# item, a property, a property's name): only a cycle through the latter ends.
_SAME_VALUE_ONE = ("not", "if", "then", "else")
_SAME_VALUE_MANY = ("allOf", "anyOf", "oneOf")
_SAME_VALUE_MAP = ("dependentSchemas", "dependencies")
_PART_ONE = (
    *("items", "additionalItems", "contains", "propertyNames", "additionalProperties"),
    *("unevaluatedItems", "unevaluatedProperties"),
)
_PART_MANY = ("prefixItems", "items")
_PART_MAP = ("properties", "patternProperties")
_REFS = ("$ref", "$dynamicRef", "$recursiveRef")
_SCALARS = frozenset(("null", "boolean", "number", "integer", "string"))


@dataclass
class _Node:
    """One subschema (an object; ``true`` and ``false`` need no node)."""

    schema: Mapping[str, Any]
    same_value: list[Any] = field(default_factory=list)  # applied to the same value, refs too
    refs: list[tuple[str, Any]] = field(default_factory=list)  # (the $ref, what it points at)


def _subschemas(
    schema: Mapping[str, Any], one: tuple[str, ...], many: tuple[str, ...], mapping: tuple[str, ...]
) -> Iterator[Any]:
    for key in one:
        if isinstance(schema.get(key), (dict, bool)):
            yield schema[key]
    for key in many:
        if isinstance(schema.get(key), list):
            yield from (s for s in schema[key] if isinstance(s, (dict, bool)))
    for key in mapping:
        if isinstance(schema.get(key), dict):
            yield from (s for s in schema[key].values() if isinstance(s, (dict, bool)))


def _lookup(resolver: Any, ref: str) -> tuple[Any, Any] | str:
    """What ``ref`` points at and the resolver there, or why it points at nothing."""
    try:
        resolved = resolver.lookup(ref)
    except referencing.exceptions.Unresolvable:
        try:  # a meta-schema (the value must be a schema): jsonschema has those itself
            referencing.jsonschema.specification_with(ref.split("#", maxsplit=1)[0])
        except referencing.jsonschema.UnknownDialect:
            return "leads to nothing in the schema (ai-agent fetches no schema from elsewhere)"
        return True, None
    if not isinstance(resolved.contents, (dict, bool)):
        return "points at something that is not a schema"
    return resolved.contents, resolved.resolver


def _walk(schema: Mapping[str, Any], resolver: Any, spec: Any) -> dict[int, _Node] | str:
    """Every object subschema reachable from the root, by ``id``; or why a $ref is bad."""
    nodes: dict[int, _Node] = {}
    todo: list[tuple[Any, Any]] = [(schema, resolver)]
    while todo:
        current, here = todo.pop()
        if not isinstance(current, dict) or id(current) in nodes:
            continue
        node = nodes[id(current)] = _Node(current)
        for key in _REFS:
            ref = current.get(key)
            if not isinstance(ref, str):
                continue
            found = _lookup(here, ref)
            if isinstance(found, str):
                return f"the $ref {ref!r} {found}"
            target, there = found
            node.refs.append((ref, target))
            node.same_value.append(target)
            todo.append((target, there))
        same = list(_subschemas(current, _SAME_VALUE_ONE, _SAME_VALUE_MANY, _SAME_VALUE_MAP))
        node.same_value.extend(same)
        parts = list(_subschemas(current, _PART_ONE, _PART_MANY, _PART_MAP))
        for child in same + parts:
            if isinstance(child, dict):
                todo.append((child, here.in_subresource(spec.create_resource(child))))
    return nodes


def _endless(nodes: dict[int, _Node]) -> str | None:
    """A $ref on a cycle of schemas applied to the same value, if there is one."""
    # Take away schemas that lead to the same value only through schemas already taken away;
    # what stays is on such a cycle or leads into one.
    waiting = {k: {id(s) for s in n.same_value if isinstance(s, dict)} for k, n in nodes.items()}
    users: dict[int, list[int]] = {}
    for key, targets in waiting.items():
        for target in targets:
            users.setdefault(target, []).append(key)
    free = [key for key, targets in waiting.items() if not targets]
    while free:
        done = free.pop()
        for user in users.get(done, []):
            waiting[user].discard(done)
            if not waiting[user]:
                free.append(user)
    stuck = {key for key, targets in waiting.items() if targets}
    for key in stuck:
        for ref, target in nodes[key].refs:
            if id(target) in stuck:
                return ref
    return None


def _fits(node: _Node, fits: dict[int, bool]) -> bool:
    """Whether some finite value may fit ``node``, given which of its subschemas may be fitted.

    Generous: only what references decide is looked at (a ``false`` or a type no subschema
    allows is taken as it is), so a node found not to fit certainly fits nothing.
    """

    def ok(sub: Any) -> bool:
        return sub if isinstance(sub, bool) else fits[id(sub)]

    s = node.schema
    if not all(ok(target) for _, target in node.refs):
        return False
    if not all(ok(sub) for sub in _subschemas(s, (), ("allOf",), ())):
        return False
    for key in ("anyOf", "oneOf"):
        if isinstance(s.get(key), list) and not any(
            ok(sub) for sub in _subschemas(s, (), (key,), ())
        ):
            return False
    types = s.get("type")
    allowed = {types} if isinstance(types, str) else set(types) if isinstance(types, list) else None
    if allowed is None or allowed & _SCALARS or "enum" in s or "const" in s:
        return True
    return ("object" in allowed and _object_fits(s, ok)) or (
        "array" in allowed and _array_fits(s, ok)
    )


def _object_fits(s: Mapping[str, Any], ok: Any) -> bool:
    properties = s.get("properties")
    required = s.get("required")
    if not isinstance(properties, dict) or not isinstance(required, list):
        return True
    return all(
        ok(properties[p])
        for p in required
        if isinstance(p, str) and isinstance(properties.get(p), (dict, bool))
    )


def _array_fits(s: Mapping[str, Any], ok: Any) -> bool:
    least = s.get("minItems")
    if not isinstance(least, int) or least < 1:
        return True
    prefix, items = s.get("prefixItems"), s.get("items")
    first = (
        prefix[0]
        if isinstance(prefix, list) and prefix
        else items[0]
        if isinstance(items, list) and items
        else items
    )
    return ok(first) if isinstance(first, (dict, bool)) else True


def _fixpoint(nodes: dict[int, _Node], start: bool) -> dict[int, bool]:
    fits = dict.fromkeys(nodes, start)
    changed = True
    while changed:
        changed = False
        for key, node in nodes.items():
            now = _fits(node, fits)
            if now != fits[key]:
                fits[key], changed = now, True
    return fits


def _unending(nodes: dict[int, _Node]) -> str | None:
    """A $ref to a schema that no finite value fits, because it always needs itself again."""
    # Believing every schema fits and believing none fits meet wherever a value decides; where
    # they differ, only a value nested without end would do.
    finite, hopeful = _fixpoint(nodes, False), _fixpoint(nodes, True)
    for node in nodes.values():
        for ref, target in node.refs:
            if isinstance(target, dict) and hopeful[id(target)] and not finite[id(target)]:
                return ref
    return None


def reference_problem(schema: Mapping[str, Any], dialect: str) -> str | None:
    """Why ``schema``'s references cannot be checked at a call, or None when they can.

    Args:
        schema: A JSON schema that passed its meta-schema.
        dialect: The ``$schema`` URI of the draft it is read by.

    Examples:
        >>> draft = "https://json-schema.org/draft/2020-12/schema"
        >>> node = {"type": "object", "properties": {"kids": {"type": "array",
        ...         "items": {"$ref": "#/$defs/Node"}}}}
        >>> reference_problem({"properties": {"root": {"$ref": "#/$defs/Node"}},
        ...                    "$defs": {"Node": node}}, draft) is None
        True
        >>> reference_problem({"properties": {"a": {"$ref": "#/$defs/Gone"}}}, draft)[:40]
        "the $ref '#/$defs/Gone' leads to nothing"
    """
    spec = referencing.jsonschema.specification_with(
        dialect, default=referencing.Specification.OPAQUE
    )
    resource = spec.create_resource(dict(schema))
    resolver = referencing.Registry().resolver_with_root(resource)
    nodes = _walk(resource.contents, resolver, spec)
    if isinstance(nodes, str):
        return nodes
    if (ref := _endless(nodes)) is not None:
        return (
            f"the $ref {ref!r} leads into a cycle of schemas that apply to the same value again "
            "and again (through $ref, allOf, anyOf...), so checking arguments against it never "
            "ends"
        )
    if (ref := _unending(nodes)) is not None:
        return (
            f"the $ref {ref!r} leads to a schema that always needs itself again, with no way to "
            "end the nesting, so no finite value fits it"
        )
    return None
