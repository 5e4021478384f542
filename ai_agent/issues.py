"""The kinds of gate issue, in one table: what each weighs, advises, and how it is recognised.

Every problem of a cycle becomes an issue of one `IssueKind`. `KINDS` holds one `KindSpec` per
kind: its severity (0..1, scored by the gate), the advice the gate's report gives for it, what a
plan does for a call it holds back, and how it is recognised: the result codes a tool puts in
``meta["code"]``, the exceptions a model call raises, and the words of an error message.
Everything else (``state.SEVERITY``, the gate's options, the draft's model errors, the
classification of a tool's error) is read from the table, so adding a kind is one entry here
and its line in docs/workflow.md (tests/test_issues.py checks that they agree).

A tool's error is recognised by its code first (`classify`), then by the words of its message,
the strongest kind first, so "api key missing" is AUTH, not DATA_MISSING. Words are a guess:
a tool that knows what went wrong names it with a code.

In run state an issue's kind is kept as the plain string of its value (`as_state`): a
`StrEnum` member equals its value, hashes and prints as it, and a checkpoint stays JSON.

Examples:
    >>> classify("order A-1 not found")
    <IssueKind.DATA_MISSING: 'DATA_MISSING'>
    >>> classify("api key missing"), classify("not found", "RATE_LIMITED")
    (<IssueKind.AUTH: 'AUTH'>, <IssueKind.RATE_LIMIT: 'RATE_LIMIT'>)
    >>> KINDS[IssueKind.APPROVAL_REQUIRED].always_gates
    True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal, cast

from ai_agent.errors import (
    BudgetExceededError,
    CircuitOpenError,
    McpAuthError,
    McpEnvError,
    McpServerError,
    ModelAuthError,
    ModelRateLimitError,
    ModelResponseError,
)

__all__ = [
    "KINDS",
    "QUIET_CODES",
    "WORDED_CODES",
    "IssueKind",
    "KindSpec",
    "as_state",
    "classify",
    "kind_of_error",
]


class IssueKind(StrEnum):
    """What kind of problem an issue is (see `KINDS` for what the engine knows of each)."""

    TOOL_MISSING = "TOOL_MISSING"
    TOOL_ERROR = "TOOL_ERROR"
    RATE_LIMIT = "RATE_LIMIT"
    AUTH = "AUTH"
    DATA_MISSING = "DATA_MISSING"
    MISSING_ENV = "MISSING_ENV"
    APPROVAL_REQUIRED = "APPROVAL_REQUIRED"
    UNKNOWN_OUTCOME = "UNKNOWN_OUTCOME"
    NO_PROGRESS = "NO_PROGRESS"
    MODEL_ERROR = "MODEL_ERROR"
    CIRCUIT_OPEN = "CIRCUIT_OPEN"
    BUDGET = "BUDGET"
    HOOK_ERROR = "HOOK_ERROR"
    OUTPUT_INVALID = "OUTPUT_INVALID"
    SUBAGENT_PAUSED = "SUBAGENT_PAUSED"


@dataclass(frozen=True, slots=True)
class KindSpec:
    """What the engine knows of one kind of issue.

    Attributes:
        severity: Its default score (0..1); the gate intervenes at or over the threshold.
        advice: The option the gate's report offers when an issue of this kind is in it (None:
            the calls it holds back carry their own option, see ``resolves``).
        resolves: What a plan does for a call this kind holds back: ``approve`` it or
            ``activate`` its tool (offered when the tool is in the catalog).
        codes: Result codes (``meta["code"]``, any case) that make a tool's error this kind.
        errors: Exceptions of a model call that become this kind (a subclass too); other
            model errors fail the run.
        words: Words that make an error message this kind when its code says nothing.
    """

    severity: float
    advice: str | None = None
    resolves: Literal["approve", "activate"] | None = None
    codes: frozenset[str] = frozenset()
    errors: tuple[type[Exception], ...] = ()
    words: re.Pattern[str] | None = None

    @property
    def always_gates(self) -> bool:
        """Whether it stops a run whatever the threshold (thresholds are between 0 and 1)."""
        return self.severity >= 1.0


# The first five severities come from the pipeline spec; the rest are blockers the engine adds: a
# missing env key is an AUTH problem, and an approval, an unknown outcome after a crash or a
# budget must always stop the run, whatever the threshold. Word patterns keep to word
# boundaries, so "rate" does not match "generate" nor "auth" "author", nor "401" "4010".
KINDS: dict[IssueKind, KindSpec] = {
    IssueKind.TOOL_MISSING: KindSpec(0.80, resolves="activate", codes=frozenset({"TOOL_MISSING"})),
    IssueKind.TOOL_ERROR: KindSpec(
        0.90,
        advice="resume with instructions for another approach, or stop the run",
        # The engine stopped the tool (a sandbox policy violation) or cannot run it, or what
        # it returned cannot be kept: a tool error, whatever words ("limit", "forbidden") the
        # message happens to use.
        codes=frozenset(
            {
                "POLICY_VIOLATION",
                "SANDBOX_UNAVAILABLE",
                "NON_TEXT_OUTPUT",
                "OUTPUT_TOO_LARGE",
                "BAD_RESULT",
            }
        ),
        errors=(McpServerError,),
    ),
    IssueKind.RATE_LIMIT: KindSpec(
        0.85,
        advice="wait for the limit to reset, then resume with a plan",
        codes=frozenset({"RATE_LIMIT", "RATE_LIMITED"}),
        errors=(ModelRateLimitError,),
        words=re.compile(r"\bquota\b|\blimit(ed|s)?\b|\brate\b|\b429\b", re.I),
    ),
    IssueKind.AUTH: KindSpec(
        0.95,
        advice="fix the credentials, then resume with a plan",
        codes=frozenset({"AUTH", "UNAUTHORIZED", "FORBIDDEN"}),
        errors=(ModelAuthError, McpAuthError),
        # "auth" and its long forms as words ("author" is none of them); 401 and 403 are the
        # HTTP statuses of a refused credential (the spec: "401 from API -> 0.95").
        words=re.compile(
            r"\bapi[ _-]?key\b|\bunauthori[sz]ed\b|\bforbidden\b|\b40[13]\b"
            r"|\bauth(enticat(e|ed|es|ing|ion)|ori[sz]ation)?\b",
            re.I,
        ),
    ),
    IssueKind.DATA_MISSING: KindSpec(
        0.70,
        advice="point the agent at the right data in the plan's instructions",
        codes=frozenset({"NOT_FOUND", "DATA_MISSING"}),
        words=re.compile(r"\bnot found\b|\bno such file\b|\bmissing\b", re.I),
    ),
    IssueKind.MISSING_ENV: KindSpec(
        0.95,
        advice="set the missing environment variable(s), then resume with a plan that goes on "
        "(it confirms an external call shown here; a change still needs --approve)",
        codes=frozenset({"MISSING_ENV"}),
        errors=(McpEnvError,),
    ),
    IssueKind.APPROVAL_REQUIRED: KindSpec(
        1.0,
        # The calls are approved one by one (``resolves``); the advice says how a tool stops
        # asking: a tool that does not say its category is EXTERNAL, the strictest.
        advice="a tool that should not ask: set its category (ToolSpec(..., "
        "category='read_only'), @tool(category=...); see docs/tools.md), or its category's "
        "policy (--approval external=auto)",
        resolves="approve",
    ),
    IssueKind.UNKNOWN_OUTCOME: KindSpec(
        1.0,
        advice="check whether the interrupted call's effects already happened before "
        "approving it again",
        resolves="approve",
    ),
    IssueKind.NO_PROGRESS: KindSpec(
        0.75, advice="give the agent new instructions, or stop the run"
    ),
    IssueKind.MODEL_ERROR: KindSpec(
        0.90, advice="check the model server, then resume", errors=(ModelResponseError,)
    ),
    IssueKind.CIRCUIT_OPEN: KindSpec(
        0.95,
        advice="wait for the model server to recover, then resume",
        errors=(CircuitOpenError,),
    ),
    IssueKind.BUDGET: KindSpec(
        1.0,
        advice="resume with a plan to grant another budget of the same size, or stop the run",
        errors=(BudgetExceededError,),
    ),
    # A hook is the user's code: nothing a plan says can make it work, so the run always stops
    # for the person who can fix it.
    IssueKind.HOOK_ERROR: KindSpec(
        1.0,
        advice="fix the hook the issue names, then resume with a plan (the stage runs again "
        "from the next cycle)",
    ),
    # The answer still did not fit the output type after the errors went back to the model
    # (``output.max_retries`` times): the caller asked for that type, so a run never completes
    # without it, whatever the threshold.
    IssueKind.OUTPUT_INVALID: KindSpec(
        1.0,
        advice="resume with instructions that say how to fix the answer (the model answers "
        "again, then gives its typed answer), or stop the run",
    ),
    # A subagent's gate stopped the child: its person answers with this run's plan, which the
    # call hands on to the child when it runs again (ai_agent.graph.subagents).
    IssueKind.SUBAGENT_PAUSED: KindSpec(
        1.0,
        advice="answer the subagent's gate with this run's plan: the call runs again and hands "
        "the plan on to the subagent, which continues where it stopped, then this run",
        codes=frozenset({"SUBAGENT_PAUSED"}),
    ),
}

# Result codes of the engine's own tools that name no kind: the message's words decide, as they
# do for a code the table does not know (a user's tool's own). Moving one onto a kind is an
# edit of that kind's ``codes``.
WORDED_CODES = frozenset(
    {
        "BAD_ARGUMENTS",
        "BAD_PATH",
        "BAD_REQUEST",
        "CANNOT_PARSE",
        "COMMAND_NOT_ALLOWED",
        "CRASHED",
        "ENCODING",
        "EXTENSION_DENIED",
        "HARD_LINK",
        "IS_A_DIRECTORY",
        "MCP_PROTOCOL_ERROR",
        "MCP_SERVER_CRASHED",
        "MCP_SERVER_STOPPED",
        "MCP_TOOL_ERROR",
        "MCP_UNAVAILABLE",
        "NOT_A_DIRECTORY",
        "NOT_A_FILE",
        "OS_ERROR",
        "OUTSIDE_SANDBOX",
        "PATH_CHANGED",
        "PROTECTED_PATH",
        "RESOURCE_LIMIT",
        "TIMEOUT",
        "TOOL_ERROR",
        "TOOL_EXCEPTION",
        "TOO_LARGE",
        "UNREACHABLE",
        "UPSTREAM",
        "VALIDATION_FAILED",
    }
)

# Result codes that raise no issue: a call with arguments that do not fit the tool's schema is
# sent back to the model to repair (a second bad call is an issue of its own, see
# tools/policy.py), and a call a plan cancelled was skipped, not failed.
QUIET_CODES = frozenset({"SCHEMA_VIOLATION", "CANCELLED"})

_BY_CODE = {code: kind for kind, spec in KINDS.items() for code in spec.codes}
_BY_ERROR = {error: kind for kind, spec in KINDS.items() for error in spec.errors}
_BY_WORDS = tuple(
    (kind, spec.words)
    for kind, spec in sorted(KINDS.items(), key=lambda item: -item[1].severity)
    if spec.words is not None
)


def classify(text: str, code: str | None = None) -> IssueKind:
    """The kind of a tool's error: its code's if the table knows it, else by the words.

    Args:
        text: The error message.
        code: The result's ``meta["code"]``, if any.

    Returns:
        The kind; TOOL_ERROR when neither the code nor the words say more.
    """
    if code and code.upper() in _BY_CODE:
        return _BY_CODE[code.upper()]
    for kind, words in _BY_WORDS:
        if words.search(text):
            return kind
    return IssueKind.TOOL_ERROR


def kind_of_error(error: BaseException) -> IssueKind | None:
    """The kind an exception becomes, by its nearest class in the table; None: not an issue.

    Examples:
        >>> kind_of_error(McpAuthError("refused", server="fs"))
        <IssueKind.AUTH: 'AUTH'>
        >>> kind_of_error(ValueError("x")) is None
        True
    """
    return next((_BY_ERROR[c] for c in type(error).__mro__ if c in _BY_ERROR), None)


def as_state(kind: IssueKind) -> IssueKind:
    """``kind`` as run state keeps it: the plain string of its value.

    Nothing that reads state can tell the two apart (they are equal, hash and print the same),
    except the checkpoint serializer: LangGraph's msgpack writes an enum member as a reference
    to its class, which strict loading refuses. The plain string keeps checkpoints JSON.
    """
    return cast(IssueKind, kind.value)
