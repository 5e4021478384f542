"""The toolsmaker's audit log: append-only JSON lines, each chained to the one before it.

Every line is one event (``tool_build_requested`` ... ``tool_policy_blocked``, ``tool_rolled_back``)
with a sequence number and ``prev``, the sha256 of the previous line's bytes (64 zeros for the
first). A head file next to the log (``audit.jsonl.head``) holds the number of lines and the hash of
the last one, rewritten atomically after every append. `verify_audit` recomputes the chain:

- an edited line changes its hash, so the next line's ``prev`` no longer matches (an edited last
  line no longer matches the head);
- a deleted, inserted or reordered line breaks ``prev`` and the sequence numbers;
- a truncated log no longer matches the head.

What this does not give: someone who can rewrite the log *and* its head can forge a consistent
history. Keep a copy of the head hash that ``ai-agent tools audit --verify`` prints somewhere
else if that matters. Appends from several processes are serialised by an exclusive ``flock`` on
``audit.jsonl.lock``, so two writers never interleave or fork the chain.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ai_agent.tools.maker.storage import atomic_write, read_json

__all__ = ["EVENTS", "GENESIS", "AuditLog", "AuditReport", "verify_audit"]

GENESIS = "0" * 64
EVENTS = (
    "tool_build_requested",
    "tool_build_generated",
    "tool_build_validated",
    "tool_approval_required",
    "tool_approved",
    "tool_activated",
    "tool_build_rejected",
    "tool_rolled_back",
    "tool_transition_refused",
    "tool_policy_blocked",
)


def _digest(line: bytes) -> str:
    return hashlib.sha256(line).hexdigest()


@dataclass(slots=True)
class AuditReport:
    """The outcome of `verify_audit`.

    Attributes:
        ok: The chain is intact and matches the head.
        lines: How many lines the log has.
        head: The hash of the last line (what to keep elsewhere to anchor the log).
        problems: What is wrong, one sentence each (line numbers count from 1).
    """

    ok: bool
    lines: int
    head: str
    problems: list[str] = field(default_factory=list)


class AuditLog:
    """Appends chained events to one audit file.

    Args:
        path: The JSONL file (its directory is created on the first append).

    Examples:
        >>> import tempfile
        >>> log = AuditLog(Path(tempfile.mkdtemp()) / "audit.jsonl")
        >>> log.append("tool_build_requested", tool="fetch", version=1)["seq"]
        1
        >>> verify_audit(log.path).ok
        True
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.head_path = self.path.with_name(self.path.name + ".head")
        self.lock_path = self.path.with_name(self.path.name + ".lock")

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def append(
        self, event: str, *, tool: str | None = None, version: int | None = None, **data: Any
    ) -> dict[str, Any]:
        """Add one event at the end of the chain (under the log's lock).

        Args:
            event: The event's name (one of ``EVENTS``).
            tool: The tool it concerns.
            version: The version it concerns.
            **data: Anything else worth keeping (JSON data; other values are written as str).

        Returns:
            The entry as written (``seq``, ``ts``, ``event``, ``tool``, ``version``, ``data``,
            ``prev``).
        """
        with self._locked():
            lines, last = self._tail()
            entry = {
                "seq": lines + 1,
                "ts": datetime.now(UTC).isoformat(timespec="microseconds"),
                "event": event,
                "tool": tool,
                "version": version,
                "data": data,
                "prev": last,
            }
            line = json.dumps(entry, sort_keys=True, separators=(",", ":"), default=str).encode()
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                os.write(fd, line + b"\n")
                os.fsync(fd)
            finally:
                os.close(fd)
            atomic_write(
                self.head_path, json.dumps({"lines": lines + 1, "last": _digest(line)}) + "\n"
            )
        return entry

    def _tail(self) -> tuple[int, str]:
        """The number of lines and the hash of the last one (read from the log itself)."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return 0, GENESIS
        lines = data.splitlines()
        return (len(lines), _digest(lines[-1])) if lines else (0, GENESIS)

    def events(self) -> list[dict[str, Any]]:
        """Every entry, oldest first.

        Returns:
            The parsed lines; lines that are not events (not JSON, or without an integer
            ``seq`` and text ``ts`` and ``event``) are skipped (``verify_audit`` reports them).
        """
        out = []
        with contextlib.suppress(FileNotFoundError):
            for raw in self.path.read_bytes().splitlines():
                # An edited line may be anything: not JSON, nested past the parser's stack, or
                # JSON that is not an event (readers format seq, ts and event).
                with contextlib.suppress(ValueError, RecursionError):
                    entry = json.loads(raw)
                    if _is_event(entry):
                        out.append(entry)
        return out


def _is_event(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and type(entry.get("seq")) is int
        and isinstance(entry.get("ts"), str)
        and isinstance(entry.get("event"), str)
    )


def _check_line(number: int, raw: bytes, prev: str) -> list[str]:
    try:
        entry = json.loads(raw)
    except (ValueError, RecursionError):  # an edited line may be nested past the stack too
        return [f"line {number} is not JSON"]
    if not isinstance(entry, dict):
        return [f"line {number} is not an event object"]
    problems = []
    if entry.get("seq") != number:
        problems.append(f"line {number} has sequence number {entry.get('seq')!r}")
    if entry.get("prev") != prev:
        problems.append(
            f"line {number} does not follow line {number - 1}: the chain is broken "
            "(a line was edited, deleted, inserted or moved)"
            if number > 1
            else "line 1 does not start the chain"
        )
    return problems


def verify_audit(path: Path) -> AuditReport:
    """Recompute the chain of the log at ``path`` and compare it with its head.

    A log that does not exist (and has no head) is an empty, intact log.

    Args:
        path: The audit log (its head is ``path`` + ``.head``).

    Returns:
        The report: ``ok``, the number of lines, the hash of the last one, and each problem.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        data = b""
    problems: list[str] = []
    if data and not data.endswith(b"\n"):
        problems.append("the last line is incomplete (a write was cut off)")
    prev = GENESIS
    lines = data.splitlines()
    for number, raw in enumerate(lines, start=1):
        problems += _check_line(number, raw, prev)
        prev = _digest(raw)
    head_path = path.with_name(path.name + ".head")
    try:
        head = read_json(head_path)
    except (ValueError, RecursionError):
        # An edited head is a finding of the check, not a failure of it.
        problems.append(f"the head file {head_path.name} is not JSON (it was edited)")
        return AuditReport(ok=False, lines=len(lines), head=prev, problems=problems)
    if head is None:
        if lines:
            problems.append("the head file is missing, so a cut-off end cannot be ruled out")
    elif (
        not isinstance(head, dict)
        or head.get("lines") != len(lines)
        or (lines and head.get("last") != prev)
    ):
        head = head if isinstance(head, dict) else {}
        problems.append(
            f"the head names {head.get('lines')} line(s) ending in {str(head.get('last'))[:12]}, "
            f"the log has {len(lines)} ending in {prev[:12]} (lines were removed or the end "
            "was edited)"
        )
    return AuditReport(ok=not problems, lines=len(lines), head=prev, problems=problems)
