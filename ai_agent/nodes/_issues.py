"""Turning what went wrong into scored gate issues, by the table of kinds (`ai_agent.issues`)."""

from __future__ import annotations

from ai_agent.issues import KINDS, QUIET_CODES, IssueKind, as_state, classify
from ai_agent.state import Issue, ToolCall, ToolResult

__all__ = ["issue", "issue_from_result"]


def issue(kind: IssueKind, message: str, *, call: ToolCall | None = None) -> Issue:
    """An issue of ``kind`` with its default severity."""
    return Issue(
        code=as_state(kind),
        severity=KINDS[kind].severity,
        message=message,
        tool=call["name"] if call else None,
        call_id=call["id"] if call else None,
    )


def issue_from_result(call: ToolCall, result: ToolResult) -> Issue | None:
    """The issue a tool result raises, or None when it succeeded (or was skipped, or is quiet)."""
    if result["status"] != "error":
        return None
    code = (result.get("meta") or {}).get("code")
    if code in QUIET_CODES:
        return None
    text = result.get("error") or "the tool failed"
    return issue(classify(text, code), f"{call['name']}: {text}", call=call)
