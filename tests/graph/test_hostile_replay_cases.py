"""Hostile recorded cases: regression files edited by hand, checked by check_case and ``eval``.

Real SQLite files in tmp_path: a run is made with a scripted model and exported as a case (the
file ``ai-agent test-from-run`` writes), then the case is damaged and checked again. A damaged
case is refused with a ConfigError that says what is wrong, before anything is replayed; a
case that replays differently never counts as the same.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ai_agent import Agent, ToolCategory, ToolSpec
from ai_agent.cli import EXIT, main
from ai_agent.errors import ConfigError
from ai_agent.graph import check_case, export_case
from ai_agent.testing import ScriptedModel
from tests.graph.conftest import MakeAgent, call, text


async def recorded_case(make_agent: MakeAgent, tools: list[Any], script: list[Any]) -> Any:
    async with make_agent(script, tools=tools) as agent:
        done = await agent.run("what is 6*7")
        assert done.status == "completed"
        return await export_case(agent.archive.database, done.thread_id)


def replayer(tmp_path: Path, tools: list[Any], script: list[Any] | None = None) -> Agent:
    return Agent(
        model=ScriptedModel(script or []),
        tools=tools,
        checkpoint_path=tmp_path / "replay.sqlite",
        memory_path=None,
    )


def damaged(case: dict[str, Any], where: list[Any], value: Any) -> dict[str, Any]:
    """A copy of ``case`` with the value at ``where`` replaced (None as the value: removed)."""
    out = copy.deepcopy(case)
    parent = out
    for key in where[:-1]:
        parent = parent[key]
    if value is None:
        del parent[where[-1]]
    else:
        parent[where[-1]] = value
    return out


@pytest.mark.parametrize(
    ("where", "value", "problem"),
    [
        (["expected", "final_text"], None, "its expected final text is neither text nor null"),
        (["expected", "final_text"], ["it is 42"], "neither text nor null"),
        (["expected", "tool_calls"], None, "its expected tool calls are not a list"),
        (["expected", "tool_calls"], "calculator", "its expected tool calls are not a list"),
        (["expected", "tool_calls", 0, "args"], ["6*7"], "its expected tool calls are not"),
        (["expected", "tool_calls", 0], "calculator 6*7", "its expected tool calls are not"),
        (["expected", "status"], 0, "its expected status is not text"),
    ],
)
async def test_a_case_whose_expectation_is_damaged_is_refused_before_it_is_replayed(
    make_agent: MakeAgent, tmp_path: Path, where: list[Any], value: Any, problem: str
) -> None:
    # Checked only after the whole replay, these failed with a KeyError or a TypeError (and
    # `ai-agent eval` stopped at the case with an "internal error", the other cases unreported).
    script = [call("calculator", expression="6*7"), text("it is 42")]
    case = await recorded_case(make_agent, ["calculator"], script)
    async with replayer(tmp_path, ["calculator"]) as agent:
        with pytest.raises(ConfigError) as caught:
            await check_case(agent, damaged(case, where, value))
    assert problem in str(caught.value)
    assert "write it again with `ai-agent test-from-run`" in str(caught.value)


def test_eval_names_a_case_whose_expectation_is_damaged_and_replays_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.cli.scripts import stored_calculation

    db, _ = stored_calculation(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["test-from-run", "t1", "--db", str(db), "--out", "cases/test_ok.py"]) == 0
    good = tmp_path / "cases" / "test_ok.recording.json"
    case = json.loads(good.read_text(encoding="utf-8"))
    del case["expected"]["final_text"]
    (tmp_path / "cases" / "test_bad.recording.json").write_text(json.dumps(case))
    capsys.readouterr()
    assert main(["eval", "cases"]) == EXIT["usage"]
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("test_bad: cannot be replayed: the recorded case of run 't1'")
    assert "expected final text" in out[0]
    assert out[1:] == ["test_ok: same", "1 of 2 case(s) the same"]


def counter(log: list[Any]) -> ToolSpec:
    """A tool that takes any ``n`` and says what it got."""

    def count(args: dict[str, Any], ctx: dict[str, Any]) -> dict[str, Any]:
        log.append(args)
        return {"status": "ok", "content": f"counted {args['n']!r}"}

    return ToolSpec(
        "count",
        count,
        description="Count.",
        category=ToolCategory.READ_ONLY,
        parameters={"type": "object", "properties": {"n": {}}},
    )


async def test_a_live_case_whose_model_now_passes_true_for_1_is_not_the_same(
    make_agent: MakeAgent, tmp_path: Path
) -> None:
    # Python's == says {"n": 1} == {"n": True}; the tool is given true, not 1, and a live eval
    # said the new model made "the same tool calls with the same arguments".
    log: list[Any] = []
    case = await recorded_case(make_agent, [counter(log)], [call("count", n=1), text("done")])
    live = [call("count", n=True), text("done")]
    async with replayer(tmp_path, [counter(log)], live) as agent:
        result = await check_case(agent, case, live=True)
    assert log[-1] == {"n": True}  # the live replay ran the tool with the new argument
    assert not result.same
    assert result.where == "tool call 1 differs"
    assert '-count {"n": 1}' in result.detail
    assert '+count {"n": true}' in result.detail


def test_test_from_run_writes_utf_8_files_whatever_the_locale(tmp_path: Path) -> None:
    # The test and its recording were written in the locale's encoding: under LANG=C (ASCII)
    # an answer with "café" failed with an internal UnicodeEncodeError, after the recording had
    # been half written; under cp1252 they were written in a code page that pytest and
    # `read_case` (both UTF-8) cannot read back.
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "Voilà: café."}]), encoding="utf-8")
    db = str(tmp_path / "runs.sqlite")
    run = ["run", "say café", "--model", f"scripted:{script}", "--db", db, "--thread-id", "t1"]
    assert main([*run, "--quiet"]) == EXIT["completed"]
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    made = subprocess.run(
        [sys.executable, "-m", "ai_agent.cli", "test-from-run", "t1", "--db", db, "--out", "t.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert made.returncode == 0, made.stderr
    assert "Voilà: café." in (tmp_path / "t.py").read_text(encoding="utf-8")
    recording = json.loads((tmp_path / "t.recording.json").read_text(encoding="utf-8"))
    assert recording["expected"]["final_text"] == "Voilà: café."
