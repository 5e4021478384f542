"""The console's section of the benchmark: the seeded store and the measured figures."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ai_agent.checkpoints import RunStore
from bench import console


def test_the_seeded_store_has_running_paused_and_completed_runs_and_a_long_one(
    tmp_path: Path,
) -> None:
    db = tmp_path / "c.sqlite"
    assert asyncio.run(console.seed_console_store(db, 210, 3)) == 4
    store = RunStore(db)
    try:
        runs = asyncio.run(store.list_runs(limit=None))
        summaries = asyncio.run(store.run_summaries([r["thread_id"] for r in runs]))
    finally:
        store.close()
    status = {r["thread_id"]: r["status"] for r in runs}
    assert len(status) == 213  # the seeded runs and the three real ones they copy
    assert status[console.LONG] == "completed"
    assert [t for t, s in status.items() if s == "running"] == [
        f"run-{i:05d}" for i in range(209, 204, -1)
    ]
    paused = sorted(t for t, s in status.items() if s == "paused")
    assert paused == ["paused", "run-00000", "run-00100", "run-00200"]
    assert all(r["gate"] for r in runs if r["status"] == "paused")
    # Every run but the running ones has a current summary, as the runner writes it.
    assert set(status) - set(summaries) == {t for t, s in status.items() if s == "running"}


def test_each_page_is_timed_against_its_bare_read(tmp_path: Path) -> None:
    figures = console.measure_console(tmp_path, repeat=2, runs=120, cycles=3)
    assert [f.name for f in figures] == [
        "runs page: 50 of 120 runs: server time",
        "inbox: 3 of 3 paused runs: server time",
        "run view: a 3-cycle run: server time",
    ]
    for figure in figures:
        assert figure.unit == "ms" and figure.baseline is not None and figure.baseline > 0
        assert figure.ratio == pytest.approx(figure.ours / figure.baseline)
        assert len(figure.extra["ours"]) == len(figure.extra["baseline"]) == 2
        limit = 500 if figure.name.startswith("run view") else 200
        assert figure.ok == (figure.ours < limit)
