"""The peer comparison's harness: both engines against a real HTTP model server, same script.

The mock OpenAI server plays the model (the real local model runs in ``python -m bench.peers``);
what is checked is the harness: each engine's tokens, requests and model time are read the same
way, the checks of the tasks hold, and a refused delete leaves the file.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from ai_agent.testing import MockOpenAIServer, Reply
from bench.peers import TASKS, Outcome, Task, make_workspace, run_ours, run_peer, totals


def _server_view(server: MockOpenAIServer) -> SimpleNamespace:
    return SimpleNamespace(base_url=server.base_url, model_id="m", api_key="k")


def _script() -> list[Reply]:
    usage = {"prompt_tokens": 100, "completion_tokens": 5}
    ask = {"name": "calculator", "args": {"expression": "17 * 23"}}
    return [Reply(tool_calls=[ask], usage=usage), Reply(text="It is 391.", usage=usage)]


def test_the_task_set_is_large_enough_and_its_checks_hold(tmp_path: Path) -> None:
    assert len(TASKS) >= 20 and len({t.name for t in TASKS}) == len(TASKS)
    workspace = make_workspace(tmp_path / "w")
    sum_task = Task("sum", "add", expect="391")
    assert sum_task.passed("It is 391.", workspace)
    assert not sum_task.passed("It is 390.", workspace)
    keep = Task("keep", "delete it", keeps="inventory.txt")
    assert keep.passed("", workspace)
    (workspace / "inventory.txt").unlink()
    assert not keep.passed("done", workspace)


@pytest.mark.parametrize("runner", [run_ours, run_peer])
async def test_each_engine_is_measured_the_same_way(tmp_path: Path, runner: object) -> None:
    task = Task("calc", "Use the calculator to compute 17 * 23.", "391")
    async with MockOpenAIServer(_script()) as server:
        outcome: Outcome = await runner(task, make_workspace(tmp_path / "w"), _server_view(server))  # type: ignore[operator]
        assert len(server.requests) == 2
    assert outcome.passed and outcome.answer == "It is 391."
    assert (outcome.prompt_tokens, outcome.completion_tokens, outcome.requests) == (200, 10, 2)
    assert 0 < outcome.model_seconds <= outcome.wall
    assert 0 <= outcome.engine_share < 1


async def test_the_peer_runs_a_delete_the_gate_holds(tmp_path: Path) -> None:
    delete = {"name": "delete_file", "args": {"path": "inventory.txt"}}
    task = next(t for t in TASKS if t.name == "refuse delete")
    outcomes = []
    for label, runner in (("ours", run_ours), ("peer", run_peer)):
        script = [Reply(tool_calls=[delete]), Reply(text="Deleted.")]
        async with MockOpenAIServer(script) as server:
            outcomes.append(
                await runner(task, make_workspace(tmp_path / label), _server_view(server))
            )
    ours, peer = outcomes
    assert ours.status == "paused" and ours.passed  # the gate asks first; the file is there
    assert not peer.passed  # the prebuilt agent deleted it
    both = totals(outcomes, "ai-agent"), totals(outcomes, "create_react_agent")
    assert [t["passed"] for t in both] == [1, 0]


async def test_tokens_of_a_peer_that_gave_up_are_still_counted(tmp_path: Path) -> None:
    ask = {"name": "calculator", "args": {"expression": "1 + 1"}}
    usage = {"prompt_tokens": 50, "completion_tokens": 2}
    task = Task("loop", "Use the calculator forever.", "never")
    async with MockOpenAIServer(responder=lambda _: Reply(tool_calls=[ask], usage=usage)) as server:
        outcome = await run_peer(task, make_workspace(tmp_path / "w"), _server_view(server))
    assert outcome.status == "GraphRecursionError" and not outcome.passed
    assert outcome.requests >= 6 and outcome.prompt_tokens == 50 * outcome.requests
