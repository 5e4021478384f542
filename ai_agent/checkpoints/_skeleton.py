"""A checkpoint's skeleton: the checkpoint without its values, and how a row stores one.

A skeleton holds a checkpoint's channel versions, what each node has seen, its other keys, and
per channel a reference to where the value is (`Ref`). A row of ``delta_checkpoints`` stores it
in full (`full_form`) or as what changed since its parent's (`diff_form`, read back by
`apply_diff`), with at most `MAX_DIFF_DEPTH` diffs in a row. The format is drawn in the
``delta`` module's docstring. Nothing here touches the database.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # types only: the light reader (`reader`) loads no LangGraph
    from langgraph.checkpoint.base import Checkpoint

__all__ = [
    "EMPTY",
    "MAX_DIFF_DEPTH",
    "Ref",
    "Skeleton",
    "apply_diff",
    "as_checkpoint",
    "diff_form",
    "from_full",
    "full_form",
    "is_view",
]

Ref = int | tuple[Any, ...]
"""Where a channel's value is, as a skeleton names it (format 2 added the two tuples, 4 the third).

- ``int``: the id of a ``delta_values`` row (``EMPTY``: the channel has no value);
- ``(lineage, length)``: a list, the first ``length`` items of a lineage;
- ``(type, bytes)``: a small value, serialized, kept in the skeleton itself;
- ``(lineage, length, "d")``: a dict, what the first ``length`` change records of a lineage
  build (``_dicts``).

The tuples save a row per changed channel and step: most steps change a few small scalars and
grow a list or two, and each row is one more statement and one more page in the commit.
"""

EMPTY = 0
"""The value reference of a channel that has a version but no value (LangGraph's "empty")."""

MAX_DIFF_DEPTH = 31
"""A checkpoint's skeleton is stored in full after this many diffs in a row (bounded reads)."""


@dataclass(slots=True)
class Skeleton:
    """A checkpoint without its values, as its rows describe it once the diffs are applied.

    Attributes:
        versions: ``channel_versions``.
        seen: ``versions_seen``.
        refs: Channel -> where its value is (see `Ref`).
        extra: Every other key of the checkpoint (``v``, ``id``, ``ts``, ``updated_channels``).
        depth: Diffs since the last full skeleton on this checkpoint's parent chain.
    """

    versions: dict[str, Any]
    seen: dict[str, dict[str, Any]]
    refs: dict[str, Ref]
    extra: dict[str, Any]
    depth: int = 0


def full_form(skel: Skeleton) -> dict[str, Any]:
    """A skeleton as a full row stores it (the id is the row's key, so it is left out)."""
    extra = {k: v for k, v in skel.extra.items() if k != "id"}
    return {"x": extra, "cv": skel.versions, "vs": skel.seen, "r": skel.refs}


def from_full(data: dict[str, Any], depth: int) -> Skeleton:
    """A skeleton from a full row."""
    return Skeleton(dict(data["cv"]), dict(data["vs"]), _refs(data["r"]), dict(data["x"]), depth)


def _refs(stored: dict[str, Any]) -> dict[str, Ref]:
    """References as a row stores them (msgpack reads a tuple back as a list)."""
    return {ch: tuple(r) if type(r) is list else r for ch, r in stored.items()}


def is_view(ref: Ref) -> bool:
    """Whether a reference names a lineage's first items: a list or a dict's change log."""
    return type(ref) is tuple and type(ref[0]) is int


def diff_form(old: Skeleton, new: Skeleton) -> dict[str, Any]:
    """What changed from ``old`` to ``new``; only the parts that changed are written."""
    out: dict[str, Any] = {"x": {k: v for k, v in new.extra.items() if k != "id"}}
    for key, a, b in (("cv", old.versions, new.versions), ("r", old.refs, new.refs)):
        changed = {k: v for k, v in b.items() if k not in a or a[k] != v}
        removed = [k for k in a if k not in b]
        if changed:
            out[key] = changed
        if removed:
            out[key + "-"] = removed
    seen = {n: vs for n, vs in new.seen.items() if old.seen.get(n) is not vs}
    gone = [n for n in old.seen if n not in new.seen]
    if seen:
        out["vs"] = seen
    if gone:
        out["vs-"] = gone
    return out


def apply_diff(base: Skeleton, data: dict[str, Any], depth: int) -> Skeleton:
    """The skeleton a diff row describes, given its parent's."""
    versions = {**base.versions, **data.get("cv", {})}
    refs = {**base.refs, **_refs(data.get("r", {}))}
    seen = {**base.seen, **data.get("vs", {})}
    for key in data.get("cv-", ()):
        versions.pop(key, None)
    for key in data.get("r-", ()):
        refs.pop(key, None)
    for key in data.get("vs-", ()):
        seen.pop(key, None)
    return Skeleton(versions, seen, refs, dict(data["x"]), depth)


def as_checkpoint(skel: Skeleton, values: dict[str, Any]) -> Checkpoint:
    """The checkpoint LangGraph put: the skeleton's keys with the channel values read for it."""
    out: dict[str, Any] = dict(skel.extra)
    out["channel_versions"] = dict(skel.versions)
    out["versions_seen"] = {node: dict(vs) for node, vs in skel.seen.items()}
    out["channel_values"] = values
    return cast("Checkpoint", out)
