"""The audit log's chain: any edit, deletion, insertion or reordering of lines is detected."""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Callable
from pathlib import Path

import pytest

from ai_agent.tools.maker.audit import GENESIS, AuditLog, verify_audit


def _log(tmp_path: Path, events: int = 5) -> AuditLog:
    log = AuditLog(tmp_path / "audit.jsonl")
    for index in range(events):
        log.append("tool_build_requested", tool="t", version=index + 1, n=index)
    return log


def _lines(log: AuditLog) -> list[bytes]:
    return log.path.read_bytes().splitlines(keepends=True)


def _write(log: AuditLog, lines: list[bytes]) -> None:
    log.path.write_bytes(b"".join(lines))


def test_an_intact_log_verifies(tmp_path: Path) -> None:
    log = _log(tmp_path)
    report = verify_audit(log.path)
    assert report.ok and report.lines == 5 and report.problems == []
    entries = [json.loads(line) for line in _lines(log)]
    assert entries[0]["prev"] == GENESIS
    assert [e["seq"] for e in entries] == [1, 2, 3, 4, 5]
    head = json.loads(log.head_path.read_text())
    assert head == {"lines": 5, "last": report.head}
    assert log.events() == entries


def test_an_empty_or_missing_log_is_intact(tmp_path: Path) -> None:
    assert verify_audit(tmp_path / "none.jsonl").ok


def _edit_middle(lines: list[bytes]) -> list[bytes]:
    lines[2] = lines[2].replace(b'"n":2', b'"n":9')
    return lines


def _edit_last(lines: list[bytes]) -> list[bytes]:
    lines[-1] = lines[-1].replace(b'"n":4', b'"n":9')
    return lines


def _reforge_last(lines: list[bytes]) -> list[bytes]:
    # A careful forger rewrites the last line consistently with the chain; the head still knows.
    entry = json.loads(lines[-1])
    entry["data"]["n"] = 99
    lines[-1] = json.dumps(entry, sort_keys=True, separators=(",", ":")).encode() + b"\n"
    return lines


TAMPERING: dict[str, Callable[[list[bytes]], list[bytes]]] = {
    "edit_middle": _edit_middle,
    "edit_last": _edit_last,
    "reforge_last": _reforge_last,
    "delete_middle": lambda lines: lines[:2] + lines[3:],
    "delete_first": lambda lines: lines[1:],
    "delete_last": lambda lines: lines[:-1],
    "truncate_all": lambda lines: [],
    "reorder": lambda lines: [lines[0], lines[2], lines[1], *lines[3:]],
    "duplicate": lambda lines: [*lines[:3], lines[2], *lines[3:]],
    "insert": lambda lines: [*lines[:2], b'{"seq":3,"event":"tool_activated"}\n', *lines[2:]],
    "cut_mid_line": lambda lines: [*lines[:-1], lines[-1][:20]],
    "garbage": lambda lines: [*lines[:2], b"not json\n", *lines[3:]],
}


@pytest.mark.parametrize("tamper", sorted(TAMPERING))
def test_tampering_is_detected(tamper: str, tmp_path: Path) -> None:
    log = _log(tmp_path)
    _write(log, TAMPERING[tamper](_lines(log)))
    report = verify_audit(log.path)
    assert not report.ok
    assert report.problems


def test_a_deleted_head_is_reported(tmp_path: Path) -> None:
    log = _log(tmp_path)
    log.head_path.unlink()
    report = verify_audit(log.path)
    assert report.problems == ["the head file is missing, so a cut-off end cannot be ruled out"]


def test_appending_continues_the_chain_after_a_crash_left_the_head_behind(
    tmp_path: Path,
) -> None:
    log = _log(tmp_path, 2)
    head = log.head_path.read_text()
    log.append("tool_activated", tool="t", version=1)
    log.head_path.write_text(head)  # as if the process died between the line and the head
    assert not verify_audit(log.path).ok
    log.append("tool_activated", tool="t", version=2)
    assert verify_audit(log.path).ok


def _append_many(path: str, worker: int) -> None:
    log = AuditLog(Path(path))
    for index in range(25):
        log.append("tool_policy_blocked", tool=f"w{worker}", version=index)


def test_concurrent_writers_never_break_the_chain(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    context = multiprocessing.get_context("spawn")
    procs = [context.Process(target=_append_many, args=(str(path), w)) for w in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    report = verify_audit(path)
    assert report.ok, report.problems
    assert report.lines == 100
