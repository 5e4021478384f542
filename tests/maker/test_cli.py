"""``ai-agent tools pending | show | approve | reject | activate | rollback | audit --verify``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ai_agent.cli import EXIT, main
from ai_agent.tools.maker import ToolsmakerRegistry
from tests.maker.conftest import SHOUT

INTENT: dict[str, Any] = {
    "name": "shout",
    "purpose": "Upper-case a text.",
    "inputs": {"text": "string"},
    "code": SHOUT,
}


@pytest.fixture
def maker() -> ToolsmakerRegistry:
    """The default directory (``.agents/toolsmaker`` in the test's private working directory)."""
    return ToolsmakerRegistry(".agents/toolsmaker")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_review_workflow(maker: ToolsmakerRegistry, capsys: pytest.CaptureFixture[str]) -> None:
    maker.build_from_intent(INTENT)
    code, out, _ = run(capsys, "tools", "pending")
    assert code == 0
    assert out.splitlines()[0] == "shout@1  (medium risk)  Upper-case a text."
    assert "approve: ai-agent tools approve shout@1" in out
    assert "reviews/shout_v1.json" in out

    code, out, _ = run(capsys, "tools", "show", "shout")
    assert code == 0
    assert out.startswith("shout@1: approval_required\n")
    assert "shout v1 (medium risk, code written by the requester): Upper-case a text." in out
    assert "+++ shout_v1.py" in out and "+        return text.upper()" in out
    assert f"sha256 {maker.record('shout', 1).spec.code_sha256}" in out

    code, out, _ = run(capsys, "tools", "approve", "shout")
    assert (code, out) == (0, "approved shout@1\n")
    assert maker.record("shout", 1).history[-1]["by"].startswith("cli")
    code, out, _ = run(capsys, "tools", "activate", "shout", "--max-output-chars", "50")
    assert code == 0 and out.startswith("activated shout@1")
    assert maker.active_versions() == {"shout": 1}
    assert maker.record("shout", 1).max_output_chars == 50

    code, out, _ = run(capsys, "tools", "show", "shout@1", "--code")
    assert "shout@1: activated (active)" in out and out.rstrip().endswith("return text.upper()")
    code, out, _ = run(capsys, "tools", "pending")
    assert out == "no generated tool is waiting for review\n"

    # v2 is approved with --activate; then a rollback returns to v1.
    maker.build_from_intent({**INTENT, "code": SHOUT.replace("upper", "lower")})
    code, out, _ = run(capsys, "tools", "pending")
    assert "changes from v1" not in out  # only the code changed, not the spec
    code, out, _ = run(capsys, "tools", "approve", "shout@2", "--activate")
    assert out == "approved shout@2\nactivated shout@2\n"
    code, out, _ = run(capsys, "tools", "rollback", "shout")
    assert (code, out) == (0, "shout is back at v1\n")
    code, out, _ = run(capsys, "tools", "rollback", "shout@2")
    assert (code, out) == (0, "shout is back at v2\n")

    # v3 is rejected; it can never be approved afterwards.
    maker.build_from_intent({**INTENT, "purpose": "Shout it.", "risk": "high"})
    code, out, _ = run(capsys, "tools", "pending")
    assert "changes: purpose: 'Upper-case a text.' -> 'Shout it.'; risk: 'medium' -> 'high'" in out
    code, out, _ = run(capsys, "tools", "reject", "shout@3", "--reason", "not needed")
    assert (code, out) == (0, "rejected shout@3\n")
    code, _, err = run(capsys, "tools", "approve", "shout@3")
    assert code == EXIT["failed"]
    assert "shout v3 is rejected; it cannot become approved (rejected is final)" in err
    code, out, _ = run(capsys, "tools", "show", "shout@3")
    assert "rejected" in out and "by cli" in out and "- not needed" in out

    code, out, _ = run(capsys, "tools", "audit", "--tail", "3")
    lines = out.splitlines()
    assert len(lines) == 3 and "tool_build_rejected" in lines[1] and "not needed" in lines[1]
    assert "tool_transition_refused" in lines[2] and "shout@3" in lines[2]  # the refused approve
    code, out, _ = run(capsys, "tools", "audit", "--verify")
    assert code == 0 and out.startswith("audit log intact: ")


def test_json_output(maker: ToolsmakerRegistry, capsys: pytest.CaptureFixture[str]) -> None:
    maker.build_from_intent(INTENT)
    code, out, _ = run(capsys, "tools", "pending", "--json")
    [pending] = json.loads(out)
    assert pending["spec"]["name"] == "shout" and pending["status"] == "approval_required"
    assert pending["active"] is False and pending["review"]["diff"].startswith("--- /dev/null")
    code, out, _ = run(capsys, "tools", "show", "shout@1", "--json")
    shown = json.loads(out)
    assert shown["code"] == SHOUT and shown["review"]["validation"]["ok"] is True
    code, out, _ = run(capsys, "tools", "audit", "--json")
    assert [e["event"] for e in json.loads(out)][-1] == "tool_approval_required"
    code, out, _ = run(capsys, "tools", "audit", "--verify", "--json")
    report = json.loads(out)
    assert report["ok"] is True and report["lines"] == 4 and len(report["head"]) == 64
    code, out, _ = run(capsys, "tools", "audit", "--tail", "0")
    assert (code, out) == (0, "")


def test_audit_verify_detects_tampering(
    maker: ToolsmakerRegistry, capsys: pytest.CaptureFixture[str]
) -> None:
    maker.build_from_intent(INTENT)
    maker.approve("shout", 1)
    log = maker.layout.audit
    lines = log.read_bytes().splitlines(keepends=True)
    # Someone hides that the tool was approved by rewriting who approved it.
    lines[4] = lines[4].replace(b'"by":"person"', b'"by":"security"')
    log.write_bytes(b"".join(lines))
    code, out, _ = run(capsys, "tools", "audit", "--verify")
    assert code == 1
    assert out.splitlines()[0].startswith("audit log BROKEN")
    assert "the head names 5 line(s)" in out
    lines.pop(2)
    log.write_bytes(b"".join(lines))
    code, out, _ = run(capsys, "tools", "audit", "--verify", "--json")
    report = json.loads(out)
    assert code == 1 and not report["ok"]
    assert any("line 3 does not follow line 2" in p for p in report["problems"])


def test_a_draft_shows_why_it_failed(
    maker: ToolsmakerRegistry, capsys: pytest.CaptureFixture[str]
) -> None:
    maker.build_from_intent({**INTENT, "code": "import socket\n" + SHOUT})
    code, out, _ = run(capsys, "tools", "show", "shout")
    assert code == 0 and out.startswith("shout@1: draft")
    assert "validation failed: line 1: import of 'socket' is forbidden" in out
    code, out, _ = run(capsys, "tools", "pending")
    assert out == "no generated tool is waiting for review\n"


def test_names_and_versions_that_do_not_exist(
    maker: ToolsmakerRegistry, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "tools", "show", "nothing")
    assert code == EXIT["failed"] and "no generated tool nothing; generated tools: none" in err
    maker.build_from_intent(INTENT)
    code, _, err = run(capsys, "tools", "show", "shout@9")
    assert code == EXIT["failed"] and "no generated tool shout v9; generated tools: shout" in err
    code, _, err = run(capsys, "tools", "activate", "shout")
    assert code == EXIT["usage"] and "shout has no approved version" in err
    code, _, err = run(capsys, "tools", "approve", "shout@x")
    assert code == EXIT["usage"] and "is not NAME or NAME@VERSION" in err
    # Digits of other scripts: int() read "\u0661" as version 1 and raised on "\u00b2".
    for version in ("\u0661", "\u00b2", "9" * 5000):
        code, _, err = run(capsys, "tools", "approve", f"shout@{version}")
        assert code == EXIT["usage"] and "is not NAME or NAME@VERSION" in err, version
    code, _, err = run(capsys, "tools", "approve", "nothing")
    assert code == EXIT["failed"] and "no generated tool nothing" in err
    code, _, err = run(capsys, "tools", "rollback", "shout")
    assert code == EXIT["failed"] and "shout has no active version to roll back from" in err
    code, _, err = run(capsys, "tools", "reject", "shout@1")
    assert code == EXIT["usage"]  # --reason is required


def test_another_directory_and_audit_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    audit = tmp_path / "elsewhere" / "audit.jsonl"
    other = ToolsmakerRegistry(tmp_path / "tm", audit_path=audit)
    other.build_from_intent(INTENT)
    code, out, _ = run(capsys, "tools", "pending", "--dir", str(tmp_path / "tm"))
    assert out.startswith("shout@1")
    code, out, _ = run(
        capsys,
        "tools",
        "audit",
        "--verify",
        "--dir",
        str(tmp_path / "tm"),
        "--audit-path",
        str(audit),
    )
    assert code == 0 and "4 event(s)" in out
    code, out, _ = run(capsys, "tools", "pending")
    assert out == "no generated tool is waiting for review\n"  # the default directory is empty


def test_the_catalog_lists_active_generated_tools(
    maker: ToolsmakerRegistry, capsys: pytest.CaptureFixture[str]
) -> None:
    maker.build_from_intent(INTENT)
    maker.approve("shout", 1)
    maker.activate("shout", 1)
    code, out, _ = run(capsys, "tools", "--category", "read_only")
    assert code == 0
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("shout"))
    assert line.split()[:2] == ["shout", "generated"]
    assert "generated tool v1; runs sandboxed" in line
    code, out, _ = run(capsys, "tools", "--category", "modification")
    assert "propose_tool       toolsmaker" in out


def test_review_shows_hostile_text_of_a_generated_tool_escaped(
    maker: ToolsmakerRegistry, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    # Trojan Source: bidi controls in a comment make the code read differently than it runs.
    trojan = SHOUT.replace("text.upper()", "text.upper()  # \u202e\u2066 admin only\u2069\u2066")
    purpose = "Upper-case\x1b[2K\rSafe and read-only \u202e"
    maker.build_from_intent({**INTENT, "purpose": purpose, "code": trojan})
    assert main(["tools", "pending"]) == 0
    assert main(["tools", "show", "shout", "--code"]) == 0
    out = capsysbinary.readouterr().out.decode()
    assert not [c for c in out if c in "\x1b\r\u202e\u2066\u2069"]
    assert r"Upper-case\x1b[2K\rSafe and read-only \u202e" in out  # the purpose, as listed
    assert r"return text.upper()  # \u202e\u2066 admin only\u2069\u2066" in out  # the code
    # Activated, it is in the catalog: its description is the purpose the model wrote.
    maker.approve("shout", 1)
    maker.activate("shout", 1)
    assert main(["tools"]) == 0
    out = capsysbinary.readouterr().out.decode()
    assert not [c for c in out if c in "\x1b\r\u202e"]
    assert r"Upper-case\x1b[2K\rSafe and read-only \u202e" in out
