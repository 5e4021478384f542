"""Call screening: before act runs a call, decide whether it may run, must wait, or is cancelled.

This is a pure function over data (the call, what the catalog says about the tool, the grants in
state, the approval policy, the journal entry and the latest plan), so every rule can be tested on
its own and the act stage stays a short loop.

Rules, in order:

1. A tool that is not in the catalog never runs (cancelled with an error).
2. A tool that is not active waits for a plan that activates it; once a plan has answered, a tool
   still inactive is cancelled.
3. Arguments that do not fit the tool's schema never run (SchemaViolation). The first time, the
   model is told what is wrong and asked to call again (its one repair retry, no gate issue);
   when its previous call of the same tool was already rejected so, the call fails with a
   TOOL_ERROR issue for the gate.
4. A denied call is cancelled ("Tool execution cancelled").
5. The journal: a call with a recorded outcome is not run again (its result is reused). A call
   with an intent but no outcome crashed mid-way: read-only tools simply run again, any other
   waits for explicit approval (UNKNOWN_OUTCOME), and is cancelled if the plan did not approve it.
6. Missing environment keys: the call waits (MISSING_ENV, AUTH severity) until they are set.
7. Approval: ``deny`` cancels; a grant or the latest plan's approval runs the call. Otherwise the
   call needs a person when any of these holds, and waits (APPROVAL_REQUIRED, severity 1.0) with
   every reason in the issue:

   - its category's policy is ``confirm`` or ``approve`` (the two differ only in wording:
     confirmation for external and note-taking tools, approval with a preview for changes);
   - it is the first call of an external tool in this run (the first-time gate): even under an
     ``auto`` external policy, each external tool's first contact in a run is seen by a person.
     "First" means the tool has not run yet in this run (``tools_used`` in state), so a fork
     from before that first call gates again;
   - the tool escalates this call (a destructive shell command, a delete asking for
     confirmation). A tool-wide grant does not cover an escalated call; a grant for this call
     or these exact arguments does.

   Unattended mode (``--yes``) waives all three; ``deny`` still holds. After a plan that did not
   approve the call, it is cancelled.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ai_agent.context import ApprovalPolicy, JournalEntry, ToolInfo
from ai_agent.state import Grant, ToolCall, ToolResult
from ai_agent.tools.results import schema_violation

__all__ = [
    "CANCELLED",
    "CallFacts",
    "Verdict",
    "args_hash",
    "grants_for",
    "is_granted",
    "screen_call",
]

CANCELLED = "Tool execution cancelled"


def args_hash(args: Mapping[str, object]) -> str:
    """A stable hash of a call's arguments (for exact-argument grants and the journal)."""
    blob = json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What to do with a call: run it, make it wait for a plan (with an issue), or cancel it."""

    action: Literal["run", "wait", "cancel", "reuse", "reject"]
    code: str | None = None
    message: str = ""
    result: ToolResult | None = None
    attempt: float | None = None


def is_granted(call: ToolCall, grants: Sequence[Grant], *, tool_wide: bool = True) -> bool:
    """True when a stored grant covers this call (``tool_wide=False`` ignores tool grants)."""
    digest: str | None = None
    for grant in grants:
        if grant["tool"] != call["name"]:
            continue
        if grant["scope"] == "tool" and tool_wide:
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


@dataclass(frozen=True, slots=True)
class CallFacts:
    """Everything screening needs to know about one call, gathered by the act stage.

    Attributes:
        call: The call the model asked for.
        info: The catalog entry of its tool, or None when there is no such tool.
        active: Names of the tools active in this run.
        grants: Grants stored in state.
        approvals: Approval policy per category (``auto``/``confirm``/``approve``/``deny``).
        missing_env: Environment keys the tool needs that are not set.
        journal: The journal's entry for this call, if any.
        answered: A plan has answered the gate this call waited at.
        approved: The latest plan (or a grant) approved this call.
        rerun_approved: The latest plan approved running again the very attempt whose outcome
            is unknown (a grant, or an approval from before that attempt, never does).
        denied: The latest plan denied this call.
        problems: What is wrong with the arguments (empty: they fit the schema).
        repair_used: The model's previous call of this tool was already a schema violation.
        escalation: Why this call needs a person regardless of its category, or None.
        first_use: It is an external tool that has not run yet in this run.
        unattended: Trusted batch mode (``--yes``).
        first_use_gate: The first-time gate of external tools is on.
    """

    call: ToolCall
    info: ToolInfo | None
    active: Sequence[str]
    grants: Sequence[Grant]
    approvals: Mapping[str, ApprovalPolicy]
    missing_env: Sequence[str]
    journal: JournalEntry | None
    answered: bool
    approved: bool
    denied: bool
    rerun_approved: bool = False
    problems: Sequence[str] = ()
    repair_used: bool = False
    escalation: str | None = None
    first_use: bool = False
    unattended: bool = False
    first_use_gate: bool = True


def _availability(f: CallFacts) -> Verdict | None:
    name = f.call["name"]
    if f.info is None:
        return _cancel(f"Error: no tool named {name!r} exists; use one of the available tools")
    if name in f.active:
        return None
    if f.answered:
        return _cancel(f"Error: tool {name!r} is not available in this run")
    return Verdict("wait", "TOOL_MISSING", f"tool {name!r} is not active in this run")


def _schema(f: CallFacts) -> Verdict | None:
    if not f.problems:
        return None
    name = f.call["name"]
    result = schema_violation(name, list(f.problems), retry=not f.repair_used)
    if not f.repair_used:
        return Verdict("reject", result=result)
    return Verdict(
        "reject",
        "TOOL_ERROR",
        f"the model called {name} with invalid arguments again after being told what was "
        f"wrong: {'; '.join(f.problems)}",
        result,
    )


def _denial(f: CallFacts) -> Verdict | None:
    return _cancel(CANCELLED) if f.denied else None


def _journal(f: CallFacts) -> Verdict | None:
    entry, info = f.journal, f.info
    if entry is None or info is None:
        return None
    if entry["status"] == "done" and entry["result"] is not None:
        return Verdict("reuse", result=entry["result"])
    # Only an approval given for this very attempt counts: a grant (or a plan) from before the
    # crash approved running the call once, not running it again after it may have run.
    if info["category"] == "read_only" or f.rerun_approved:
        return None
    if f.answered and not f.approved:
        return _cancel(f"{CANCELLED}: its earlier attempt may or may not have completed")
    return Verdict(
        "wait",
        "UNKNOWN_OUTCOME",
        f"{f.call['name']} was running when the process stopped, so its effects may already "
        "have happened, in full or in part. Approve to run it again, and its effects may happen "
        "twice; deny to skip it.",
        attempt=entry["attempt"],
    )


def _environment(f: CallFacts) -> Verdict | None:
    if not f.missing_env:
        return None
    keys = ", ".join(f.missing_env)
    return Verdict(
        "wait",
        "MISSING_ENV",
        f"{f.call['name']} needs environment variable(s) {keys}, which are not set; "
        "set them and resume",
        ToolResult(
            status="error",
            error=f"missing environment variable(s): {keys}",
            meta={"code": "MISSING_ENV", "missing": list(f.missing_env)},
        ),
    )


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def _reasons(f: CallFacts, category: str, policy: str) -> list[str]:
    name = f.call["name"]
    reasons = []
    if policy in ("confirm", "approve"):
        need = "approval" if policy == "approve" else "confirmation"
        reasons.append(f"{name} is {_article(category)} {category} tool and needs {need}")
    elif f.first_use and f.first_use_gate and category == "external":
        reasons.append(
            f"{name} is an external tool and this is its first use in this run (first-time gate)"
        )
    if f.escalation:
        reasons.append(f.escalation)
    return reasons


def _approval(f: CallFacts) -> Verdict:
    category = f.info["category"] if f.info else "external"
    policy = f.approvals.get(category, "approve")
    if policy == "deny":
        return _cancel(f"{CANCELLED}: the policy denies {category} tools")
    if f.approved or f.unattended:
        return Verdict("run")
    reasons = _reasons(f, category, policy)
    if not reasons:
        return Verdict("run")
    if f.answered:
        return _cancel(CANCELLED)
    return Verdict("wait", "APPROVAL_REQUIRED", "; ".join(reasons))


_RULES = (_availability, _schema, _denial, _journal, _environment)


def screen_call(facts: CallFacts) -> Verdict:
    """Decide what happens to one call. See the module docstring for the rules, in order."""
    for rule in _RULES:
        verdict = rule(facts)
        if verdict is not None:
            return verdict
    return _approval(facts)
