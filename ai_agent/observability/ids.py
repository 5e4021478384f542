"""Ids for runs, stages, model calls and tool calls, and W3C trace-context values.

Request ids come in the two formats of ``ObservabilityConfig.request_id_format``:

- ``uuid4``: the canonical 36-character form, ``"8f0e6a52-3c1d-4a57-9d2b-2f4c8b1e9a60"``;
- ``ulid``: 26 Crockford base-32 characters, a 48-bit millisecond timestamp then 80 random bits,
  so ids sort by creation time (to the millisecond) as plain strings.

The ULID generator is the dozen lines below rather than a dependency: the format is a fixed
bit layout, and the engine needs neither parsing nor monotonic ordering within one millisecond.

Trace and span ids are the W3C trace-context ones: 16 and 8 random bytes as lower-case hex, never
all zeros. `traceparent` puts them in the ``traceparent`` header's version-00 format.

Examples:
    >>> len(new_id("ulid")), len(new_id("uuid4"))
    (26, 36)
    >>> ulid(now_ms=0, randomness=bytes(10))
    '00000000000000000000000000'
    >>> traceparent("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", sampled=True)
    '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'
"""

from __future__ import annotations

import hashlib
import os
import re
import time
import uuid
from typing import Literal

__all__ = [
    "IdFormat",
    "new_id",
    "new_span_id",
    "new_trace_id",
    "parse_traceparent",
    "thread_span_context",
    "traceparent",
    "ulid",
]

IdFormat = Literal["uuid4", "ulid"]

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_TRACEPARENT = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")


def ulid(*, now_ms: int | None = None, randomness: bytes | None = None) -> str:
    r"""A ULID: 48 bits of Unix time in milliseconds, then 80 random bits, in Crockford base 32.

    Args:
        now_ms: The timestamp (default: now).
        randomness: The 10 random bytes (default: from ``os.urandom``).

    Examples:
        >>> ulid(now_ms=1_700_000_000_000, randomness=b"\xff" * 10)
        '01HF7YAT00ZZZZZZZZZZZZZZZZ'
    """
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    noise = os.urandom(10) if randomness is None else randomness
    value = ((ms & (2**48 - 1)) << 80) | int.from_bytes(noise[:10].rjust(10, b"\0"), "big")
    # 26 characters of 5 bits hold 130 bits: the top two are always zero.
    return "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


def new_id(fmt: IdFormat = "uuid4") -> str:
    """A fresh id in the configured format (``uuid4`` or ``ulid``)."""
    return ulid() if fmt == "ulid" else str(uuid.uuid4())


def _nonzero_hex(size: int) -> str:
    while True:
        raw = os.urandom(size)
        if any(raw):  # an all-zero id is invalid in W3C trace context
            return raw.hex()


def new_trace_id() -> str:
    """A random W3C trace id: 32 lower-case hex digits, not all zero."""
    return _nonzero_hex(16)


def new_span_id() -> str:
    """A random W3C span (parent) id: 16 lower-case hex digits, not all zero."""
    return _nonzero_hex(8)


def traceparent(trace_id: str, span_id: str, *, sampled: bool) -> str:
    """The ``traceparent`` header value (version 00) for a span."""
    return f"00-{trace_id}-{span_id}-{'01' if sampled else '00'}"


def parse_traceparent(value: str) -> tuple[str, str, bool] | None:
    """``(trace_id, span_id, sampled)`` of a version-00 ``traceparent``, or None if invalid.

    Examples:
        >>> parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        ('4bf92f3577b34da6a3ce929d0e0e4736', '00f067aa0ba902b7', True)
        >>> parse_traceparent("00-" + "0" * 32 + "-00f067aa0ba902b7-01") is None
        True
    """
    match = _TRACEPARENT.fullmatch(value.strip())
    if match is None:
        return None
    trace_id, span_id, flags = match.groups()
    if set(trace_id) == {"0"} or set(span_id) == {"0"}:
        return None
    return trace_id, span_id, bool(int(flags, 16) & 1)


def thread_span_context(thread_id: str) -> tuple[str, str]:
    """A stable ``(trace_id, span_id)`` standing for a thread, derived from its id.

    Every run of a thread (the first, and each resume, in any process) links its run span to
    this context, so a tracing backend can gather a thread's runs without the engine storing
    anything: the same thread id always gives the same ids.

    Examples:
        >>> thread_span_context("t1") == thread_span_context("t1")
        True
    """
    digest = hashlib.sha256(b"ai-agent thread " + thread_id.encode()).hexdigest()
    trace_id, span_id = digest[:32], digest[32:48]
    # A zero id is astronomically unlikely from SHA-256; keep the result valid regardless.
    return (trace_id if set(trace_id) != {"0"} else "1" * 32), (
        span_id if set(span_id) != {"0"} else "1" * 16
    )
