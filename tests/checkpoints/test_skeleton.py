"""The skeleton codec: a diff row read back on its parent gives the very skeleton it was made of."""

from __future__ import annotations

from typing import Any

from ai_agent.checkpoints._skeleton import (
    Ref,
    Skeleton,
    apply_diff,
    as_checkpoint,
    diff_form,
    from_full,
    full_form,
    is_view,
)


def _skeleton(
    cid: str,
    *,
    versions: dict[str, Any] | None = None,
    seen: dict[str, dict[str, Any]] | None = None,
    refs: dict[str, Ref] | None = None,
) -> Skeleton:
    return Skeleton(versions or {}, seen or {}, refs or {}, {"v": 4, "id": cid, "ts": cid})


def test_a_diff_carries_changes_and_removals_of_every_part() -> None:
    old = _skeleton(
        "1",
        versions={"a": 1, "gone": 1},
        seen={"draft": {"a": 1}, "left": {"a": 1}},
        refs={"a": 7, "gone": (3, 10)},
    )
    new = _skeleton(
        "2",
        versions={"a": 2, "b": 1},
        seen={"draft": {"a": 2}, "act": {"b": 1}},
        refs={"a": ("msgpack", b"\x01"), "b": (3, 12)},
    )
    diff = diff_form(old, new)
    assert diff["cv-"] == ["gone"]
    assert diff["r-"] == ["gone"]
    assert diff["vs-"] == ["left"]
    assert set(diff["vs"]) == {"draft", "act"}
    back = apply_diff(old, diff, depth=1)
    back.extra["id"] = "2"  # the id is the row's key, not part of the diff
    assert back == Skeleton(new.versions, new.seen, new.refs, new.extra, 1)


def test_an_unchanged_skeleton_diffs_to_its_other_keys_only() -> None:
    skel = _skeleton("1", versions={"a": 1}, seen={"draft": {"a": 1}}, refs={"a": 7})
    assert diff_form(skel, skel) == {"x": {"v": 4, "ts": "1"}}


def test_a_full_row_reads_back_with_tuples_for_lists() -> None:
    skel = _skeleton("1", versions={"a": 1}, refs={"a": (3, 10), "b": 7})
    stored = full_form(skel)
    assert "id" not in stored["x"]
    stored["r"] = {k: list(r) if isinstance(r, tuple) else r for k, r in stored["r"].items()}
    back = from_full(stored, depth=0)  # msgpack gives lists back for tuples
    assert back.refs == {"a": (3, 10), "b": 7}
    assert is_view(back.refs["a"])
    assert not is_view(back.refs["b"])
    assert not is_view(("msgpack", b"\x01"))
    checkpoint = as_checkpoint(back, {"a": [1, 2]})
    assert checkpoint["channel_values"] == {"a": [1, 2]}
    assert checkpoint["channel_versions"] == {"a": 1}
