"""A checkpoint's skeleton: the checkpoint without its values, and how a row stores one.

A skeleton holds a checkpoint's channel versions, what each node has seen, its other keys, and
per channel a reference to where the value is (`Ref`). A row of ``delta_checkpoints`` stores it
in full (`full_form`) or as what changed since its parent's (`diff_form`, read back by
`apply_diff`), with at most `MAX_DIFF_DEPTH` diffs in a row. The format is drawn in the
``delta`` module's docstring. Nothing here touches the database.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
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
    out: dict[str, Any] = {"x": {}, "cv": skel.versions, "vs": skel.seen}
    out["r"] = {ch: _stored_ref(r) for ch, r in skel.refs.items()}
    extra = _stored_time(skel.extra, out)
    out["x"] = {k: v for k, v in extra.items() if k != "id"}
    return out


def from_full(data: dict[str, Any], depth: int) -> Skeleton:
    """A skeleton from a full row."""
    extra = dict(data["x"])
    if "t" in data:
        extra["ts"] = time_text(data["t"])
    return Skeleton(dict(data["cv"]), dict(data["vs"]), _refs(data["r"]), extra, depth)


def _refs(stored: dict[str, Any]) -> dict[str, Ref]:
    """References as a row stores them (`_stored_ref`; msgpack reads a tuple back as a list)."""
    return {ch: _ref(r) for ch, r in stored.items()}


def _ref(stored: Any) -> Ref:
    kind = type(stored)
    if kind is list:
        return tuple(stored)
    if kind is bytes:
        return ("msgpack", stored)
    if stored is None:
        return _NULL
    return cast(Ref, stored)


_NULL = ("null", b"")
"""A channel whose value is None, inline: what LangGraph's branch channels hold."""


def _stored_ref(ref: Ref) -> Any:
    """A reference as format 5 stores it: a small msgpack value as its bytes, None as nil.

    Most steps set a few small scalars (a stage name, a counter, a branch marker): without the
    type's name beside each, a checkpoint row is about 20 bytes shorter.
    """
    if type(ref) is tuple and len(ref) == 2 and type(ref[0]) is str:
        if ref[0] == "msgpack" and type(ref[1]) is bytes:
            return ref[1]
        if ref == _NULL:
            return None
    return ref


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def time_text(micros: int) -> str:
    """The text of a UTC time given as microseconds since the epoch, as LangGraph writes it."""
    return (_EPOCH + timedelta(microseconds=micros)).isoformat()


def _stored_time(extra: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """``extra`` without its timestamp when ``out["t"]``, an integer, gives the same text back.

    LangGraph's ``ts`` is ``datetime.now(timezone.utc).isoformat()``: 32 characters that are 9
    bytes as microseconds. Any other text (another zone, another shape) is kept as it is.
    """
    ts = extra.get("ts")
    if type(ts) is not str or len(ts) < 25 or not ts.endswith("+00:00"):
        return extra
    try:
        when = datetime.fromisoformat(ts)
    except ValueError:
        return extra
    # The text is the time's own: `time_text` of the same instant in UTC writes it again.
    if when.isoformat() != ts:
        return extra
    out["t"] = (when - _EPOCH) // _MICROSECOND
    return {k: v for k, v in extra.items() if k != "ts"}


def is_view(ref: Ref) -> bool:
    """Whether a reference names a lineage's first items: a list or a dict's change log."""
    return type(ref) is tuple and type(ref[0]) is int


def diff_form(old: Skeleton, new: Skeleton) -> dict[str, Any]:
    """What changed from ``old`` to ``new``; only the parts that changed are written.

    The checkpoint's other keys too (format 5, ``xd`` and ``x-``: most steps change only
    ``updated_channels``); format 4 and before wrote them all (``x``), which still reads.
    """
    out: dict[str, Any] = {}
    extra = _stored_time(new.extra, out)
    before = old.extra
    xd = {k: v for k, v in extra.items() if k != "id" and (k not in before or before[k] != v)}
    gone = [k for k in before if k not in extra and k not in ("id", "ts")]
    if "ts" in before and "ts" not in extra and "t" not in out:
        gone.append("ts")
    if xd:
        out["xd"] = xd
    if gone:
        out["x-"] = gone
    for key, a, b in (("cv", old.versions, new.versions), ("r", old.refs, new.refs)):
        changed = {k: v for k, v in b.items() if k not in a or a[k] != v}
        removed = [k for k in a if k not in b]
        if changed:
            out[key] = changed if key == "cv" else {k: _stored_ref(v) for k, v in changed.items()}
        if removed:
            out[key + "-"] = removed
    seen = {n: vs for n, vs in new.seen.items() if old.seen.get(n) is not vs}
    gone_seen = [n for n in old.seen if n not in new.seen]
    if seen:
        out["vs"] = seen
    if gone_seen:
        out["vs-"] = gone_seen
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
    if "x" in data:  # format 4 and before: every other key, in full
        extra = dict(data["x"])
    else:
        extra = {k: v for k, v in base.extra.items() if k != "id"}
        extra.update(data.get("xd", {}))
        for key in data.get("x-", ()):
            extra.pop(key, None)
    if "t" in data:
        extra["ts"] = time_text(data["t"])
    return Skeleton(versions, seen, refs, extra, depth)


def as_checkpoint(skel: Skeleton, values: dict[str, Any]) -> Checkpoint:
    """The checkpoint LangGraph put: the skeleton's keys with the channel values read for it."""
    out: dict[str, Any] = dict(skel.extra)
    out["channel_versions"] = dict(skel.versions)
    out["versions_seen"] = {node: dict(vs) for node, vs in skel.seen.items()}
    out["channel_values"] = values
    return cast("Checkpoint", out)
