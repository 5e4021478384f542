"""A build's examples run as real calls of the tool (bubblewrap, limits, scrubbing) and are kept.

Every test here builds through `ToolsmakerRegistry.build_from_intent` and reads the record, the
review artifact and the audit log it wrote; the sandbox is the real one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ai_agent.tools.maker import SandboxLimits, ToolsmakerRegistry, ToolStatus
from ai_agent.tools.maker.examples import MAX_TESTS, check_tests, judge
from ai_agent.tools.maker.trials import MAX_SHOWN, NO_TESTS
from tests.maker.conftest import tool_code

COUNT = tool_code(
    """
    text = kwargs["text"]
    if text == "boom":
        raise ValueError("no boom please")
    if text == "hang":
        while True:
            pass
    return {"words": len(text.split()), "shout": text.upper()}
    """
)
EXAMPLES: list[dict[str, Any]] = [
    {"args": {"text": "a b"}, "expect": {"words": 2}},
    {"args": {"text": "a"}, "expect": {"words": 2}},
    {"args": {"text": "boom"}, "expect_error": "no boom"},
    {"args": {"text": "hang"}, "expect": {"words": 1}},
]


def _intent(**more: Any) -> dict[str, Any]:
    return {
        "name": "count",
        "purpose": "Count words.",
        "inputs": {"text": "string"},
        "code": COUNT,
        **more,
    }


def _tested(maker: ToolsmakerRegistry) -> list[dict[str, Any]]:
    return [e for e in maker.audit_log.events() if e["event"] == "tool_build_tested"]


def test_examples_pass_fail_expect_errors_and_time_out_in_the_sandbox(
    maker: ToolsmakerRegistry,
) -> None:
    maker.limits = SandboxLimits(timeout=2, cpu_seconds=60)  # the wall clock ends the hang
    built = maker.build_from_intent(_intent(tests=EXAMPLES))
    assert built.status is ToolStatus.APPROVAL_REQUIRED  # failures do not block: a person decides
    tests = maker.record("count", 1).tests
    assert tests is not None
    assert tests["summary"] == "2 of 4 passed; 2 FAILED"
    assert (tests["given"], tests["passed"], tests["failed"], tests["not_run"]) == (4, 2, 2, 0)
    by_number = {e["test"]: e for e in tests["results"]}
    assert [e["test"] for e in tests["results"]] == [2, 4, 1, 3]  # failures first
    assert by_number[1]["status"] == "passed"
    assert json.loads(by_number[1]["output"]) == {"words": 2, "shout": "A B"}
    assert by_number[2]["status"] == "failed"
    assert by_number[2]["problem"] == "field words: expected 2, got 1"
    assert by_number[3] | {"seconds": 0} == {
        "test": 3,
        "args": {"text": "boom"},
        "expect_error": "no boom",
        "status": "passed",
        "outcome": "error",
        "code": "TOOL_EXCEPTION",
        "error": "count v1: ValueError: no boom please",
        "seconds": 0,
    }
    hang = by_number[4]
    assert hang["status"] == "failed" and hang["code"] == "TIMEOUT"
    assert "did not finish within 2" in hang["error"] and hang["problem"].startswith("it failed")
    assert all(isinstance(e["seconds"], float) for e in tests["results"])

    # The review artifact and its summary carry them; the audit chain holds the event.
    review = maker.review("count", 1)
    assert review["tests"] == tests
    assert "tests: 2 of 4 passed; 2 FAILED" in review["summary"]
    assert "  test 2 FAILED: field words: expected 2, got 1" in review["summary"]
    (event,) = _tested(maker)
    assert event["tool"] == "count" and event["version"] == 1
    data = event["data"]
    assert (data["passed"], data["failed"], data["not_run"]) == (2, 2, 0)
    assert [(r["test"], r["status"]) for r in data["results"]] == [
        (2, "failed"),
        (4, "failed"),
        (1, "passed"),
        (3, "passed"),
    ]
    names = [e["event"] for e in maker.audit_log.events()]
    # The hang was stopped as any call is: a tool_policy_blocked event, then the results.
    assert names.index("tool_policy_blocked") < names.index("tool_build_tested")
    assert names[-1] == "tool_approval_required"
    assert maker.verify_audit().ok
    assert maker.approve("count", 1).status is ToolStatus.APPROVED


def test_without_examples_the_record_says_no_tests_given(maker: ToolsmakerRegistry) -> None:
    maker.build_from_intent(_intent())
    tests = maker.record("count", 1).tests
    assert tests == {
        "summary": NO_TESTS,
        "given": 0,
        "passed": 0,
        "failed": 0,
        "not_run": 0,
        "results": [],
    }
    assert "tests: no tests given" in maker.review("count", 1)["summary"]
    assert _tested(maker) == []


def test_hostile_output_is_kept_as_cut_text(maker: ToolsmakerRegistry) -> None:
    noisy = tool_code('return "</pre><script>alert(1)</script>\\x1b[2K" + "x" * 50000')
    maker.build_from_intent(
        {
            "name": "noisy",
            "purpose": "Print a lot.",
            "code": noisy,
            "tests": [{"args": {}, "expect": {"a": 1}}],
        }
    )
    tests = maker.record("noisy", 1).tests
    assert tests is not None
    (entry,) = tests["results"]
    assert entry["status"] == "failed"
    assert entry["problem"].startswith("the result is not an object with fields but str")
    assert entry["output"].startswith("</pre><script>alert(1)</script>\x1b[2K")
    assert len(entry["output"]) < MAX_SHOWN + 60
    assert entry["output"].endswith("more characters]")


def test_declared_secrets_are_scrubbed_from_the_results(
    maker: ToolsmakerRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRIAL_TOKEN", "sekret-7f3a-value")
    leaky = tool_code('return {"token": self.secrets["TRIAL_TOKEN"]}')
    maker.build_from_intent(
        {
            "name": "leaky",
            "purpose": "Say the token.",
            "code": leaky,
            "capabilities": ["secrets"],
            "secrets": ["TRIAL_TOKEN"],
            "tests": [{"args": {}, "expect": {"token": "guess"}}],
        }
    )
    assert "sekret-7f3a-value" not in maker.layout.record("leaky", 1).read_text()
    assert "sekret-7f3a-value" not in maker.layout.audit.read_text()
    tests = maker.record("leaky", 1).tests
    assert tests is not None
    (entry,) = tests["results"]
    assert "sekret-7f3a-value" not in entry["output"]
    assert entry["status"] == "failed"


def test_without_bubblewrap_nothing_runs_and_the_record_says_so(
    maker: ToolsmakerRegistry, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "out").mkdir()
    writer = tool_code('open("out/ran.txt", "w").write("ran")\nreturn {"ok": True}')
    monkeypatch.setenv("PATH", str(tmp_path / "no-bwrap-here"))
    built = maker.build_from_intent(
        {
            "name": "writer",
            "purpose": "Write a marker.",
            "code": writer,
            "capabilities": ["fs_write"],
            "allowed_paths": ["out"],
            "tests": [{"args": {}, "expect": {"ok": True}}, {"args": {}, "expect_error": "x"}],
        }
    )
    assert built.status is ToolStatus.APPROVAL_REQUIRED
    assert not (workspace / "out" / "ran.txt").exists()  # never run unconfined
    tests = maker.record("writer", 1).tests
    assert tests is not None
    assert (tests["not_run"], tests["passed"], tests["failed"]) == (2, 0, 0)
    assert tests["summary"].startswith("2 of 2 NOT RUN: ")
    assert "bubblewrap" in tests["summary"]
    first, second = tests["results"]
    assert (first["status"], second["status"]) == ("not_run", "not_run")
    assert first["expect"] == {"ok": True} and "expect_error" not in first
    assert second["expect_error"] == "x" and "expect" not in second  # each keeps its own
    assert "bubblewrap" in second["error"] and second["seconds"] == 0.0
    assert _tested(maker)[0]["data"]["not_run"] == 2
    assert "tests: 2 of 2 NOT RUN" in maker.review("writer", 1)["summary"]


def test_arguments_outside_the_schema_fail_as_a_real_call_would(
    maker: ToolsmakerRegistry,
) -> None:
    maker.build_from_intent(_intent(tests=[{"args": {"txt": "a"}, "expect": {"words": 1}}]))
    tests = maker.record("count", 1).tests
    assert tests is not None
    (entry,) = tests["results"]
    assert entry["status"] == "failed" and entry["outcome"] == "error"
    assert "txt" in entry["error"]


async def test_a_build_inside_a_running_event_loop_runs_its_examples(
    maker: ToolsmakerRegistry,
) -> None:
    # propose_tool builds from inside a run's loop: the examples get a loop of their own.
    maker.build_from_intent(_intent(tests=EXAMPLES[:1]))
    tests = maker.record("count", 1).tests
    assert tests is not None and tests["summary"] == "1 of 1 passed"


def test_other_examples_make_a_new_version_the_same_ones_reuse_it(
    maker: ToolsmakerRegistry,
) -> None:
    first = maker.build_from_intent(_intent(tests=EXAMPLES[:1]))
    again = maker.build_from_intent(_intent(tests=EXAMPLES[:1]))
    other = maker.build_from_intent(_intent(tests=EXAMPLES[:2]))
    assert (first.spec.version, again.spec.version, other.spec.version) == (1, 1, 2)
    assert again.reused and not other.reused


@pytest.mark.parametrize(
    ("tests", "message"),
    [
        ("run it", "tests must be a list of examples"),
        (
            [{"args": {}, "expect": {"a": 1}}] * (MAX_TESTS + 1),
            f"tests: at most {MAX_TESTS} examples",
        ),
        (["x"], "tests[1]: an example is an object"),
        ([{"args": {}, "expect": {"a": 1}, "run": "rm"}], "tests[1]: unknown key(s) run"),
        ([{"args": {}, "expect": {"a": 1}, "expect_error": "e"}], "not both"),
        ([{"args": {}}], "tests[1]: say what should happen"),
        ([{"args": [], "expect": {"a": 1}}], "tests[1]: args must be an object"),
        ([{"args": {}, "expect": {}}], "expect must be an object of the result's fields"),
        ([{"args": {}, "expect_error": ""}], "expect_error must be a text"),
        ([{"args": {}, "expect_error": "e" * 501}], "expect_error is longer than 500"),
        ([{"args": {"t": "x" * 5000}, "expect": {"a": 1}}], "characters as JSON; at most 4000"),
        ([{"args": {"t": {1, 2}}, "expect": {"a": 1}}], "tests[1]: it is not JSON data"),
        ([{"args": {"t": float("nan")}, "expect": {"a": 1}}], "it is not JSON data"),
    ],
)
def test_hostile_examples_are_refused_with_the_field_named(
    maker: ToolsmakerRegistry, tests: Any, message: str
) -> None:
    problems = check_tests(tests)
    assert any(message in p for p in problems), problems
    assert all(p.startswith("tests") for p in problems)
    if not isinstance(tests, list) or all(isinstance(t, dict) for t in tests):
        json_safe = not any("JSON" in p for p in problems)
        if json_safe:  # what cannot be stored as JSON is refused before the registry
            built = maker.build_from_intent(_intent(tests=tests))
            assert built.status is ToolStatus.DRAFT
            assert any(message in e for e in built.validation["errors"])


def test_deeply_nested_examples_are_refused() -> None:
    deep: Any = {}
    for _ in range(5000):
        deep = {"a": deep}
    assert check_tests([{"args": deep, "expect": {"a": 1}}]) == [
        "tests[1]: it is nested too deeply"
    ]


@pytest.mark.parametrize(
    ("test", "result", "problem"),
    [
        ({"expect": {"n": 1}}, {"status": "ok", "content": '{"n": 1}'}, None),
        ({"expect": {"n": 1}}, {"status": "ok", "content": "[1]"}, "not an object"),
        ({"expect": {"n": 1}}, {"status": "ok", "content": {}}, "field n: missing"),
        ({"expect": {"n": 1}}, {"status": "error", "error": "bad"}, "it failed: bad"),
        ({"expect_error": "bad"}, {"status": "ok", "content": 1}, "it succeeded; expected"),
        ({"expect_error": "bad"}, {"status": "error", "error": "worse"}, "does not contain"),
        ({"expect_error": "bad"}, {"status": "error", "error": "so bad"}, None),
    ],
)
def test_judging_a_result(
    test: dict[str, Any], result: dict[str, Any], problem: str | None
) -> None:
    found = judge({"args": {}, **test}, result)
    assert found == problem if problem is None else problem in str(found)


async def test_a_models_proposal_with_examples_runs_nothing(
    tmp_path: Path, workspace: Path
) -> None:
    from ai_agent import Agent
    from ai_agent.config import AgentSettings
    from ai_agent.testing import ScriptedModel

    marker = workspace / "out" / "ran.txt"
    marker.parent.mkdir()
    proposal = {
        "name": "writer",
        "purpose": "Write a marker.",
        "capabilities": ["fs_write"],
        "allowed_paths": ["out"],
        "code": tool_code('open("out/ran.txt", "w").write("ran")\nreturn {"ok": True}'),
        "tests": [{"args": {}, "expect": {"ok": True}}],
    }
    agent = Agent(
        model=ScriptedModel(
            [{"tool_calls": [{"name": "propose_tool", "args": proposal}]}, {"text": "ok"}]
        ),
        tools=["propose_tool"],
        checkpoint_path=tmp_path / "c.sqlite",
        memory_path=None,
        settings=AgentSettings(),
        toolsmaker_dir=tmp_path / "tm",
    )
    done = await agent.run("make a writer")
    assert done.status == "completed"
    state = await agent.get_state(done.thread_id)
    assert state["results"][0]["result"]["status"] == "error"  # its schema has no tests
    # Its preview (which builds) refuses them too, whatever reaches it.
    preview = agent.registry["propose_tool"].preview
    assert preview is not None
    assert "propose_tool takes no tests: examples run the code before anyone" in preview(proposal)
    assert not marker.exists()
    assert agent.toolsmaker.records() == []


def test_stored_results_that_are_not_results_are_said_unreadable(
    maker: ToolsmakerRegistry,
) -> None:
    from ai_agent.tools.maker import BuildRecord

    maker.build_from_intent(_intent())
    data = json.loads(maker.layout.record("count", 1).read_text())
    for odd in ("all passed", {"summary": "fine"}, {"results": [1]}):
        record = BuildRecord.from_json({**data, "tests": odd})
        assert record.tests is not None and record.tests["results"] == []
        assert record.tests["summary"].startswith("the stored test results are unreadable")
    assert BuildRecord.from_json({**data, "tests": None}).tests is None
    assert BuildRecord.from_json(data).tests == maker.record("count", 1).tests
