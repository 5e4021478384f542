"""The benchmark's own arithmetic: the pipeline's measurements and the noise-robust estimator."""

from __future__ import annotations

import asyncio
import doctest
from pathlib import Path

import bench.__main__ as bench_main
from bench.pipeline import PipelineRun, run_pipeline


def test_the_estimators_doctests_pass() -> None:
    result = doctest.testmod(bench_main)
    assert result.attempted >= 1 and result.failed == 0


def test_each_cycle_takes_its_fastest_round() -> None:
    quiet = PipelineRun("delta", 4, wall=[1.0, 1.0, 1.0, 1.0], cpu=[1.0, 1.0, 1.0, 1.0])
    disturbed = PipelineRun("delta", 4, wall=[9.0, 1.0, 9.0, 0.5], cpu=[1.0, 2.0, 1.0, 1.0])
    assert bench_main.envelope([quiet, disturbed], "wall") == [1.0, 1.0, 1.0, 0.5]
    assert bench_main.envelope([quiet, disturbed], "cpu") == [1.0, 1.0, 1.0, 1.0]


def test_a_short_delta_pipeline_records_every_cycle_and_its_sizes(tmp_path: Path) -> None:
    run = asyncio.run(run_pipeline("delta", 24, tmp_path / "delta.sqlite", 8))
    assert len(run.wall) == len(run.cpu) == 23  # draft to draft: the last cycle finalizes
    assert all(t > 0 for t in run.wall)
    assert sorted(run.sizes) == [0, 8, 16, 24]
    sizes = [run.sizes[k] for k in sorted(run.sizes)]
    assert sizes == sorted(sizes) and sizes[-1] > sizes[1] > 0  # it grows with the run
    # About 1 KB of tool output per cycle: the state holds it twice, plus the step's writes,
    # in pages that are partly filled (the full run's figure is about 15x; SqliteSaver's 7,644x).
    assert 8 * 1000 < sizes[2] - sizes[1] < 8 * 1000 * 40


def test_the_baseline_without_a_checkpointer_measures_time_only(tmp_path: Path) -> None:
    run = asyncio.run(run_pipeline("none", 12, tmp_path / "none.sqlite", 4))
    assert len(run.wall) == 11
    assert run.sizes == {}
    assert not (tmp_path / "none.sqlite").exists()


def test_a_small_subagent_measurement_spawns_linked_children(tmp_path: Path) -> None:
    from bench.subagents import measure_subagents

    result = asyncio.run(measure_subagents(3, 2, tmp_path))
    assert len(result["spawns"]) == len(result["plains"]) == 2
    assert all(t > 0 for t in [*result["spawns"], *result["plains"]])
    assert result["rss_many"] > 0 and result["bytes_per_child"] >= 0
    figures = bench_main.subagent_figures(result)
    assert [f.section for f in figures] == ["subagents", "subagents"]
