"""The one table of issue kinds: complete, in step with the docs and the code, and JSON in state."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import TypeVar, cast

import pytest

import ai_agent
from ai_agent import Agent
from ai_agent.checkpoints._serde import strict_serializer
from ai_agent.errors import (
    McpServerError,
    ModelError,
    ModelUnavailableError,
    ScriptExhaustedError,
)
from ai_agent.issues import (
    KINDS,
    QUIET_CODES,
    WORDED_CODES,
    IssueKind,
    as_state,
    classify,
    kind_of_error,
)
from ai_agent.nodes._issues import issue, issue_from_result
from ai_agent.nodes.gate import build_report
from ai_agent.state import SEVERITY, IssueCode, PendingCall, RunState, ToolCall
from ai_agent.testing import ScriptedModel

PACKAGE = Path(ai_agent.__file__).resolve().parent
WORKFLOW = PACKAGE.parent / "docs" / "workflow.md"

# Model errors the gate cannot help with: the run fails with a clear message, resumable.
FAIL_THE_RUN = {ModelUnavailableError, ScriptExhaustedError}

E = TypeVar("E", bound=Exception)

_CODE = re.compile(r"^[A-Z][A-Z_]+[A-Z]$")


def _subclasses(cls: type[E]) -> list[type[E]]:
    found = [cls]
    for sub in cls.__subclasses__():
        found += _subclasses(sub)
    return found


def _codes_in(tree: ast.AST) -> set[str]:
    """The result codes a module writes: ``"code": X``, ``code = X``, ``meta["code"] = X``,
    returned by a ``*_code`` function, or the leading arguments of an error or result helper
    (``SandboxError("NOT_FOUND", ...)``, ``_refused(name, "BAD_RESULT", ...)``)."""
    values: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            values += [
                v for k, v in zip(node.keys, node.values, strict=True) if _is(k, "code") and v
            ]
        elif isinstance(node, ast.Assign):
            if any(_names_code(t) for t in node.targets):
                values.append(node.value)
        elif isinstance(node, ast.FunctionDef) and node.name.endswith("_code"):
            values += [n.value for n in ast.walk(node) if isinstance(n, ast.Return) and n.value]
        elif isinstance(node, ast.Call) and _helper(node.func):
            values += node.args[:2]
    found: set[str] = set()
    for value in values:
        found.update(
            n.value
            for n in ast.walk(value)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and _CODE.match(n.value)
        )
    return found


def _is(node: ast.expr | None, text: str) -> bool:
    return isinstance(node, ast.Constant) and node.value == text


def _names_code(target: ast.expr) -> bool:
    if isinstance(target, ast.Name):
        return target.id == "code"
    return isinstance(target, ast.Subscript) and _is(target.slice, "code")


def _helper(func: ast.expr) -> bool:
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
    return name.endswith("Error") or name in ("_error", "_refused")


def engine_result_codes() -> set[str]:
    """Every result code the engine's own tools and stages can put in ``meta["code"]``."""
    found: set[str] = set()
    for part in ("tools", "nodes"):
        for path in (PACKAGE / part).rglob("*.py"):
            found |= _codes_in(ast.parse(path.read_text()))
    return found


def docs_table() -> dict[str, float]:
    """The kinds and severities of docs/workflow.md's table of issues."""
    rows = re.findall(r"^\| ([A-Z_]+) \| ([0-9.]+) \|", WORKFLOW.read_text(), re.M)
    return {code: float(severity) for code, severity in rows}


# The table is complete ---------------------------------------------------------------------------


def test_every_kind_has_a_record_with_a_severity_and_an_option() -> None:
    assert set(KINDS) == set(IssueKind)
    for kind, spec in KINDS.items():
        assert 0.0 <= spec.severity <= 1.0, kind
        # The gate always tells a person what a plan can do about it.
        assert spec.advice or spec.resolves, kind


def test_every_kind_has_its_line_in_the_docs_with_the_same_severity() -> None:
    assert docs_table() == {kind.value: spec.severity for kind, spec in KINDS.items()}


def test_every_result_code_of_the_engine_is_a_kind_worded_or_quiet() -> None:
    found = engine_result_codes()
    assert {"NOT_FOUND", "TIMEOUT", "OUTPUT_TOO_LARGE", "MCP_SERVER_CRASHED"} <= found
    mapped = {code for spec in KINDS.values() for code in spec.codes}
    unknown = found - mapped - WORDED_CODES - QUIET_CODES
    assert not unknown, f"result codes no kind recognises: {sorted(unknown)}"
    stale = (WORDED_CODES | QUIET_CODES) - found
    assert not stale, f"codes no tool uses any more: {sorted(stale)}"


def test_a_code_belongs_to_one_kind_at_most() -> None:
    seen: list[str] = [code for spec in KINDS.values() for code in spec.codes]
    seen += [*WORDED_CODES, *QUIET_CODES]
    assert len(seen) == len(set(seen))


def test_every_model_error_is_a_kind_or_fails_the_run() -> None:
    for error in _subclasses(ModelError):
        kind = kind_of_error(error.__new__(error))
        assert (kind is None) == (error in FAIL_THE_RUN or error is ModelError), error


def test_the_mcp_errors_issue_code_is_their_kind() -> None:
    for error in _subclasses(McpServerError):
        assert kind_of_error(error.__new__(error)) == error.issue_code, error


def test_the_state_names_come_from_the_table() -> None:
    assert {kind.value: spec.severity for kind, spec in KINDS.items()} == SEVERITY
    assert IssueCode is IssueKind
    assert [k for k, spec in KINDS.items() if spec.always_gates] == [
        IssueKind.APPROVAL_REQUIRED,
        IssueKind.UNKNOWN_OUTCOME,
        IssueKind.BUDGET,
        IssueKind.HOOK_ERROR,  # the user's code: no threshold waves it through
        IssueKind.OUTPUT_INVALID,  # the caller asked for that type: no completion without it
        IssueKind.SUBAGENT_PAUSED,  # a child's gate stopped it: its person must answer
    ]


# Recognising a kind ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "code", "kind"),
    [
        ("api key missing", None, IssueKind.AUTH),  # the strongest kind's words first
        ("quota reached; file missing", None, IssueKind.RATE_LIMIT),
        ("no such file", None, IssueKind.DATA_MISSING),
        ("generate failed", None, IssueKind.TOOL_ERROR),  # "rate" only as a word
        ("not found", "rate_limited", IssueKind.RATE_LIMIT),  # a known code, any case
        ("output over the limit", "OUTPUT_TOO_LARGE", IssueKind.TOOL_ERROR),
        ("order not found", "SOMETHING_ELSE", IssueKind.DATA_MISSING),  # unknown: words
    ],
)
def test_classify(text: str, code: str | None, kind: IssueKind) -> None:
    assert classify(text, code) == kind


def test_quiet_codes_raise_no_issue() -> None:
    c = ToolCall(id="c1.0", name="t", args={})
    bad = {"status": "error", "error": "bad", "meta": {"code": "SCHEMA_VIOLATION"}}
    assert issue_from_result(c, bad) is None  # type: ignore[arg-type]
    failed = issue_from_result(c, {"status": "error"})
    assert failed is not None
    assert (failed["code"], failed["message"]) == ("TOOL_ERROR", "t: the tool failed")


def test_an_unknown_kind_from_another_version_gives_no_option_of_its_own() -> None:
    c = ToolCall(id="c1.0", name="t", args={})
    later = cast(IssueKind, "LATER_KIND")
    found = issue(IssueKind.AUTH, "x")
    found["code"] = later
    waiting = PendingCall(call=c, blocked=later, preview="t()")
    state = RunState(iteration=1, issues=[found], pending=[waiting])
    report = build_report(state, thread_id="t", threshold=0.7, catalog=["t"])
    assert report["options"] == [
        "continue with instructions (--plan '...')",
        "stop the run (--deny)",
    ]


# Kinds stay plain JSON strings in state ----------------------------------------------------------


def test_an_issue_holds_its_kind_as_a_plain_string() -> None:
    found = issue(IssueKind.AUTH, "refused")
    assert type(found["code"]) is str
    assert type(as_state(IssueKind.BUDGET)) is str
    serde = strict_serializer()
    blob = serde.dumps_typed(found)
    assert b"IssueKind" not in blob[1]
    assert serde.loads_typed(blob) == found


async def test_checkpoints_of_a_paused_run_hold_no_enum(tmp_path: Path) -> None:
    db = tmp_path / "runs" / "checkpoints.sqlite"
    model = ScriptedModel([{"tool_calls": [{"name": "read_file", "args": {"path": "a.txt"}}]}])
    async with Agent(model=model, checkpoint_path=db, memory_path=tmp_path / "m.jsonl") as agent:
        result = await agent.run("read a.txt")
    assert result.gate is not None
    assert [
        (p["blocked"], i["code"])
        for p, i in zip(result.gate["pending"], result.gate["issues"], strict=True)
    ] == [("TOOL_MISSING", "TOOL_MISSING")]
    stored = b"".join(p.read_bytes() for p in db.parent.iterdir() if p.is_file())
    assert b"TOOL_MISSING" in stored
    assert b"IssueKind" not in stored


# The pipeline spec's table of built-in triggers: each keyword, as a word, makes its kind.
SPEC_KEYWORDS = {
    IssueKind.RATE_LIMIT: ["quota", "limit", "rate", "429"],
    IssueKind.AUTH: ["api key", "unauthorized", "forbidden", "auth"],
    IssueKind.DATA_MISSING: ["not found", "no such file", "file not found", "missing"],
}


@pytest.mark.parametrize(
    ("kind", "word"), [(kind, word) for kind, words in SPEC_KEYWORDS.items() for word in words]
)
def test_every_keyword_of_the_spec_makes_its_kind(kind: IssueKind, word: str) -> None:
    assert classify(word) == kind
    assert classify(f"the call failed: {word.upper()} (see the log)") == kind


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("HTTP 401", IssueKind.AUTH),  # the spec's example: "401 from API -> 0.95"
        ("HTTP 401 Unauthorized", IssueKind.AUTH),
        ("server said 403", IssueKind.AUTH),
        ("authentication failed", IssueKind.AUTH),
        ("HTTP 429", IssueKind.RATE_LIMIT),
    ],
)
def test_http_statuses_of_the_spec_make_their_kind(text: str, kind: IssueKind) -> None:
    assert classify(text) == kind


@pytest.mark.parametrize(
    "text",
    [
        "the author field is empty",  # "auth" is a word of its own, not a prefix
        "authored by nobody",
        "an authority said no",
        "generate failed",
        "the delimiter is wrong",
        "order 4010 failed",  # a number containing 401 is not a status
        "rated R",
    ],
)
def test_keywords_match_whole_words_only(text: str) -> None:
    assert classify(text) == IssueKind.TOOL_ERROR


def test_a_401_from_a_tool_scores_the_spec_s_auth_severity() -> None:
    c = ToolCall(id="c1.0", name="fetch_users", args={})
    found = issue_from_result(c, {"status": "error", "error": "HTTP 401"})
    assert found is not None
    assert (found["code"], found["severity"]) == ("AUTH", 0.95)


def test_an_approval_s_advice_says_how_to_set_a_tool_s_category() -> None:
    c = ToolCall(id="c1.0", name="fetch_users", args={})
    why = "fetch_users is an external tool and needs confirmation"
    waiting = PendingCall(call=c, blocked=as_state(IssueKind.APPROVAL_REQUIRED), preview="f()")
    state = RunState(
        iteration=1, issues=[issue(IssueKind.APPROVAL_REQUIRED, why)], pending=[waiting]
    )
    options = build_report(state, thread_id="t", threshold=0.7, catalog=["fetch_users"])["options"]
    assert options[0] == "approve c1.0 (--approve c1.0)"
    [advice] = [o for o in options if "category" in o]
    assert "category='read_only'" in advice
    assert "docs/tools.md" in advice
    assert "--approval external=auto" in advice
