"""The toolsmaker's lifecycle: every transition (and every refused one), versions, the files.

No sandbox runs here except where a tool is called to show what activation loaded.
"""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from ai_agent.errors import (
    ToolBuildError,
    ToolPolicyViolation,
    ToolTransitionError,
    UnknownToolError,
)
from ai_agent.tools import ToolRegistry, ToolSpec
from ai_agent.tools.maker import (
    SandboxLimits,
    ToolBuildRequest,
    ToolsmakerRegistry,
    ToolStatus,
)
from ai_agent.tools.maker.approvals import TRANSITIONS, check_transition
from tests.maker.conftest import CallTool

ECHO = {"name": "echo", "purpose": "Echo a text.", "inputs": {"text": "string"}}


def _events(maker: ToolsmakerRegistry) -> list[tuple[str, str | None, int | None]]:
    return [(e["event"], e["tool"], e["version"]) for e in maker.audit_log.events()]


def test_a_build_goes_from_draft_to_approval_required_with_every_file(
    maker: ToolsmakerRegistry,
) -> None:
    built = maker.build_from_intent(ECHO)
    root = maker.layout.root
    assert built.status is ToolStatus.APPROVAL_REQUIRED and built.ok
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()) == [
        ".lock",
        "audit.jsonl",
        "audit.jsonl.head",
        "audit.jsonl.lock",
        "generated/echo_v1.py",
        "reviews/echo_v1.json",
        "specs/echo_v1.json",
    ]
    record = json.loads((root / "specs/echo_v1.json").read_text())
    assert record["record_version"] == 1
    assert record["status"] == "approval_required"
    assert [h["status"] for h in record["history"]] == ["draft", "validated", "approval_required"]
    assert record["request"]["name"] == "echo"
    assert record["validation"]["ok"] is True
    assert record["code_path"] == "generated/echo_v1.py"
    assert record["spec"]["code_sha256"] == built.spec.code_sha256
    review = json.loads((root / "reviews/echo_v1.json").read_text())
    assert set(review) == {
        "name",
        "version",
        "previous_version",
        "summary",
        "spec_changes",
        "diff",
        "validation",
        "tests",
        "code_path",
        "code_sha256",
        "spec",
    }
    assert review["tests"]["summary"] == "no tests given"
    assert review["diff"].startswith("--- /dev/null\n+++ echo_v1.py\n")
    assert review["code_path"] == built.code_path
    assert Path(review["code_path"]).read_text() == maker.code("echo", 1)
    assert _events(maker) == [
        ("tool_build_requested", "echo", 1),
        ("tool_build_generated", "echo", 1),
        ("tool_build_validated", "echo", 1),
        ("tool_approval_required", "echo", 1),
    ]
    assert not list(root.rglob("*.tmp"))  # atomic writes leave no temporary files


async def test_approve_then_activate_registers_the_tool(
    maker: ToolsmakerRegistry, call_tool: CallTool
) -> None:
    maker.build_from_intent(ECHO)
    assert maker.approve("echo", 1, by="ada").status is ToolStatus.APPROVED
    spec = maker.activate("echo", 1, by="ada", max_output_chars=500)
    assert maker.active_versions() == {"echo": 1}
    assert json.loads(maker.layout.active.read_text()) == {"echo": 1}
    assert maker.runtime["echo"] is spec
    assert maker.runtime.owner("echo") is maker.toolset  # the generated tools' own toolset
    assert maker.toolset.tools() == [spec]
    assert spec.group == "generated" and spec.category.value == "read_only"
    assert maker.record("echo", 1).max_output_chars == 500
    assert (await call_tool(spec, {"text": "hi"}))["content"] == {"result": {"text": "hi"}}
    assert [e for e, _, _ in _events(maker)][-2:] == ["tool_approved", "tool_activated"]
    history = maker.record("echo").history
    assert [(h["status"], h["by"]) for h in history][-2:] == [
        ("approved", "ada"),
        ("activated", "ada"),
    ]


def test_reject_is_final(maker: ToolsmakerRegistry) -> None:
    maker.build_from_intent(ECHO)
    record = maker.reject("echo", 1, reason="does nothing useful", by="ada")
    assert record.status is ToolStatus.REJECTED
    assert record.history[-1]["reason"] == "does nothing useful"
    for action in (
        lambda: maker.approve("echo", 1),
        lambda: maker.activate("echo", 1),
        lambda: maker.reject("echo", 1, reason="again"),
    ):
        with pytest.raises(ToolTransitionError, match="rejected is final"):
            action()
    # The same proposal again is a new version, with a new review.
    assert maker.build_from_intent(ECHO).spec.version == 2


ALL = list(ToolStatus)


@pytest.mark.parametrize("current", ALL)
@pytest.mark.parametrize("target", ALL)
def test_exactly_the_lifecycle_transitions_are_allowed(
    current: ToolStatus, target: ToolStatus
) -> None:
    allowed = {
        (ToolStatus.DRAFT, ToolStatus.VALIDATED),
        (ToolStatus.VALIDATED, ToolStatus.APPROVAL_REQUIRED),
        (ToolStatus.APPROVAL_REQUIRED, ToolStatus.APPROVED),
        (ToolStatus.APPROVAL_REQUIRED, ToolStatus.REJECTED),
        (ToolStatus.APPROVED, ToolStatus.ACTIVATED),
    }
    assert (target in TRANSITIONS[current]) == ((current, target) in allowed)
    if (current, target) in allowed:
        check_transition("t", 1, current, target)
    else:
        with pytest.raises(ToolTransitionError, match=f"is {current.value}; it cannot become"):
            check_transition("t", 1, current, target)


def test_refused_transitions_through_the_registry_are_audited(
    maker: ToolsmakerRegistry,
) -> None:
    maker.build_from_intent(ECHO)
    with pytest.raises(ToolTransitionError, match="approval_required; it cannot become activated"):
        maker.activate("echo", 1)  # not approved yet: a person must approve first
    maker.approve("echo", 1)
    with pytest.raises(ToolTransitionError, match="approved; it cannot become approved"):
        maker.approve("echo", 1)
    with pytest.raises(ToolTransitionError, match="approved; it cannot become rejected"):
        maker.reject("echo", 1, reason="late")
    maker.activate("echo", 1)
    with pytest.raises(ToolTransitionError, match="activated is final"):
        maker.activate("echo", 1)
    refused = [e for e in maker.audit_log.events() if e["event"] == "tool_transition_refused"]
    assert [(e["data"]["current"], e["data"]["wanted"]) for e in refused] == [
        ("approval_required", "activated"),
        ("approved", "approved"),
        ("approved", "rejected"),
        ("activated", "activated"),
    ]
    assert maker.verify_audit().ok


def test_a_draft_that_failed_validation_never_reaches_a_person(
    maker: ToolsmakerRegistry,
) -> None:
    built = maker.build_from_intent(
        {
            **ECHO,
            "code": "import subprocess\nclass GeneratedTool:\n    def execute(self, **kw):"
            "\n        return subprocess.run(['id'])\n",
        }
    )
    assert built.status is ToolStatus.DRAFT and not built.ok
    assert built.review_path is None
    assert "import of 'subprocess' is forbidden" in built.validation["errors"][0]
    assert maker.pending() == []
    assert maker.review("echo", 1) == {}
    with pytest.raises(ToolTransitionError, match="draft; it cannot become approved"):
        maker.approve("echo", 1)
    validated = [e for e in maker.audit_log.events() if e["event"] == "tool_build_validated"]
    assert validated[-1]["data"]["ok"] is False


def test_an_identical_proposal_reuses_its_build(maker: ToolsmakerRegistry) -> None:
    first = maker.build_from_intent(ECHO)
    again = maker.build_from_intent(dict(ECHO))
    assert again.reused and again.spec == first.spec
    assert len(maker.records("echo")) == 1
    assert len(maker.audit_log.events()) == 4  # nothing new happened


def test_versions_and_review_diffs(maker: ToolsmakerRegistry) -> None:
    maker.build_from_intent(ECHO)
    maker.approve("echo", 1)
    maker.activate("echo", 1)
    v2 = maker.build_from_intent({**ECHO, "purpose": "Echo a text back."})
    v3 = maker.build_from_intent(
        {
            **ECHO,
            "purpose": "Echo a text back.",
            "capabilities": ["fs_read"],
            "allowed_paths": ["notes"],
        }
    )
    assert (v2.spec.version, v3.spec.version) == (2, 3)
    review = maker.review("echo", 3)
    # Diffed against the active version (what a reviewer compares with), not the last draft.
    assert review["previous_version"] == 1
    assert review["diff"].startswith("--- echo_v1.py\n+++ echo_v3.py\n")
    assert '-    """Echo a text."""' in review["diff"]
    assert '+    """Echo a text back."""' in review["diff"]
    assert "capabilities: [] -> [fs_read]" in review["spec_changes"]
    assert "allowed_paths: [] -> [notes]" in review["spec_changes"]
    assert "files: read only in notes" in review["summary"]
    assert [r.version for r in maker.pending()] == [2, 3]
    assert maker.record("echo").version == 3


async def test_rollback_returns_to_an_earlier_activated_version(
    maker: ToolsmakerRegistry, call_tool: CallTool
) -> None:
    for version, outputs in ((1, ["text"]), (2, [])):
        maker.build_from_intent({**ECHO, "outputs": outputs})
        maker.approve("echo", version)
        maker.activate("echo", version)
    assert (await call_tool(maker.runtime["echo"], {"text": "a"}))["content"] == {
        "result": {"text": "a"}
    }
    spec = maker.rollback("echo", by="ada")
    assert maker.active_versions() == {"echo": 1}
    assert (await call_tool(spec, {"text": "a"}))["content"] == {"text": "a"}
    with pytest.raises(ToolTransitionError, match="cannot roll back to an earlier version"):
        maker.rollback("echo")
    maker.rollback("echo", 2)
    assert maker.active_versions() == {"echo": 2}
    with pytest.raises(ToolTransitionError, match="cannot roll back to v7"):
        maker.rollback("echo", 7)
    with pytest.raises(ToolTransitionError, match="no active version"):
        maker.rollback("other")
    rolled = [e for e in maker.audit_log.events() if e["event"] == "tool_rolled_back"]
    assert [(e["version"], e["data"]["from_version"]) for e in rolled] == [(1, 2), (2, 1)]


def test_code_changed_after_review_is_never_loaded(maker: ToolsmakerRegistry) -> None:
    maker.build_from_intent(ECHO)
    maker.approve("echo", 1)
    code = maker.layout.code("echo", 1)
    code.write_text(code.read_text() + "\nimport os; os.system('id')\n")
    with pytest.raises(ToolPolicyViolation, match="changed after it was reviewed"):
        maker.activate("echo", 1)
    assert maker.active_versions() == {}
    assert maker.record("echo", 1).status is ToolStatus.APPROVED
    event = maker.audit_log.events()[-1]
    assert (event["event"], event["data"]["reason"]) == ("tool_policy_blocked", "integrity")


def test_load_active_skips_tampered_and_missing_tools(
    maker: ToolsmakerRegistry, workspace: Path
) -> None:
    for name in ("one", "two"):
        maker.build_from_intent({**ECHO, "name": name})
        maker.approve(name, 1)
        maker.activate(name, 1)
    maker.layout.code("two", 1).write_text("class GeneratedTool: pass\n")
    maker.layout.active.write_text(json.dumps({"one": 1, "two": 1, "ghost": 3}))
    fresh = ToolsmakerRegistry(maker.layout.root, base_dir=workspace)
    assert [s.name for s in fresh.load_active()] == ["one"]
    assert sorted(fresh.runtime) == ["one"]
    assert fresh.loaded() == {"one": 1}


def test_a_generated_tool_never_replaces_a_static_one(workspace: Path, tmp_path: Path) -> None:
    runtime = ToolRegistry([ToolSpec("echo", lambda a, c: None, description="A static echo.")])
    maker = ToolsmakerRegistry(tmp_path / "tm", runtime=runtime, base_dir=workspace)
    built = maker.build_from_intent(ECHO)
    assert "taken by a tool that is not generated" in built.validation["errors"][0]
    # Even a record written by other means cannot shadow it at activation.
    other = ToolsmakerRegistry(tmp_path / "tm", base_dir=workspace)
    other.build_from_intent({**ECHO, "purpose": "Another echo."})
    other.approve("echo", 2)
    with pytest.raises(ToolBuildError, match="never replaces it"):
        maker.activate("echo", 2)
    assert runtime["echo"].description == "A static echo."
    assert maker.active_versions() == {}  # nothing was marked active either
    assert maker.record("echo", 2).status is ToolStatus.APPROVED
    # What counts is where the tool came from, not what it calls itself.
    runtime.register(
        ToolSpec("dressed", lambda a, c: None, description="Static.", group="generated")
    )
    other.build_from_intent({**ECHO, "name": "dressed"})
    other.approve("dressed", 1)
    with pytest.raises(ToolBuildError, match="never replaces it"):
        maker.activate("dressed", 1)


def test_unknown_tools_and_bad_requests(maker: ToolsmakerRegistry) -> None:
    with pytest.raises(UnknownToolError, match="no generated tool nope; generated tools: none"):
        maker.record("nope")
    with pytest.raises(UnknownToolError, match="no generated tool nope v2"):
        maker.record("nope", 2)
    with pytest.raises(UnknownToolError):
        maker.record("../etc", 1)
    with pytest.raises(ToolBuildError, match="is invalid"):
        maker.build(ToolBuildRequest(name="../x", purpose="p"))
    with pytest.raises(ToolBuildError, match="max_output_chars"):
        maker.activate("echo", 1, max_output_chars=0)
    assert not maker.layout.root.exists()  # nothing was written


def _build_in_process(root: str, base: str, index: int) -> None:
    ToolsmakerRegistry(root, base_dir=base).build_from_intent(
        {"name": "shared", "purpose": f"Variant {index}.", "inputs": {"x": "string"}}
    )


def test_processes_building_at_once_get_distinct_versions_and_one_chain(
    maker: ToolsmakerRegistry, workspace: Path
) -> None:
    context = multiprocessing.get_context("spawn")
    procs = [
        context.Process(target=_build_in_process, args=(str(maker.layout.root), str(workspace), i))
        for i in range(4)
    ]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    assert [r.version for r in maker.records("shared")] == [1, 2, 3, 4]
    assert sorted(r.spec.purpose for r in maker.records("shared")) == [
        f"Variant {i}." for i in range(4)
    ]
    report = maker.verify_audit()
    assert report.ok, report.problems
    assert report.lines == 16


def test_limits_default_and_custom(workspace: Path, tmp_path: Path) -> None:
    maker = ToolsmakerRegistry(tmp_path / "tm", base_dir=workspace)
    assert maker.limits == SandboxLimits()
    assert maker.limits.rlimits()["RLIMIT_CPU"] == [30, 31]
    assert SandboxLimits(cpu_seconds=3).rlimits()["RLIMIT_AS"] == [512 << 20, 512 << 20]


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ai_agent.tools.maker import storage

    target = tmp_path / "tm" / "active_versions.json"
    storage.atomic_write(target, '{"echo": 1}')

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("os.fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        storage.atomic_write(target, '{"echo": 2}')
    assert target.read_text() == '{"echo": 1}'
    assert [p.name for p in target.parent.iterdir()] == ["active_versions.json"]


def test_paths_outside_the_directory_are_kept_whole(tmp_path: Path) -> None:
    from ai_agent.tools.maker.storage import Layout

    layout = Layout(tmp_path / "tm", tmp_path / "logs" / "audit.jsonl")
    assert layout.relative(layout.code("t", 1)) == "generated/t_v1.py"
    assert layout.relative(layout.audit) == str(tmp_path / "logs" / "audit.jsonl")
