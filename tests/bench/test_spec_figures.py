"""The specification's figures in the bench: what they measure, on a small scale."""

from __future__ import annotations

from bench.spec_figures import measure_agent_memory, measure_serialization, spec_figures


def test_serialization_reads_back_what_it_wrote_and_times_both_ways() -> None:
    serial = measure_serialization(tokens=2_000, repeat=1)
    assert serial["messages"] > 1
    assert serial["bytes"] > 0 and serial["baseline_bytes"] > 0
    assert all(serial[key] > 0 for key in ("dumps", "loads", "baseline_dumps", "baseline_loads"))


def test_memory_is_measured_in_a_child_that_runs_real_agents() -> None:
    memory = measure_agent_memory(agents=2)
    # The child imports the dependencies, then the engine, then runs agents: each step is a
    # resident set at least as large as the one before.
    assert 0 < memory["bare"] < memory["deps"] <= memory["imported"] <= memory["first"]
    figures = spec_figures(measure_serialization(tokens=2_000, repeat=1), memory)
    assert [f.section for f in figures] == ["spec", "spec", "spec"]
    assert figures[1].ours == memory["per_agent"] / 1e6
    assert figures[2].ours == (memory["first"] - memory["deps"]) / 1e6
