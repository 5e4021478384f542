"""LangGraph's durability modes on the delta saver: what survives a real SIGKILL in each mode.

``graph.invoke(..., durability=...)``: "sync" stores each step's checkpoint before the next step
starts; "async" (LangGraph's default) stores it while the next step runs; "exit" stores only when
the run returns (or pauses). Each test kills a real process mid-run (``proc_durability.py``),
reads what the file holds, then continues the thread in a new process.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig

from ai_agent.checkpoints import DeltaSaver
from tests.graph.proc_durability import KILL_AT, STEPS, _plain

MODES = ("sync", "async", "exit")
CONFIG: RunnableConfig = {"configurable": {"thread_id": "t"}}


def _run(work: Path, mode: str, graph: str, phase: str) -> subprocess.CompletedProcess[str]:
    args = [str(work / "c.sqlite"), str(work), mode, graph, phase]
    return subprocess.run(
        [sys.executable, "-m", "tests.graph.proc_durability", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _killed(work: Path, mode: str, graph: str) -> None:
    killed = _run(work, mode, graph, "first")
    assert killed.returncode == -signal.SIGKILL, killed.stderr


def _finish(work: Path, mode: str, graph: str) -> dict[str, Any]:
    done = _run(work, mode, graph, "again")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _survived(work: Path) -> list[int] | None:
    """The list the thread's latest checkpoint holds after the crash (None: no checkpoint)."""
    with DeltaSaver(work / "c.sqlite") as saver:
        values = _plain(first=False).compile(checkpointer=saver).get_state(CONFIG).values
    return list(values["done"]) if values else None


@pytest.mark.parametrize("mode", MODES)
def test_a_plain_graph_killed_mid_run_keeps_what_its_mode_promises(
    mode: str, tmp_path: Path
) -> None:
    _killed(tmp_path, mode, "plain")
    survived = _survived(tmp_path)
    if mode == "sync":
        # Every step before the one that was running: nothing lost but the step in progress.
        assert survived == list(range(KILL_AT))
    elif mode == "async":
        # A prefix of it: the newest steps' checkpoints may not have been stored yet.
        assert survived is not None and survived == list(range(len(survived)))
        assert len(survived) <= KILL_AT
    else:
        assert survived is None  # nothing is stored before the run returns
    result = _finish(tmp_path, mode, "plain")
    # Continued from what survived (or from the start): every step exactly once, in order.
    assert result == {"done": list(range(STEPS)), "resumed": survived is not None}


@pytest.mark.parametrize("mode", MODES)
def test_no_mode_re_runs_a_side_effect_silently(mode: str, tmp_path: Path) -> None:
    """The tool journal is the run store's own commit, made before the tool starts."""
    _killed(tmp_path, mode, "engine")
    effects = (tmp_path / "effects.txt").read_text().splitlines()
    assert len(effects) == 1
    result = _finish(tmp_path, mode, "engine")
    # The call was journaled as started and never finished: it goes to a person.
    assert result["paused"] and result["kinds"] == ["UNKNOWN_OUTCOME"]
    assert (tmp_path / "effects.txt").read_text().splitlines() == effects
