"""The skeleton codec: a diff row read back on its parent gives the very skeleton it was made of."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

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


def test_an_unchanged_skeleton_diffs_to_nothing() -> None:
    skel = _skeleton("1", versions={"a": 1}, seen={"draft": {"a": 1}}, refs={"a": 7})
    assert diff_form(skel, skel) == {}


@pytest.mark.parametrize(
    "ts",
    [
        datetime.now(UTC).isoformat(),
        "2026-11-26T11:39:48+00:00",  # no microseconds: isoformat leaves them out
        "1969-12-31T23:59:59.999999+00:00",
        "2026-11-26T11:39:48.283767+02:00",  # another zone: kept as text
        "2026-11-26T11:39:48.283767Z",
        "not a time but ends +00:00",
        "2026-11-26 11:39:48.283767+00:00",  # another shape of the same time
    ],
)
def test_a_timestamp_reads_back_as_the_very_text_written(ts: str) -> None:
    old = Skeleton({"a": 1}, {}, {"a": 7}, {"v": 4, "id": "1", "ts": "2000-01-01T00:00:00+00:00"})
    new = Skeleton({"a": 2}, {}, {"a": 7}, {"v": 4, "id": "2", "ts": ts})
    full = full_form(new)
    assert from_full(full, 0).extra == {"v": 4, "ts": ts}
    assert ("t" in full) == (ts.endswith("+00:00") and ts[10] == "T" and ts[0] != "n")
    back = apply_diff(old, diff_form(old, new), 1)
    assert back.extra == {"v": 4, "ts": ts}


def test_other_keys_added_changed_and_removed_read_back() -> None:
    old = Skeleton({}, {}, {}, {"v": 4, "id": "1", "ts": "a", "gone": 1, "same": [1]})
    new = Skeleton({}, {}, {}, {"v": 5, "id": "2", "same": [1], "new": 2})
    diff = diff_form(old, new)
    assert diff == {"xd": {"v": 5, "new": 2}, "x-": ["gone", "ts"]}
    assert apply_diff(old, diff, 1).extra == {"v": 5, "same": [1], "new": 2}


def test_a_format_4_diff_holds_every_other_key_and_reads_as_before() -> None:
    old = Skeleton({"a": 1}, {}, {"a": 7}, {"v": 4, "id": "1", "ts": "a", "gone": 1})
    diff = {"x": {"v": 4, "ts": "b"}, "r": {"a": ["msgpack", b"\x01"]}}
    back = apply_diff(old, diff, 1)
    assert back.extra == {"v": 4, "ts": "b"}
    assert back.refs == {"a": ("msgpack", b"\x01")}


def test_small_values_are_stored_without_their_type_name() -> None:
    skel = _skeleton("1", refs={"a": ("msgpack", b"\x01"), "b": ("null", b""), "c": ("json", b"1")})
    stored = full_form(skel)["r"]
    assert stored == {"a": b"\x01", "b": None, "c": ("json", b"1")}
    assert from_full({**full_form(skel), "r": stored}, 0).refs == skel.refs


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
