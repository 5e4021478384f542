"""Request ids (uuid4, ULID) and W3C trace context values."""

from __future__ import annotations

import re
import uuid

import pytest

from ai_agent.observability.ids import (
    new_id,
    new_span_id,
    new_trace_id,
    parse_traceparent,
    thread_span_context,
    traceparent,
    ulid,
)

ULID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")


def test_ulid_matches_the_specs_example_timestamp() -> None:
    # The ULID spec's example: 1469918176385 ms encodes as 01ARYZ6S41.
    assert ulid(now_ms=1469918176385, randomness=bytes(10)) == "01ARYZ6S41" + "0" * 16
    assert ulid(now_ms=0, randomness=b"\xff" * 10) == "0" * 10 + "Z" * 16


def test_ulids_are_26_crockford_characters_and_sort_by_time() -> None:
    earlier = ulid(now_ms=1_700_000_000_000)
    later = ulid(now_ms=1_700_000_000_001)
    assert ULID.fullmatch(earlier) and ULID.fullmatch(later)
    assert earlier < later
    assert len({new_id("ulid") for _ in range(200)}) == 200


def test_uuid4_ids_are_canonical_version_4() -> None:
    value = new_id("uuid4")
    assert str(uuid.UUID(value)) == value and uuid.UUID(value).version == 4
    assert new_id() != new_id()


def test_trace_and_span_ids_are_hex_and_never_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    assert re.fullmatch(r"[0-9a-f]{32}", new_trace_id())
    assert re.fullmatch(r"[0-9a-f]{16}", new_span_id())
    draws = iter([bytes(8), b"\x00" * 7 + b"\x01"])
    monkeypatch.setattr("os.urandom", lambda n: next(draws))
    assert new_span_id() == "0000000000000001"  # the all-zero draw was thrown away


def test_traceparent_round_trips_and_rejects_invalid_values() -> None:
    trace_id, span_id = new_trace_id(), new_span_id()
    header = traceparent(trace_id, span_id, sampled=False)
    assert header == f"00-{trace_id}-{span_id}-00"
    assert parse_traceparent(header) == (trace_id, span_id, False)
    assert parse_traceparent(traceparent(trace_id, span_id, sampled=True)) == (
        trace_id,
        span_id,
        True,
    )
    for bad in ("", "01-" + trace_id + "-" + span_id + "-00", f"00-{trace_id}-{'0' * 16}-01"):
        assert parse_traceparent(bad) is None


def test_a_thread_always_links_to_the_same_span_context() -> None:
    trace_id, span_id = thread_span_context("thread-a")
    assert (trace_id, span_id) == thread_span_context("thread-a")
    assert thread_span_context("thread-b") != (trace_id, span_id)
    assert parse_traceparent(traceparent(trace_id, span_id, sampled=False)) is not None
