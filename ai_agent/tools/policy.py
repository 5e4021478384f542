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
   Its message also says what the call will wait for once they are (the reasons of rule 7), so
   one gate shows everything a person decides about it.
7. Approval: ``deny`` cancels; a grant runs the call. Otherwise the call needs a person when any
   of these holds, and waits (APPROVAL_REQUIRED, severity 1.0) with every reason in the issue:

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
   approve the call, it is cancelled, unless the person saw it at that gate and what it needs
   is a confirmation (a ``confirm`` policy or the first-time gate, not an escalation): a plan
   that lets the run go on confirms it. An ``approve`` policy (changes) needs the approval.

Grants bind to exactly what a person was shown (see `ai_agent.state.Grant`): the run, the gate,
the call's engine id (never the model's, which a model may repeat) and the digest of its canonical
arguments (`args_hash`). A call-scoped grant covers that one call once; an ``args`` grant this
tool with these arguments in this run; a ``tool`` grant this tool in this run, but not a call the
tool escalates. Nothing a grant covers reaches another thread, a fork included.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ai_agent.context import ApprovalPolicy, JournalEntry, ToolInfo
from ai_agent.issues import IssueKind
from ai_agent.state import Grant, ToolCall, ToolResult
from ai_agent.tools.results import schema_violation

__all__ = [
    "CANCELLED",
    "CallFacts",
    "Verdict",
    "approved_at",
    "args_hash",
    "canonical_args",
    "edited_call",
    "grants_for",
    "is_granted",
    "screen_call",
    "spend",
    "withheld_reason",
]

CANCELLED = "Tool execution cancelled"


def _plain(value: object) -> bool:
    """JSON data only: objects with string keys, arrays, strings, numbers, booleans, null."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, str | int | float)


def canonical_args(args: Mapping[str, object]) -> str | None:
    """A call's arguments as canonical JSON (sorted keys), or None when they are not JSON data.

    Examples:
        >>> canonical_args({"b": 1, "a": [True, None]})
        '{"a": [true, null], "b": 1}'
        >>> canonical_args({"path": object()}) is None
        True
    """
    return json.dumps(args, sort_keys=True, ensure_ascii=False) if _plain(dict(args)) else None


def args_hash(args: Mapping[str, object]) -> str:
    """The digest of a call's canonical arguments (grants, recorded calls, the replay's matching).

    Arguments from a model are JSON data, and their digest is that of their canonical JSON.
    Anything else (a direct caller's ``Path``, a tuple, a non-string key) is hashed in a domain
    of its own, by type and ``repr``, so it can never share a digest with JSON data that merely
    prints the same (``Path("x")`` and ``"x"``, ``{1: 0}`` and ``{"1": 0}``).

    Examples:
        >>> args_hash({"a": 1}) == args_hash({"a": 1})
        True
        >>> from pathlib import PurePosixPath
        >>> args_hash({"p": PurePosixPath("x")}) == args_hash({"p": "x"})
        False
    """
    blob = canonical_args(args)
    if blob is None:
        typed = sorted((repr(k), type(v).__qualname__, repr(v)) for k, v in args.items())
        blob = "\0" + repr(typed)  # never the first character of JSON text
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What to do with a call: run it, make it wait for a plan (with an issue), or cancel it."""

    action: Literal["run", "wait", "cancel", "reuse", "reject"]
    code: IssueKind | None = None
    message: str = ""
    result: ToolResult | None = None
    attempt: float | None = None


def _live(grant: Grant, call: ToolCall, thread_id: str) -> bool:
    """A grant of this run for this tool, not used up. Grants naming no run cover nothing."""
    return (
        bool(thread_id)
        and grant.get("thread_id") == thread_id
        and grant["tool"] == call["name"]
        and not grant.get("spent")
    )


def _shown(grant: Grant, call: ToolCall, digest: str) -> bool:
    """The grant was given for this very call, as the person saw it."""
    return grant.get("call_id") == call["id"] and grant.get("args_hash") == digest


def is_granted(
    call: ToolCall, grants: Sequence[Grant], *, thread_id: str, tool_wide: bool = True
) -> bool:
    """True when a grant of run ``thread_id`` covers this call.

    The call the person was shown is covered at any scope; beyond it, an ``args`` grant covers
    calls of the tool with the same digest, a ``tool`` grant any call of the tool unless
    ``tool_wide`` is False (the call is escalated).
    """
    digest = args_hash(call["args"])
    for grant in grants:
        if not _live(grant, call, thread_id):
            continue
        if _shown(grant, call, digest):
            return True
        if grant["scope"] == "args" and grant.get("args_hash") == digest:
            return True
        if grant["scope"] == "tool" and tool_wide:
            return True
    return False


def approved_at(call: ToolCall, grants: Sequence[Grant], *, thread_id: str, gate: str) -> bool:
    """True when a person approved this very call at ``gate`` (the token of its report).

    Only such an approval lets a call whose earlier attempt may have run go again: a grant from
    an earlier gate approved one run of it, not a second one.
    """
    digest = args_hash(call["args"])
    return any(
        _live(g, call, thread_id) and g.get("gate") == gate and _shown(g, call, digest)
        for g in grants
    )


def spend(call: ToolCall, grants: Sequence[Grant], *, thread_id: str) -> list[Grant] | None:
    """The grants with the call-scoped ones that covered this call marked spent.

    None when no grant changed. A call approval is good for one run of the call it was given
    for: spent, it covers nothing, even if a call with the same id and arguments comes back.
    """
    digest = args_hash(call["args"])
    used = [
        g
        for g in grants
        if g["scope"] == "call" and _live(g, call, thread_id) and _shown(g, call, digest)
    ]
    if not used:
        return None
    return [_spent(g) if g in used else g for g in grants]


def _spent(grant: Grant) -> Grant:
    out = Grant(**grant)
    out["spent"] = True
    return out


def grants_for(
    call: ToolCall, scope: Literal["call", "tool", "args"], *, thread_id: str, gate: str
) -> Grant:
    """The grant a person's approval of ``call`` at ``gate`` of run ``thread_id`` creates."""
    return Grant(
        tool=call["name"],
        scope=scope,
        call_id=call["id"],
        args_hash=args_hash(call["args"]),
        thread_id=thread_id,
        gate=gate,
        spent=False,
    )


def edited_call(call: ToolCall, args: Mapping[str, Any]) -> ToolCall:
    """``call`` with ``args`` instead of its own; ``edited_from`` keeps the model's arguments.

    An edit of a call edited before keeps the model's first arguments as the original.

    Examples:
        >>> call = {"id": "c1.1", "name": "write_file", "args": {"path": "a"}}
        >>> edited = edited_call(call, {"path": "b"})
        >>> edited["args"], edited["edited_from"]
        ({'path': 'b'}, {'path': 'a'})
        >>> edited_call(edited, {"path": "c"})["edited_from"]
        {'path': 'a'}
    """
    out = ToolCall(**call)
    out["args"] = dict(args)
    out["edited_from"] = dict(call.get("edited_from", call["args"]))
    return out


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
        approved: A grant covers this call (see `is_granted`).
        rerun_approved: The person approved, at the gate just answered, running again the very
            attempt whose outcome is unknown (a grant from an earlier gate never does).
        denied: The latest plan denied this call.
        problems: What is wrong with the arguments (empty: they fit the schema).
        repair_used: The model's previous call of this tool was already a schema violation.
        escalation: Why this call needs a person regardless of its category, or None.
        first_use: It is an external tool that has not run yet in this run.
        unattended: Trusted batch mode (``--yes``).
        first_use_gate: The first-time gate of external tools is on.
        shown: The call was among the calls the gate just answered showed the person.
        withheld: Why a tool that is in no catalog is held back (an MCP tool whose definition
            changed since it was pinned), or None.
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
    shown: bool = False
    withheld: str | None = None


def withheld_reason(tools: object, name: str) -> str | None:
    """Why ``tools`` refuses a call of ``name``, a tool it holds back (None: it does not).

    Asked by attribute: a tool box of the user's need not know of withheld tools.
    """
    ask = getattr(tools, "withheld", None)
    why = ask(name) if callable(ask) else None
    return why if isinstance(why, str) else None


def _availability(f: CallFacts) -> Verdict | None:
    name = f.call["name"]
    if f.info is None:
        if f.withheld is not None:  # an MCP tool whose definition changed since it was pinned
            return _cancel(f"Error: tool {name!r} is withheld: {f.withheld}")
        return _cancel(f"Error: no tool named {name!r} exists; use one of the available tools")
    if name in f.active:
        return None
    if f.answered:
        return _cancel(f"Error: tool {name!r} is not available in this run")
    return Verdict("wait", IssueKind.TOOL_MISSING, f"tool {name!r} is not active in this run")


def _schema(f: CallFacts) -> Verdict | None:
    if not f.problems:
        return None
    name = f.call["name"]
    result = schema_violation(name, list(f.problems), retry=not f.repair_used)
    if not f.repair_used:
        return Verdict("reject", result=result)
    return Verdict(
        "reject",
        IssueKind.TOOL_ERROR,
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
        IssueKind.UNKNOWN_OUTCOME,
        f"{f.call['name']} was running when the process stopped, so its effects may already "
        "have happened, in full or in part. Approve to run it again, and its effects may happen "
        "twice; deny to skip it.",
        attempt=entry["attempt"],
    )


def _environment(f: CallFacts) -> Verdict | None:
    if not f.missing_env:
        return None
    keys = ", ".join(f.missing_env)
    # One gate shows all a person must decide about the call: what it waits for after the keys
    # are set too, so the plan that answers this gate can settle both.
    category, policy = _policy_of(f)
    after = _reasons(f, category, policy)
    if f.approved or f.unattended or not after:
        then = "set them and resume"
    elif _confirmable(f, policy):
        then = (
            f"set them and resume; {'; '.join(after)}: a plan that continues confirms it "
            "(deny it to skip it)"
        )
    else:
        then = f"set them and resume; {'; '.join(after)}: approve it in the plan, or it is skipped"
    return Verdict(
        "wait",
        IssueKind.MISSING_ENV,
        f"{f.call['name']} needs environment variable(s) {keys}, which are not set; {then}",
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


def _policy_of(f: CallFacts) -> tuple[str, str]:
    """The call's category (an unknown tool's: the strictest) and that category's policy."""
    category = f.info["category"] if f.info else "external"
    return category, f.approvals.get(category, "approve")


def _approval(f: CallFacts) -> Verdict:
    category, policy = _policy_of(f)
    if policy == "deny":
        return _cancel(f"{CANCELLED}: the policy denies {category} tools")
    if f.approved or f.unattended:
        return Verdict("run")
    reasons = _reasons(f, category, policy)
    if not reasons:
        return Verdict("run")
    if f.answered:
        # A person who saw the call at the gate and let the run go on confirmed it; what needs
        # an approval (a change, an escalated call) needs it explicitly.
        if f.shown and _confirmable(f, policy):
            return Verdict("run")
        return _cancel(CANCELLED)
    return Verdict("wait", IssueKind.APPROVAL_REQUIRED, "; ".join(reasons))


def _confirmable(f: CallFacts, policy: str) -> bool:
    """Whether what the call waits for is a confirmation, which a plan that continues gives."""
    return policy in ("confirm", "auto") and f.escalation is None


_RULES = (_availability, _schema, _denial, _journal, _environment)


def screen_call(facts: CallFacts) -> Verdict:
    """Decide what happens to one call. See the module docstring for the rules, in order."""
    for rule in _RULES:
        verdict = rule(facts)
        if verdict is not None:
            return verdict
    return _approval(facts)
