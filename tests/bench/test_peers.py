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
from bench.peers import (
    TASKS,
    Outcome,
    Task,
    make_workspace,
    measure_peers,
    peer_figures,
    run_ours,
    run_peer,
    totals,
)


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


def _totals(passed: int, tokens: int, requests: int, share: float) -> dict[str, float]:
    return {
        "tasks": 20,
        "passed": passed,
        "tokens": tokens,
        "requests": requests,
        "prompt_tokens": tokens,
        "completion_tokens": 0,
        "wall": 100.0,
        "engine_share": share,
    }


def test_the_suite_states_each_total_as_a_ratio_to_the_peer() -> None:
    report = {"ours": _totals(12, 570, 90, 0.02), "peer": _totals(11, 1000, 100, 0.004)}
    figures = {f.name: f for f in peer_figures(report)}

    assert figures["tokens (prompt + completion)"].ratio == pytest.approx(0.57)
    assert figures["tokens (prompt + completion)"].ok
    assert figures["model requests"].ratio == pytest.approx(0.9)
    assert not figures["model requests"].ok  # over 0.8 of the peer's: a miss, reported
    assert figures["tasks passed"].ok
    share = figures["engine's share of wall time (all but the model)"]
    assert share.ours == pytest.approx(2.0) and share.ok


def test_a_section_that_cannot_run_is_reported_as_not_measured(tmp_path: Path) -> None:
    # `false` stands for an interpreter without the local model: it exits 1 and writes nothing.
    figures, meta = measure_peers(tmp_path, tasks=1, python="false")

    assert [f.ok for f in figures] == [False]
    assert figures[0].note.startswith("not measured")
    assert "error" in meta
