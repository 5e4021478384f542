"""The toolsmaker on the Agent: the spec's methods, propose_tool in whole runs, resumes, rollback.

Runs use the scripted and function models with real checkpoints in ``tmp_path``; generated tools
run in real sandboxes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ai_agent import Agent, ToolCategory, UserPlan, tool
from ai_agent.config import AgentSettings
from ai_agent.errors import ConfigError, SandboxUnavailableError, ToolTransitionError
from ai_agent.testing import FunctionModel, ScriptedModel
from ai_agent.tools.maker import ToolStatus
from tests.maker.conftest import SHOUT

PROPOSAL: dict[str, Any] = {
    "name": "shout",
    "purpose": "Upper-case a text.",
    "inputs": {"text": "string"},
    "code": SHOUT,
}


def call(tool_name: str, /, **args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool_name, "args": args}]}


def make(tmp_path: Path, turns: list[Any] | None = None, **kwargs: Any) -> Agent:
    kwargs.setdefault("model", ScriptedModel(turns or [{"text": "done"}]))
    kwargs.setdefault("checkpoint_path", tmp_path / "runs" / "checkpoints.sqlite")
    kwargs.setdefault("memory_path", None)
    kwargs.setdefault("settings", AgentSettings())
    kwargs.setdefault("toolsmaker_dir", tmp_path / "tm")
    return Agent(**kwargs)


def events(agent: Agent) -> list[tuple[str, str | None, int | None]]:
    return [(e["event"], e["tool"], e["version"]) for e in agent.toolsmaker.audit_log.events()]


async def test_a_proposal_pauses_with_its_review_and_the_approving_plan_activates_it(
    tmp_path: Path,
) -> None:
    seen: list[list[str]] = []

    def reply(messages: list[dict[str, Any]], info: dict[str, Any]) -> dict[str, Any]:
        seen.append(sorted(t["function"]["name"] for t in info["tools"]))
        if info["turn"] == 0:
            return call("propose_tool", **PROPOSAL)
        if info["turn"] == 1:
            return call("shout", text="hi")
        return {"text": f"the tool said {messages[-1]['content']}"}

    agent = make(tmp_path, model=FunctionModel(reply), tools=["propose_tool"])
    paused = await agent.run("make a shout tool, then shout hi")
    assert paused.status == "paused" and paused.gate is not None
    pending = paused.gate["pending"][0]
    assert pending["call"]["name"] == "propose_tool"
    assert pending["blocked"] == "APPROVAL_REQUIRED"
    preview = pending["preview"]
    review_path = Path(preview.split("review artifact (diff, validation report): ")[1].split()[0])
    review = json.loads(review_path.read_text())
    assert review["name"] == "shout" and review["version"] == 1
    assert review["summary"].startswith("shout v1 (medium risk, code written by the requester)")
    assert "+        return text.upper()" in review["diff"]
    assert review["validation"]["ok"] is True
    assert Path(review["code_path"]).read_text() == SHOUT
    assert "Approving this call approves shout v1 and activates it from the next cycle" in preview
    assert preview.endswith(review["diff"].rstrip("\n"))  # the diff is at the gate too
    assert agent.toolsmaker.record("shout", 1).status is ToolStatus.APPROVAL_REQUIRED
    assert "shout" not in agent.registry  # nothing runs before a person approves

    done = await agent.resume(paused.thread_id, UserPlan(approve=["*"]))
    assert done.status == "completed", done.final_text
    assert done.final_text == "the tool said HI"
    assert seen[0] == ["propose_tool"]
    assert seen[1] == ["propose_tool", "shout"]  # active from the next cycle
    state = await agent.get_state(done.thread_id)
    assert state["active_tools"] == ["propose_tool", "shout"]
    record = agent.toolsmaker.record("shout", 1)
    assert record.status is ToolStatus.ACTIVATED
    assert [h["status"] for h in record.history] == [
        "draft",
        "validated",
        "approval_required",
        "approved",
        "activated",
    ]
    assert record.history[-1]["by"].startswith(f"plan (run {done.thread_id}, call ")
    assert agent.toolsmaker.active_versions() == {"shout": 1}
    assert [e for e, _, _ in events(agent)] == [
        "tool_build_requested",
        "tool_build_generated",
        "tool_build_validated",
        "tool_approval_required",
        "tool_approved",
        "tool_activated",
    ]
    assert agent.toolsmaker.verify_audit().ok
    result = state["results"][-1]
    assert result["result"]["meta"]["sandboxed"] is True


async def test_the_proposal_survives_a_resume_in_another_agent(tmp_path: Path) -> None:
    turns = [call("propose_tool", **PROPOSAL), call("shout", text="x"), {"text": "done"}]
    first = make(tmp_path, turns, tools=["propose_tool"])
    paused = await first.run("propose")
    assert paused.status == "paused"
    # Another process: a new Agent on the same checkpoints and toolsmaker directory.
    second = make(tmp_path, turns, tools=["propose_tool"])
    done = await second.resume(paused.thread_id, UserPlan(approve=["*"]))
    assert done.status == "completed"
    assert [r.version for r in second.toolsmaker.records("shout")] == [1]  # reused, not rebuilt
    assert second.toolsmaker.active_versions() == {"shout": 1}
    # A third Agent has the active version in its catalog, active where selected.
    third = make(tmp_path)
    assert "shout" in third.registry and "shout" not in third.initial_tools
    assert third.registry["shout"].group == "generated"
    assert make(tmp_path, tools=["shout"]).initial_tools == ["shout"]
    assert make(tmp_path, tools=["generated"]).initial_tools == ["shout"]


async def test_an_activated_generated_tool_is_selected_like_any_other(tmp_path: Path) -> None:
    maker = make(tmp_path)
    maker.build_dynamic_tool_from_intent(PROPOSAL)
    maker.approve_dynamic_tool("shout", 1)
    maker.activate_tool_version("shout", 1)
    # Selected by name: active in that Agent's runs; the model calls it and it runs.
    chosen = make(tmp_path, [call("shout", text="hi"), {"text": "done"}], tools=["shout"])
    done = await chosen.run("shout hi")
    assert done.status == "completed"
    assert (await chosen.get_state(done.thread_id))["results"][0]["result"]["content"] == "HI"
    # Not selected: in the catalog (a plan may activate it) but not active in the run.
    other = make(tmp_path, [call("shout", text="hi"), {"text": "done"}], tools=["calculator"])
    paused = await other.run("shout hi")
    assert paused.gate is not None
    assert [i["code"] for i in paused.gate["issues"]] == ["TOOL_MISSING"]


async def test_a_denied_proposal_stays_waiting_for_review(tmp_path: Path) -> None:
    turns = [call("propose_tool", **PROPOSAL), {"text": "ok, no tool"}]
    agent = make(tmp_path, turns, tools=["propose_tool"])
    paused = await agent.run("propose")
    done = await agent.resume(paused.thread_id, UserPlan(deny=["*"]))
    assert done.status == "completed"
    assert [r.version for r in agent.toolsmaker.pending()] == [1]
    assert agent.toolsmaker.active_versions() == {}
    assert "shout" not in agent.registry


async def test_unattended_runs_build_but_never_approve(tmp_path: Path) -> None:
    turns = [call("propose_tool", **PROPOSAL), {"text": "built"}]
    agent = make(tmp_path, turns, tools=["propose_tool"], unattended=True)
    result = await agent.run("propose")
    assert result.status == "completed"
    state = await agent.get_state(result.thread_id)
    assert "waits for a person's review" in state["results"][0]["result"]["content"]
    assert agent.toolsmaker.record("shout", 1).status is ToolStatus.APPROVAL_REQUIRED
    assert "shout" not in agent.registry


async def test_a_proposal_that_fails_validation_activates_nothing(tmp_path: Path) -> None:
    bad = {
        **PROPOSAL,
        "code": "import subprocess\nclass GeneratedTool:\n    def execute(self, text):\n"
        "        return subprocess.run(['id']).returncode\n",
    }
    turns = [call("propose_tool", **bad), {"text": "gave up"}]
    agent = make(tmp_path, turns, tools=["propose_tool"])
    paused = await agent.run("propose")
    preview = paused.gate["pending"][0]["preview"] if paused.gate else ""
    assert "failed validation" in preview and "import of 'subprocess' is forbidden" in preview
    done = await agent.resume(paused.thread_id, UserPlan(approve=["*"]))
    state = await agent.get_state(done.thread_id)
    result = state["results"][0]["result"]
    assert result["status"] == "error" and result["meta"]["code"] == "VALIDATION_FAILED"
    assert agent.toolsmaker.record("shout", 1).status is ToolStatus.DRAFT
    assert agent.toolsmaker.active_versions() == {}


async def test_a_proposal_that_is_not_an_intent_is_refused_plainly(tmp_path: Path) -> None:
    turns = [call("propose_tool", name="1bad", purpose="x"), {"text": "ok"}]
    agent = make(tmp_path, turns, tools=["propose_tool"])
    paused = await agent.run("propose")
    assert paused.gate is not None
    assert "cannot build this tool" in paused.gate["pending"][0]["preview"]
    done = await agent.resume(paused.thread_id, UserPlan(approve=["*"]))
    state = await agent.get_state(done.thread_id)
    assert state["results"][0]["result"]["meta"]["code"] == "BAD_ARGUMENTS"


async def test_proposing_an_activated_version_again_makes_it_active(tmp_path: Path) -> None:
    agent = make(tmp_path, tools=["propose_tool"])
    lower = {**PROPOSAL, "code": SHOUT.replace("upper", "lower")}
    for intent in (PROPOSAL, lower):
        built = agent.build_dynamic_tool_from_intent(intent)
        agent.approve_dynamic_tool("shout", built.spec.version)
        agent.activate_tool_version("shout", built.spec.version)
    agent.rollback_tool("shout")
    assert agent.toolsmaker.active_versions() == {"shout": 1}
    # The model proposes exactly v2 again: the same build, already reviewed and activated once.
    turns = [call("propose_tool", **lower), call("shout", text="Hi"), {"text": "done"}]
    agent = make(tmp_path, turns, tools=["propose_tool"])
    paused = await agent.run("the newer one was better")
    assert paused.gate is not None and "shout v2" in paused.gate["pending"][0]["preview"]
    done = await agent.resume(paused.thread_id, UserPlan(approve=["*"]))
    assert done.status == "completed"
    assert agent.toolsmaker.active_versions() == {"shout": 2}
    assert [r.version for r in agent.toolsmaker.records("shout")] == [1, 2]
    state = await agent.get_state(done.thread_id)
    assert state["results"][-1]["result"]["content"] == "hi"
    assert [e for e, _, v in events(agent)][-1] == "tool_rolled_back"


async def test_generated_tools_in_runs_follow_the_engines_oversight(tmp_path: Path) -> None:
    agent = make(tmp_path)
    for intent in (
        PROPOSAL,
        {
            "name": "fetch",
            "purpose": "Fetch a page.",
            "capabilities": ["http"],
            "allowed_domains": ["example.com"],
        },
        {
            "name": "keyed",
            "purpose": "Uses a key.",
            "capabilities": ["secrets"],
            "secrets": ["KEYED_TOKEN"],
        },
    ):
        built = agent.build_dynamic_tool_from_intent(intent)
        agent.approve_dynamic_tool(built.spec.name, 1)
        agent.activate_tool_version(built.spec.name, 1)
    listing = {t["name"]: t for t in agent.list_tools()}
    assert listing["shout"]["category"] == "read_only" and listing["shout"]["group"] == "generated"
    assert listing["fetch"]["category"] == "external"
    assert listing["keyed"]["category"] == "modification"
    turns = [call("keyed"), {"text": "done"}]
    runner = make(tmp_path, turns, tools=["keyed"])
    paused = await runner.run("use the key")
    assert paused.gate is not None
    assert paused.gate["pending"][0]["blocked"] == "MISSING_ENV"


async def test_a_policy_violation_in_a_run_is_a_tool_error_at_the_gate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ai_agent.tools.maker import ValidationReport
    from ai_agent.tools.maker import registry as registry_module

    monkeypatch.setattr(registry_module, "validate_code", lambda *a, **k: ValidationReport())
    agent = make(tmp_path)
    code = "import os\nclass GeneratedTool:\n    def execute(self):\n        os.fork()\n"
    agent.build_dynamic_tool_from_intent({"name": "forker", "purpose": "Forks.", "code": code})
    agent.approve_dynamic_tool("forker", 1)
    agent.activate_tool_version("forker", 1)
    runner = make(tmp_path, [call("forker"), {"text": "done"}], tools=["forker"])
    paused = await runner.run("fork")
    assert paused.status == "paused" and paused.gate is not None
    issue = paused.gate["issues"][0]
    assert issue["code"] == "TOOL_ERROR"
    assert "forbidden_syscall" in issue["message"]
    state = await runner.get_state(paused.thread_id)
    assert state["results"][0]["result"]["meta"]["code"] == "POLICY_VIOLATION"
    assert events(runner)[-1] == ("tool_policy_blocked", "forker", 1)


async def test_without_bubblewrap_a_generated_tool_refuses_to_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = make(tmp_path)
    agent.build_dynamic_tool_from_intent(PROPOSAL)
    agent.approve_dynamic_tool("shout", 1)
    agent.activate_tool_version("shout", 1)
    monkeypatch.setenv("PATH", str(tmp_path / "no-bwrap-here"))
    with pytest.raises(SandboxUnavailableError, match="install the Debian package 'bubblewrap'"):
        await agent.registry["shout"].fn({"text": "x"}, {})
    runner = make(tmp_path, [call("shout", text="x"), {"text": "done"}], tools=["generated"])
    paused = await runner.run("shout")
    assert paused.gate is not None
    issue = paused.gate["issues"][0]
    assert issue["code"] == "TOOL_ERROR" and "bubblewrap" in issue["message"]
    state = await runner.get_state(paused.thread_id)
    assert state["results"][0]["result"]["meta"]["code"] == "SANDBOX_UNAVAILABLE"


@tool(category=ToolCategory.READ_ONLY)
def count(text: str) -> int:
    """Count the words of a text.

    Args:
        text: The text.
    """
    return len(text.split())


def test_the_spec_methods_on_the_agent(tmp_path: Path) -> None:
    audit = tmp_path / "logs" / "toolsmaker.jsonl"
    agent = make(tmp_path, toolsmaker_audit_path=audit, tools=["calculator"])
    assert agent.toolsmaker_dir == tmp_path / "tm" and agent.toolsmaker_audit_path == audit
    # The tool lifecycle: static tools and generated ones share the runtime registry.
    assert agent.set_tools("calculator, read_file") == ["calculator", "read_file"]
    assert agent.set_tools([count, "calculator"]) == ["count", "calculator"]
    with pytest.raises(ConfigError):
        agent.set_tools(["no_such_tool"])
    with pytest.raises(ConfigError):
        agent.set_tools([42])
    agent.set_tools(["calculator"])
    assert agent.add_tool(count, replace=True).name == "count"
    assert agent.initial_tools == ["calculator", "count"]
    # The toolsmaker flow, by the spec's names.
    request = agent.create_tool_build_request_from_intent(PROPOSAL)
    built = agent.build_dynamic_tool(request)
    assert built.ok and built.spec.version == 1 and Path(built.review_path or "").exists()
    again = agent.build_dynamic_tool_from_intent({**PROPOSAL, "purpose": "Shout it."})
    assert again.spec.version == 2
    rejected = agent.reject_dynamic_tool("shout", 2, reason="one is enough")
    assert rejected.status is ToolStatus.REJECTED
    assert rejected.history[-1]["reason"] == "one is enough"
    with pytest.raises(ToolTransitionError):
        agent.approve_dynamic_tool("shout", 2)
    agent.approve_dynamic_tool("shout", 1)
    spec = agent.activate_tool_version("shout", 1, max_output_chars=3)
    assert spec.name == "shout" and "shout" in agent.initial_tools
    assert {t["name"] for t in agent.list_tools()} >= {"shout", "count", "calculator"}
    assert agent.toolsmaker.record("shout", 1).max_output_chars == 3
    assert audit.exists() and not (tmp_path / "tm" / "audit.jsonl").exists()
    # A third version, then back.
    third = agent.build_dynamic_tool_from_intent({**PROPOSAL, "purpose": "Shout louder."})
    agent.approve_dynamic_tool("shout", third.spec.version)
    agent.activate_tool_version("shout", third.spec.version)
    assert agent.rollback_tool("shout").name == "shout"
    assert agent.toolsmaker.active_versions() == {"shout": 1}
    removed = agent.remove_tool("shout")
    assert removed.name == "shout" and "shout" not in agent.registry
    assert agent.toolsmaker.active_versions() == {"shout": 1}  # only this Agent forgot it


async def test_max_output_chars_of_an_activation_clips_the_result(tmp_path: Path) -> None:
    agent = make(tmp_path)
    agent.build_dynamic_tool_from_intent(PROPOSAL)
    agent.approve_dynamic_tool("shout", 1)
    spec = agent.activate_tool_version("shout", 1, max_output_chars=4)
    result = await spec.fn({"text": "abcdefgh"}, {})
    assert isinstance(result, dict)
    assert result["content"].startswith("ABCD\n[... clipped: 4 more characters]")


def test_settings_configure_the_toolsmaker(tmp_path: Path) -> None:
    settings = AgentSettings.model_validate(
        {
            "tool_config": {
                "toolsmaker": {
                    "dir": str(tmp_path / "from-settings"),
                    "timeout": 7,
                    "memory_mb": 128,
                    "max_output_bytes": 5000,
                }
            }
        }
    )
    agent = Agent(
        model=ScriptedModel([{"text": "x"}]),
        checkpoint_path=":memory:",
        memory_path=None,
        settings=settings,
    )
    assert agent.toolsmaker_dir == tmp_path / "from-settings"
    assert agent.toolsmaker_audit_path == tmp_path / "from-settings" / "audit.jsonl"
    limits = agent.toolsmaker.limits
    assert (limits.timeout, limits.memory_mb, limits.max_output_bytes) == (7, 128, 5000)
    assert agent.toolsmaker.layout.root == tmp_path / "from-settings"


def test_a_user_tool_named_propose_tool_is_left_alone(tmp_path: Path) -> None:
    @tool(category=ToolCategory.READ_ONLY)
    def propose_tool(name: str) -> str:
        """My own proposer.

        Args:
            name: A name.
        """
        return name

    agent = make(tmp_path, tools=[propose_tool])
    assert agent.registry["propose_tool"].description.startswith("My own proposer")


async def test_a_tool_wide_grant_does_not_cover_the_next_proposal(tmp_path: Path) -> None:
    second = {**PROPOSAL, "name": "whisper", "code": SHOUT.replace("upper", "lower")}
    turns = [call("propose_tool", **PROPOSAL), call("propose_tool", **second), {"text": "done"}]
    agent = make(tmp_path, turns, tools=["propose_tool"])
    paused = await agent.run("two tools")
    again = await agent.resume(paused.thread_id, UserPlan(approve=["*"], grant_scope="tool"))
    assert again.status == "paused" and again.gate is not None
    assert again.gate["pending"][0]["preview"].startswith("whisper v1")
    assert agent.toolsmaker.active_versions() == {"shout": 1}
    done = await agent.resume(again.thread_id, UserPlan(approve=["*"]))
    assert done.status == "completed"
    assert agent.toolsmaker.active_versions() == {"shout": 1, "whisper": 1}
