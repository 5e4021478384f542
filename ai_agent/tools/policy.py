"""Call screening: before act runs a call, decide whether it may run, must wait, or is cancelled.

This is a pure function over data (the call, what the catalog says about the tool, the grants in
state, the approval policy, the journal entry and the latest plan), so every rule can be tested on
its own and the act stage stays a short loop.

Rules, in order:

1. A tool that is not in the catalog never runs (cancelled with an error).
2. A tool that is not active waits for a plan that activates it; once a plan has answered, a tool
   still inactive is cancelled.
3. A denied call is cancelled ("Tool execution cancelled").
4. The journal: a call with a recorded outcome is not run again (its result is reused). A call
   with an intent but no outcome crashed mid-way: read-only tools simply run again, any other
   waits for explicit approval (UNKNOWN_OUTCOME), and is cancelled if the plan did not approve it.
5. Missing environment keys: the call waits (MISSING_ENV, AUTH severity) until they are set.
6. Approval by category policy: ``auto`` runs, ``deny`` cancels, ``confirm``/``approve`` need a
   grant (call, tool or exact arguments) or an approval in the latest plan, else the call waits
   (APPROVAL_REQUIRED); after a plan that did not approve it, it is cancelled.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ai_agent.context import ApprovalPolicy, JournalEntry, ToolInfo
from ai_agent.state import Grant, ToolCall, ToolResult

__all__ = ["CANCELLED", "Verdict", "args_hash", "grants_for", "is_granted", "screen_call"]

CANCELLED = "Tool execution cancelled"


def args_hash(args: Mapping[str, object]) -> str:
    """A stable hash of a call's arguments (for exact-argument grants and the journal)."""
    blob = json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What to do with a call: run it, make it wait for a plan (with an issue), or cancel it."""

    action: Literal["run", "wait", "cancel", "reuse"]
    code: str | None = None
    message: str = ""
    result: ToolResult | None = None


def is_granted(call: ToolCall, grants: Sequence[Grant]) -> bool:
    """True when a stored grant covers this call."""
    digest: str | None = None
    for grant in grants:
        if grant["tool"] != call["name"]:
            continue
        if grant["scope"] == "tool":
            return True
        if grant["scope"] == "call" and grant["call_id"] == call["id"]:
            return True
        if grant["scope"] == "args":
            digest = digest or args_hash(call["args"])
            if grant["args_hash"] == digest:
                return True
    return False


def grants_for(call: ToolCall, scope: Literal["call", "tool", "args"]) -> Grant:
    """The grant a plan's approval of ``call`` creates at the given scope."""
    return Grant(
        tool=call["name"],
        scope=scope,
        call_id=call["id"] if scope == "call" else None,
        args_hash=args_hash(call["args"]) if scope == "args" else None,
    )


def _cancel(text: str) -> Verdict:
    return Verdict("cancel", message=text)


def screen_call(
    call: ToolCall,
    *,
    info: ToolInfo | None,
    active: Sequence[str],
    grants: Sequence[Grant],
    approvals: Mapping[str, ApprovalPolicy],
    missing_env: Sequence[str],
    journal: JournalEntry | None,
    answered: bool,
    approved: bool,
    denied: bool,
) -> Verdict:
    """Decide what happens to one call. See the module docstring for the rules.

    Args:
        call: The call the model asked for.
        info: The catalog entry of its tool, or None when there is no such tool.
        active: Names of the tools active in this run.
        grants: Grants stored in state.
        approvals: Approval policy per category (``auto``/``confirm``/``approve``/``deny``).
        missing_env: Environment keys the tool needs that are not set.
        journal: The journal's entry for this call, if any.
        answered: A plan has answered the gate this call waited at.
        approved: The latest plan approved this call.
        denied: The latest plan denied this call.
    """
    name = call["name"]
    if info is None:
        return _cancel(f"Error: no tool named {name!r} exists; use one of the available tools")
    if name not in active:
        if answered:
            return _cancel(f"Error: tool {name!r} is not available in this run")
        return Verdict("wait", "TOOL_MISSING", f"tool {name!r} is not active in this run")
    if denied:
        return _cancel(CANCELLED)
    if journal is not None:
        if journal["status"] == "done" and journal["result"] is not None:
            return Verdict("reuse", result=journal["result"])
        if info["category"] != "read_only" and not approved:
            if answered:
                return _cancel(f"{CANCELLED}: its earlier attempt may or may not have completed")
            return Verdict(
                "wait",
                "UNKNOWN_OUTCOME",
                f"{name} was running when the process stopped; it may or may not have completed. "
                "Approve to run it again, or deny to skip it.",
            )
    if missing_env:
        keys = ", ".join(missing_env)
        return Verdict(
            "wait",
            "MISSING_ENV",
            f"{name} needs environment variable(s) {keys}, which are not set; set them and resume",
            ToolResult(
                status="error",
                error=f"missing environment variable(s): {keys}",
                meta={"code": "MISSING_ENV", "missing": list(missing_env)},
            ),
        )
    policy = approvals.get(info["category"], "approve")
    if policy == "deny":
        return _cancel(f"{CANCELLED}: the policy denies {info['category']} tools")
    if policy == "auto" or approved or is_granted(call, grants):
        return Verdict("run")
    if answered:
        return _cancel(CANCELLED)
    return Verdict(
        "wait", "APPROVAL_REQUIRED", f"{name} is a {info['category']} tool and needs approval"
    )
