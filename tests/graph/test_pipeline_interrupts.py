"""``interrupt()`` in a node of your pipeline pauses the run like the gate; resume answers it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langgraph.types import interrupt
from typing_extensions import TypedDict

from ai_agent import PipelineBuilder, UserPlan
from ai_agent.cli import main
from ai_agent.errors import InvalidPlanError
from ai_agent.events import NodePaused
from tests.graph.conftest import MakeAgent

MODULE = """
from langgraph.types import interrupt
from typing_extensions import TypedDict

from ai_agent import PipelineBuilder


class Confirmed(TypedDict, total=False):
    confirmed: str


def confirm(state):
    answer = interrupt({"question": "publish " + state["task"] + "?"})
    return {"confirmed": answer, "final_text": "published: " + str(answer)}


pipeline = PipelineBuilder(state=Confirmed).add_node("confirm", confirm, after="finalize")
"""


class Confirmed(TypedDict, total=False):
    confirmed: Any


def confirm(state: dict[str, Any]) -> dict[str, Any]:
    answer = interrupt({"question": f"publish {state['task']}?"})
    return {"confirmed": answer, "final_text": f"published: {answer}"}


def confirming() -> PipelineBuilder:
    return PipelineBuilder(state=Confirmed).add_node("confirm", confirm, after="finalize")


async def test_a_node_pauses_the_run_and_another_agent_answers_it(
    make_agent: MakeAgent, db: Path
) -> None:
    seen: list[Any] = []
    first = make_agent(pipeline=confirming())
    first.add_listener(seen.append, NodePaused)

    paused = await first.run("the report")

    assert paused.status == "paused" and paused.gate is None
    assert paused.interrupt is not None
    assert (paused.interrupt.node, paused.interrupt.value) == (
        "confirm",
        {"question": "publish the report?"},
    )
    assert paused.trace[-1]["stage"] == "confirm" and paused.trace[-1]["status"] == "paused"
    assert seen == [NodePaused("confirm", 1, {"question": "publish the report?"})]
    record = await first.store.get_run(paused.thread_id)
    assert record is not None and record["status"] == "paused"

    second = make_agent(pipeline=confirming())  # the same file, a fresh object
    done = await second.resume(paused.thread_id, {"ok": True, "by": "ann"})

    assert done.status == "completed" and done.interrupt is None
    assert done.final_text == "published: {'ok': True, 'by': 'ann'}"
    state: dict[str, Any] = dict(await second.get_state(done.thread_id))
    assert state["confirmed"] == {"ok": True, "by": "ann"}


async def test_a_plan_of_instructions_is_the_answer_and_other_plans_are_refused(
    make_agent: MakeAgent,
) -> None:
    agent = make_agent(pipeline=confirming())
    paused = await agent.run("the report")

    with pytest.raises(InvalidPlanError, match=r"paused in node confirm: .*answer it with"):
        await agent.resume(paused.thread_id)
    with pytest.raises(InvalidPlanError, match="it takes an answer, not a plan for the gate"):
        await agent.resume(paused.thread_id, UserPlan(approve=["*"]))
    with pytest.raises(InvalidPlanError, match="is a dict, not JSON data"):
        await agent.resume(paused.thread_id, {"a": {1, 2}})
    with pytest.raises(InvalidPlanError, match="the limit is"):
        await agent.resume(paused.thread_id, "x" * 100_000)
    assert (await agent.get_result(paused.thread_id)).status == "paused"  # still waiting

    done = await agent.resume(paused.thread_id, UserPlan(instructions="yes"))
    assert done.final_text == "published: yes"


async def test_a_secret_in_the_answer_is_masked_before_it_is_stored(
    make_agent: MakeAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ai_agent.config import AgentSettings

    monkeypatch.setenv("MAMBA_API_KEY", "sk-canary-123456")
    agent = make_agent(pipeline=confirming(), settings=AgentSettings())
    paused = await agent.run("the report")
    done = await agent.resume(paused.thread_id, "yes, key sk-canary-123456")
    assert done.final_text == "published: yes, key ***"


def test_the_cli_shows_the_pause_and_resume_answers_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "flows_cli.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "draft"}]))
    db = str(tmp_path / "c.sqlite")
    common = ["--db", db, "--model", f"scripted:{script}", "--pipeline", "flows_cli:pipeline"]

    assert main(["run", "the report", *common, "--no-stream", "--thread-id", "t1"]) == 3
    assert "paused in node confirm: " in capsys.readouterr().out

    assert main(["runs", "--db", db]) == 0
    assert "t1  paused" in capsys.readouterr().out
    assert main(["show", "t1", "--db", db]) == 0  # without --pipeline: the run row says it
    assert "thread t1: paused" in capsys.readouterr().out

    assert main(["resume", "t1", "--plan", "yes", *common, "--no-stream"]) == 0
    assert capsys.readouterr().out.strip() == "published: yes"


def test_a_pipeline_the_cli_cannot_load_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "c.sqlite")
    for spec, said in [
        ("flows", "give it as package.module:name"),
        ("no_such_module_here:pipeline", "cannot import no_such_module_here"),
        ("json:dumps", "json has no Pipeline or PipelineBuilder named dumps"),
    ]:
        assert main(["run", "task", "--db", db, "--pipeline", spec]) == 2
        assert said in capsys.readouterr().err


def test_pause_in_one_process_and_answer_from_another(tmp_path: Path) -> None:
    """Two real processes over one SQLite file: the second answers the node of the first."""
    (tmp_path / "flows_proc.py").write_text(MODULE.replace("Confirmed", "Confirmed2"))
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "draft"}]))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    common = [
        *("--db", str(tmp_path / "c.sqlite"), "--model", f"scripted:{script}"),
        *("--pipeline", "flows_proc:pipeline", "--json", "--no-stream"),
    ]

    def cli(*argv: str) -> tuple[int, dict[str, Any]]:
        done = subprocess.run(
            [sys.executable, "-m", "ai_agent.cli", *argv, *common],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
            check=False,
        )
        assert "Traceback" not in done.stderr, done.stderr
        return done.returncode, json.loads(done.stdout)

    code, paused = cli("run", "the report", "--thread-id", "p1")
    assert code == 3 and paused["status"] == "paused"
    assert paused["interrupt"] == {"node": "confirm", "value": {"question": "publish the report?"}}

    code, done = cli("resume", "p1", "--plan", "ship it")
    assert code == 0 and done["status"] == "completed"
    assert done["final_text"] == "published: ship it"
