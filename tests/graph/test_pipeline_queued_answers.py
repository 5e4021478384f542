"""A queued answer for a node of your pipeline that called ``interrupt()``: a worker answers it.

``submit_plan`` checks the answer as ``resume`` does and queues it with the interrupt's id; a
worker resumes the run with it. A row that is not such an answer, or is for another interrupt,
is refused and the run stays paused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ai_agent import UserPlan
from ai_agent.cli import main
from ai_agent.errors import InvalidPlanError
from ai_agent.graph import Worker
from tests.graph.conftest import MakeAgent
from tests.graph.test_pipeline_interrupts import MODULE, confirming


async def paused_run(make_agent: MakeAgent) -> tuple[Any, str]:
    agent = make_agent(pipeline=confirming())
    paused = await agent.run("the report")
    assert paused.status == "paused" and paused.interrupt is not None
    return agent, paused.thread_id


@pytest.mark.parametrize(
    ("answer", "final"),
    [
        ("ship it", "published: ship it"),
        (UserPlan(instructions="yes"), "published: yes"),
        # The queue keeps JSON: the dict comes back with its keys in order.
        ({"ok": True, "by": "ann"}, "published: {'by': 'ann', 'ok': True}"),
    ],
)
async def test_a_queued_answer_is_what_the_nodes_interrupt_returns(
    make_agent: MakeAgent, answer: Any, final: str
) -> None:
    agent, thread = await paused_run(make_agent)
    queued = await agent.submit_plan(thread, answer)
    plain = answer.instructions if isinstance(answer, UserPlan) else answer
    assert queued["status"] == "queued"
    assert set(queued["plan"]) == {"node", "answer", "interrupt_id"}
    assert (queued["plan"]["node"], queued["plan"]["answer"]) == ("confirm", plain)
    (outcome,) = await Worker(make_agent(pipeline=confirming())).run(once=True)
    assert (outcome.status, outcome.run_status) == ("done", "completed")
    done = await agent.get_result(thread)
    assert done.final_text == final
    assert (await agent.get_state(thread))["confirmed"] == plain


async def test_an_answer_is_checked_and_masked_where_it_is_queued(
    make_agent: MakeAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ai_agent.config import AgentSettings

    monkeypatch.setenv("MAMBA_API_KEY", "sk-canary-123456")
    agent = make_agent(pipeline=confirming(), settings=AgentSettings())
    thread = (await agent.run("the report")).thread_id
    with pytest.raises(InvalidPlanError, match="it takes an answer, not a plan for the gate"):
        await agent.submit_plan(thread, UserPlan(approve=["*"]))
    with pytest.raises(InvalidPlanError, match="the limit is"):
        await agent.submit_plan(thread, "x" * 100_000)
    assert await agent.list_plans() == []
    queued = await agent.submit_plan(thread, "yes, key sk-canary-123456")
    assert queued["plan"]["answer"] == "yes, key ***"


async def test_a_gate_plan_written_into_the_queue_does_not_answer_a_node(
    make_agent: MakeAgent,
) -> None:
    agent, thread = await paused_run(make_agent)
    # Anything that can write to the run store could queue rows: none of these answer it.
    forged = [
        ({"approve": ["*"], "instructions": "ship it"}, "is a plan for the gate, not an answer"),
        (
            {"node": "confirm", "answer": "ship it", "interrupt_id": "made-up"},
            f"was not queued for the interrupt run {thread} waits at now in node confirm",
        ),
    ]
    for row, why in forged:
        await agent.store.submit_plan(thread, row, gate_checkpoint_id=None)
        (outcome,) = await Worker(agent).run(once=True)
        assert outcome.status == "refused" and why in (outcome.error or ""), outcome
        assert (await agent.get_result(thread)).status == "paused"
    # The real answer still gets through.
    await agent.submit_plan(thread, "ship it")
    (outcome,) = await Worker(agent).run(once=True)
    assert (outcome.status, outcome.run_status) == ("done", "completed")
    assert (await agent.get_result(thread)).final_text == "published: ship it"


async def test_an_answer_for_a_node_the_run_has_left_is_refused(make_agent: MakeAgent) -> None:
    agent, thread = await paused_run(make_agent)
    queued = await agent.submit_plan(thread, "ship it")
    done = await agent.resume(thread, "by hand")  # answered before a worker came
    assert done.status == "completed"
    (outcome,) = await Worker(agent).run(once=True)
    assert outcome.status == "refused"
    assert f"answers node confirm of run {thread}, which no longer waits there" in (
        outcome.error or ""
    )
    assert queued["id"] == outcome.plan_id
    assert (await agent.get_result(thread)).final_text == "published: by hand"


def test_the_cli_queues_an_answer_and_a_worker_answers_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "flows_queue.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "draft"}]))
    db = str(tmp_path / "c.sqlite")
    common = ["--db", db, "--model", f"scripted:{script}", "--pipeline", "flows_queue:pipeline"]
    assert main(["run", "the report", *common, "--no-stream", "--thread-id", "q1"]) == 3
    capsys.readouterr()
    assert main(["resume", "q1", "--plan", "ship it", "--queue", *common]) == 0
    assert capsys.readouterr().out.startswith("queued plan 1 for run q1")
    assert main(["worker", "--once", *common]) == 0
    capsys.readouterr()
    assert main(["show", "q1", *common[:2], "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["status"], shown["final_text"]) == ("completed", "published: ship it")
