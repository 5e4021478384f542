"""Always-allow rules: a person's approval kept in the run store, so a matching call runs unasked.

A plan that approves calls may also ask for a rule (``UserPlan.always_allow``) for each of them:

- ``run``: this tool, in this run (like a ``tool`` grant, but listed and revocable);
- ``args``: this tool with exactly these arguments (their digest), in any run;
- ``tool``: this tool, in every run. For a modification tool this needs ``confirm_always``: a
  person says, in so many words, that every change it makes may happen unasked.

What a rule can never do: cover a call the tool escalates (a destructive command), except an
``args`` rule made for those very arguments, which a person saw; override a ``deny`` policy, a
plan's denial, missing environment keys, a tool that is not active, or a call whose earlier
attempt may have run (the journal asks again); reach a replay (a replay follows its recording).

A rule is read back from a database, so it is hostile input: a row that does not say exactly one
of these things (an unknown scope, a ``run`` rule without its run, a digest that is not one,
shown arguments that are not the ones its digest matches, a ``tool`` rule of a modification
tool without its confirmation) is never used, and a call it
would have covered waits for a person with the reason in its issue (`rule_problems`): the
rule fails closed, and says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ai_agent.context import AllowRule, RuleTerms, ToolBox
from ai_agent.errors import InvalidPlanError
from ai_agent.state import GateReport, ToolCall, UserPlan
from ai_agent.tools.policy import args_hash, edited_call

__all__ = [
    "SCOPES",
    "NewRule",
    "check_always",
    "covering_rule",
    "describe_rule",
    "new_rules",
    "rule_problem",
    "rule_problems",
]

SCOPES = ("run", "args", "tool")
_DIGEST = re.compile(r"[0-9a-f]{32}")
_CATEGORIES = ("read_only", "note_taking", "modification", "external")


class NewRule(RuleTerms):
    """A rule a plan asks for, before the store gives it an id."""

    # What makes it one rule however often the plan is applied (a retried worker): the run,
    # the gate (its token) and the call it was made from.
    key: str


def describe_rule(rule: AllowRule | NewRule) -> str:
    """The rule in words.

    Examples:
        >>> describe_rule({"tool": "write_file", "scope": "tool", "thread_id": None})
        'write_file, in every run'
    """
    tool = rule["tool"]
    if rule["scope"] == "run":
        return f"{tool}, in run {rule['thread_id']}"
    if rule["scope"] == "args":
        return f"{tool} with these exact arguments, in any run"
    return f"{tool}, in every run"


def _approved(plan: UserPlan, report: GateReport) -> list[ToolCall]:
    """The calls the plan approves, as they will run (an edited call with its new arguments).

    Only calls that will run: a plan that stops the run runs none, and a call the plan denies
    (by its id or "*") is cancelled whatever else names it, so no rule may be made from it
    (``approve: ["*"], deny: [the rm -rf]`` must not leave "rm -rf's tool, always" behind).
    """
    if not plan.allow_continue:
        return []
    calls = []
    for pending in report["pending"]:
        call = pending["call"]
        if "*" in plan.deny or call["id"] in plan.deny:
            continue
        if call["id"] in plan.edit_args:
            calls.append(edited_call(call, plan.edit_args[call["id"]]))
        elif "*" in plan.approve or call["id"] in plan.approve:
            calls.append(call)
    return calls


def check_always(plan: UserPlan, report: GateReport, tools: ToolBox) -> None:
    """Refuse a plan whose rules would reach further than its author said.

    Raises:
        InvalidPlanError: ``always_allow`` without a call approved, or a ``tool`` rule for a
            modification tool without ``confirm_always``.
    """
    if plan.always_allow is None:
        return
    calls = _approved(plan, report)
    if not calls:
        raise InvalidPlanError(
            "invalid plan: always_allow makes a rule for each call the plan approves and "
            f"runs, and it {_why_none(plan)}; approve a call (approve or edit_args), or drop "
            "always_allow. The run is still paused"
        )
    if plan.always_allow != "tool" or plan.confirm_always:
        return
    changing = sorted({c["name"] for c in calls if _category(tools, c["name"]) == "modification"})
    if changing:
        raise InvalidPlanError(
            f"invalid plan: always_allow 'tool' would let every call of {', '.join(changing)} "
            "(a modification tool) run unasked in every run; confirm it (confirm_always, "
            "`--confirm-always`, the console's checkbox) or choose a narrower scope ('run', "
            "'args'). The run is still paused"
        )


def _why_none(plan: UserPlan) -> str:
    """Why a plan with ``always_allow`` approves no call that will run, for its refusal."""
    if not plan.allow_continue:
        return "stops the run, so none runs"
    if "*" in plan.deny:
        return "denies every call (deny '*')"
    return "approves none"


def _category(tools: ToolBox, name: str) -> str:
    """A tool's category; a tool the catalog does not know counts as the strictest."""
    info = tools.info(name)
    return info["category"] if info else "external"


def new_rules(
    plan: UserPlan, report: GateReport, tools: ToolBox, *, thread_id: str
) -> list[NewRule]:
    """The rules a plan checked by `check_always` asks for, one per approved call."""
    scope = plan.always_allow
    if scope is None:
        return []
    gate = report.get("token") or f"cycle {report['iteration']}"
    rules = []
    for call in _approved(plan, report):
        rules.append(
            NewRule(
                tool=call["name"],
                scope=scope,
                thread_id=thread_id if scope == "run" else None,
                args_hash=args_hash(call["args"]) if scope == "args" else None,
                args=dict(call["args"]) if scope == "args" else None,
                category=_category(tools, call["name"]),
                confirmed=plan.confirm_always,
                source=f"run {thread_id}, cycle {report['iteration']}, call {call['id']}",
                key=f"{thread_id}\n{gate}\n{call['id']}\n{scope}",
            )
        )
    return rules


def rule_problem(
    rule: AllowRule, category: str | None = None, *, digest: str | None = None
) -> str | None:
    """Why a stored rule cannot be used, or None when it says one thing a person could have made.

    ``category``: the tool's category now (a ``tool`` rule of a modification tool needs its
    confirmation, whatever the row says the category was). ``digest``: that of the call being
    screened; then only an ``args`` rule for it has its shown arguments checked against its
    digest (no other can match the call, and hashing every rule's arguments for every call
    costs a store of many rules dearly).

    Examples:
        >>> ok = {"id": 1, "tool": "t", "scope": "run", "thread_id": "r1", "args_hash": None,
        ...       "category": "read_only", "confirmed": False, "problem": None}
        >>> rule_problem(ok) is None
        True
        >>> rule_problem({**ok, "scope": "everything"})
        "rule 1 has an unknown scope 'everything'"
    """
    if rule.get("problem"):
        return rule["problem"]
    where, scope = f"rule {rule['id']}", rule["scope"]
    changing = "modification" in (rule["category"], category)
    checks = (
        (scope not in SCOPES, f"has an unknown scope {scope!r}"),
        (rule["category"] not in _CATEGORIES, f"names an unknown category {rule['category']!r}"),
        (scope == "run" and not rule["thread_id"], "is for one run but names none"),
        (
            scope == "args" and not _DIGEST.fullmatch(str(rule["args_hash"] or "")),
            "is for some arguments but holds no digest of them",
        ),
        (scope == "args" and rule.get("args") is None, "is for some arguments but shows none"),
        (
            _disagrees(rule, digest),
            "shows arguments that are not the ones its digest was made from",
        ),
        (
            scope == "tool" and changing and not rule["confirmed"],
            f"lets every call of {rule['tool']} (a modification tool) run in every run, but "
            "nobody confirmed that",
        ),
    )
    return next((f"{where} {why}" for failed, why in checks if failed), None)


def _disagrees(rule: AllowRule, digest: str | None) -> bool:
    """An ``args`` rule whose shown arguments are not the ones its digest matches.

    Calls are matched by the digest, and people read the arguments (``rules list``, the
    console): a row changed so the two differ would show ``ls`` and let ``rm -rf ~`` through.
    Both are written from the same call, and JSON keeps what a digest reads, so an honest row
    always agrees.
    """
    args = rule.get("args")
    if rule["scope"] != "args" or args is None:
        return False
    if digest is not None and rule["args_hash"] != digest:
        return False  # it cannot match the call in question: not worth hashing its arguments
    return args_hash(args) != rule["args_hash"]


def covering_rule(
    rules: Sequence[AllowRule],
    call: ToolCall,
    *,
    thread_id: str,
    category: str,
    escalated: bool,
) -> AllowRule | None:
    """The first usable rule that lets ``call`` run unasked, or None.

    An escalated call (the tool flags it as needing a person) is covered only by an ``args``
    rule made for exactly its arguments.
    """
    digest = args_hash(call["args"])
    for rule in rules:
        if rule["tool"] != call["name"]:
            continue
        if rule_problem(rule, category, digest=digest) is not None:
            continue
        if rule["scope"] == "args" and rule["args_hash"] == digest:
            return rule
        if escalated:
            continue
        if rule["scope"] == "tool" or (rule["scope"] == "run" and rule["thread_id"] == thread_id):
            return rule
    return None


def rule_problems(rules: Sequence[AllowRule], call: ToolCall, category: str) -> list[str]:
    """What is wrong with the stored rules of ``call``'s tool: each one is not used."""
    digest = args_hash(call["args"])
    found = [
        (rule["id"], rule_problem(rule, category, digest=digest))
        for rule in rules
        if rule["tool"] == call["name"]
    ]
    return [
        f"{problem}; it is not used (revoke it: ai-agent rules revoke {rule_id})"
        for rule_id, problem in found
        if problem is not None
    ]
