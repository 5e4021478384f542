"""The command line's section of the benchmark: the seeded store and the measured figures."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from ai_agent.checkpoints import RunStore
from ai_agent.cli import main
from bench import cli_reads


def test_the_seeded_store_holds_that_many_runs_each_with_its_checkpoints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "runs.sqlite"
    cli_reads.seed_store(db, 5)
    store = RunStore(db)
    try:
        runs = asyncio.run(store.list_runs(limit=None))
    finally:
        store.close()
    assert sorted(r["thread_id"] for r in runs) == [f"run-{i:04d}" for i in range(5)]
    assert {r["status"] for r in runs} == {"completed"}
    # A copy reads back as the run it was copied from: the same steps, the same answer.
    capsys.readouterr()
    assert main(["show", "run-0003", "--db", str(db), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["status"] == "completed"
    assert shown["final_text"] == "6*7 = 42"
    assert [row["stage"] for row in shown["timeline"]][:3] == ["recall", "draft", "decide"]


def test_every_command_is_timed_against_the_baseline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two runs stored, one round: the section's whole path, each command a real process.
    monkeypatch.setattr(cli_reads, "COMMANDS", {"runs": ["runs", "--db", "{db}"]})
    figures = cli_reads.measure_cli_reads(tmp_path, repeat=1, runs=2)
    assert [f.name for f in figures] == [
        "ai-agent runs: time (2 runs stored)",
        "ai-agent runs: CPU time",
        "ai-agent runs: peak memory",
    ]
    time, cpu, memory = figures
    assert time.unit == "ms" and memory.unit == "bytes"
    assert time.baseline is not None and time.baseline > 0
    assert memory.baseline is not None and memory.baseline > 0
    assert time.ratio == pytest.approx(time.ours / time.baseline)
    assert memory.ratio == pytest.approx(memory.ours / memory.baseline)
    assert time.ok == (time.ours < 250) and memory.ok == (memory.ours < 60e6)
    # CPU time against the baseline's; how many modules the command loaded, counted apart.
    assert cpu.unit == "ms" and cpu.baseline is not None and cpu.baseline > 0
    assert cpu.ours > 0 and cpu.ratio == pytest.approx(cpu.ours / cpu.baseline)
    assert cpu.ok == (cpu.ours < 250)
    assert cpu.extra["modules"] > 100  # the interpreter's own and the store's, at least
    assert f"{cpu.extra['modules']} modules loaded" in cpu.note


def test_a_command_that_fails_stops_the_measurement(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="exited 2"):
        cli_reads._run(["python3", "-c", "raise SystemExit(2)"], tmp_path)
