"""Turning what went wrong into scored gate issues: error codes first, then the keyword lists."""

from __future__ import annotations

import re

from ai_agent.state import SEVERITY, Issue, ToolCall, ToolResult

__all__ = ["issue", "issue_from_result"]

# Keyword lists of the gate policy, checked in order of severity so "api key missing" is AUTH,
# not DATA_MISSING. Word boundaries keep "rate" from matching "generate".
_KEYWORDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("AUTH", re.compile(r"\bapi[ _-]?key\b|\bunauthori[sz]ed\b|\bforbidden\b|\bauth", re.I)),
    ("RATE_LIMIT", re.compile(r"\bquota\b|\blimit(ed|s)?\b|\brate\b|\b429\b", re.I)),
    ("DATA_MISSING", re.compile(r"\bnot found\b|\bno such file\b|\bmissing\b", re.I)),
)

# Codes a tool may put in meta["code"], mapped onto gate issue codes.
_CODE_MAP = {
    "AUTH": "AUTH",
    "UNAUTHORIZED": "AUTH",
    "FORBIDDEN": "AUTH",
    "RATE_LIMIT": "RATE_LIMIT",
    "RATE_LIMITED": "RATE_LIMIT",
    "NOT_FOUND": "DATA_MISSING",
    "DATA_MISSING": "DATA_MISSING",
    "MISSING_ENV": "MISSING_ENV",
    "TOOL_MISSING": "TOOL_MISSING",
    # The engine stopped the tool (a sandbox policy violation) or cannot run it: a tool error,
    # whatever words ("limit", "forbidden") the message happens to use.
    "POLICY_VIOLATION": "TOOL_ERROR",
    "SANDBOX_UNAVAILABLE": "TOOL_ERROR",
    # What the tool returned cannot be kept: the message's words ("limit") must not make it a
    # RATE_LIMIT.
    "NON_TEXT_OUTPUT": "TOOL_ERROR",
    "OUTPUT_TOO_LARGE": "TOOL_ERROR",
    "BAD_RESULT": "TOOL_ERROR",
}


def issue(code: str, message: str, *, call: ToolCall | None = None) -> Issue:
    """An issue with the default severity for its code."""
    return Issue(
        code=code,
        severity=SEVERITY.get(code, SEVERITY["TOOL_ERROR"]),
        message=message,
        tool=call["name"] if call else None,
        call_id=call["id"] if call else None,
    )


def classify(text: str, code: str | None = None) -> str:
    """The gate issue code for an error: its explicit code if known, else by keywords."""
    if code and code.upper() in _CODE_MAP:
        return _CODE_MAP[code.upper()]
    for name, pattern in _KEYWORDS:
        if pattern.search(text):
            return name
    return "TOOL_ERROR"


def issue_from_result(call: ToolCall, result: ToolResult) -> Issue | None:
    """The issue a tool result raises, or None when it succeeded (or was skipped)."""
    if result["status"] != "error":
        return None
    text = result.get("error") or "the tool failed"
    code = classify(text, (result.get("meta") or {}).get("code"))
    return issue(code, f"{call['name']}: {text}", call=call)
