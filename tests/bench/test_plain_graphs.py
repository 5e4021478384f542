"""The plain LangGraph graphs of the benchmark: they run on every saver and store what they hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.plain_graphs import FILELESS, GRAPHS, SAVERS, read_latest, run_plain
from bench.plain_section import measure_plain


@pytest.mark.parametrize("graph", GRAPHS)
@pytest.mark.parametrize("saver", SAVERS)
def test_each_graph_runs_on_each_saver(graph: str, saver: str, tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    run = run_plain(graph, saver, 8, path, 4, durability="sync")
    assert len(run.wall) == 8 and all(t > 0 for t in run.wall)
    assert run.cpu > 0
    if saver in FILELESS:
        assert run.sizes == {} and not path.exists()
        return
    assert sorted(run.sizes) == [0, 4, 8] and run.sizes[8] > run.sizes[4]
    assert run.disk >= run.sizes[8] * 0.5
    assert len(read_latest(graph, saver, path, repeat=1)) == 1


def test_the_dict_graph_edits_in_place_and_the_saver_stores_the_edits(tmp_path: Path) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    from ai_agent.checkpoints import DeltaSaver
    from bench.plain_graphs import build, initial, prepare

    prepare(6)
    config = {"configurable": {"thread_id": "t"}, "recursion_limit": 100}
    with DeltaSaver(tmp_path / "c.sqlite") as saver:
        live = build("dict", "delta", 6, lambda: None, saver).invoke(initial("dict"), config)
        stored = build("dict", "delta", 6, lambda: None, saver).get_state(config).values
    memory = InMemorySaver()
    theirs = build("dict", "memory", 6, lambda: None, memory).invoke(initial("dict"), config)
    assert stored == live == theirs
    assert live["docs"]["doc0"]["seen"] == 2  # edited in place twice (cycles 0 and 1)


def test_the_section_reports_every_figure(tmp_path: Path) -> None:
    figures, meta = measure_plain(cycles=8, window=4, rounds=1, read_cycles=8)
    names = [f.name for f in figures]
    assert len(names) == 8 + 7 + 1  # DeltaChannel only for the list graph; one read
    assert sum("InMemorySaver" in name for name in names) == 2
    assert any("DeltaChannel" in name for name in names)
    assert names[-1].startswith("messages graph: read the latest state")
    assert set(meta) == {"messages", "dict"}
