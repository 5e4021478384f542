"""The command line's read-only commands: wall time and peak memory on a store of 1,000 runs.

``runs``, ``show``, ``history``, ``export``, ``mcp list``, ``tools`` and ``--help`` are each run
as a whole process (the ``ai-agent`` script, as a user types it), interleaved with the baseline
``python -c "import sqlite3"`` (an interpreter that can open the database and nothing more),
after one untimed run of each that writes the bytecode caches. Time is the wall time from
start to exit; CPU time is the child's user and system time, memory its peak RSS, both as the
kernel accounts them (``os.wait4``). Each is summarised by the median; the ratio to the baseline
is what stays comparable on a busy machine, and CPU time is the figure a busy machine inflates
least (the wall time of a process waiting for a core is not its CPU time). How many modules
each command loads is counted in one more untimed run (``sys.modules`` at exit).
The timing runs in a fresh small interpreter (``python -m bench.cli_reads time``): a child forked
from a big process would count its parent's pages in its own peak RSS until it execs.

The store is seeded through the engine's own API, never raw SQL that could drift from the
schema: one real run (the Agent on a scripted model, the calculator called once), then its
checkpoints copied to 999 more threads (``DeltaSaver.acopy_thread``), each recorded in the run
store as a completed run (``create_run``, ``update_run``). ``mcp list`` reads a config file with
one disabled server: what the command costs itself, not a server's own start-up.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import Figure, median, subprocess_env

__all__ = ["COMMANDS", "measure_cli_reads", "seed_store"]

RUNS = 1000
SHOWN = "run-0000"
TASK = "what is 6*7"
TIME_TARGET = 0.25
MEMORY_TARGET = 60e6
SCRIPT: list[dict[str, Any]] = [
    {"tool_calls": [{"name": "calculator", "args": {"expression": "6*7"}}]},
    {"text": "6*7 = 42"},
]
MCP_CONFIG = {
    "mcp_servers": [
        {"name": "files", "transport": "stdio", "command": "mcp-server-files", "enabled": False}
    ]
}

# ``mcp list`` exits 1 when a configured server is not running, a disabled one included.
EXIT_CODES = {"mcp list": 1}

COMMANDS: dict[str, list[str]] = {
    "runs": ["runs", "--db", "{db}"],
    "show": ["show", SHOWN, "--db", "{db}"],
    "history": ["history", SHOWN, "--db", "{db}"],
    "export": ["export", SHOWN, "--html", "{work}/page.html", "--db", "{db}"],
    "mcp list": ["mcp", "list", "--config", "{work}/mcp.json"],
    "tools": ["tools"],
    "--help": ["--help"],
}


async def _seed(db: Path, runs: int) -> None:
    from ai_agent import Agent
    from ai_agent.checkpoints import open_checkpointer, open_run_store
    from ai_agent.testing import ScriptedModel

    agent = Agent(
        model=ScriptedModel(SCRIPT), tools=["calculator"], checkpoint_path=db, memory_path=None
    )
    async with agent:
        result = await agent.run(TASK, thread_id=SHOWN)
    if result.status != "completed":
        raise RuntimeError(f"the seed run ended {result.status}: {result.error}")
    store = open_run_store(db)
    try:
        async with open_checkpointer(db) as saver:
            for i in range(1, runs):
                thread = f"run-{i:04d}"
                await store.create_run(thread, TASK)
                await saver.acopy_thread(SHOWN, thread)
                await store.update_run(thread, status="completed", final_text=result.final_text)
    finally:
        store.close()


def seed_store(db: Path, runs: int = RUNS) -> None:
    """A run store of ``runs`` completed runs at ``db`` (see the module docstring)."""
    asyncio.run(_seed(db, runs))


# One more run of a command, its main called as the ``ai-agent`` script calls it, that writes
# how many modules it loaded on its last line of stderr.
_COUNTING = (
    "import sys\n"
    "from ai_agent.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "print(len(sys.modules), file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def _run(argv: list[str], cwd: Path, expected: int = 0) -> tuple[float, int, float]:
    """Wall seconds, peak RSS in bytes and CPU seconds of one run of ``argv``.

    Its output is discarded.
    """
    started = time.perf_counter()
    with subprocess.Popen(
        argv, cwd=cwd, env=subprocess_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    ) as child:
        assert child.stderr is not None
        errors = child.stderr.read()
        # Reaped here, not by Popen: wait4 gives the child's own resource usage.
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != expected:
        raise RuntimeError(f"{argv} exited {child.returncode}: {errors.decode()[-500:]}")
    cpu = usage.ru_utime + usage.ru_stime
    return wall, usage.ru_maxrss * 1024, cpu  # ru_maxrss in kilobytes on Linux


def _modules(argv: list[str], cwd: Path, expected: int = 0) -> int:
    """How many modules the command ``argv`` (the ``ai-agent`` script's arguments) loads."""
    done = subprocess.run(
        [sys.executable, "-c", _COUNTING, *argv],
        cwd=cwd,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    if done.returncode != expected:
        raise RuntimeError(f"{argv} exited {done.returncode}: {done.stderr[-500:]}")
    return int(done.stderr.split()[-1])


def _time_commands(work: Path, repeat: int) -> dict[str, Any]:
    """Each command's (wall, peak RSS, CPU) samples and the baseline's (run in a small process);
    under ``"modules"``, how many modules each command loads."""
    cli = str(Path(sys.executable).with_name("ai-agent"))
    db = work / "runs.sqlite"
    commands = {
        name: [cli, *(a.format(db=db, work=work) for a in argv)] for name, argv in COMMANDS.items()
    }
    commands["baseline"] = [sys.executable, "-c", "import sqlite3"]
    for name, argv in commands.items():  # the bytecode caches, as a user's first run writes
        _run(argv, work, EXIT_CODES.get(name, 0))
    samples: dict[str, Any] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, argv in commands.items():
            samples[name].append(_run(argv, work, EXIT_CODES.get(name, 0)))
    samples["modules"] = {
        name: _modules(argv[1:], work, EXIT_CODES.get(name, 0))
        for name, argv in commands.items()
        if name != "baseline"
    }
    return samples


def _child(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "bench.cli_reads", *args],
        check=True,
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=1800,
    )
    return done.stdout


def measure_cli_reads(work: Path, repeat: int, runs: int = RUNS) -> list[Figure]:
    """The figures of the read-only commands against ``python -c "import sqlite3"``."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "mcp.json").write_text(json.dumps(MCP_CONFIG))
    _child("seed", str(work / "runs.sqlite"), str(runs))
    samples = json.loads(_child("time", str(work), str(repeat)).splitlines()[-1])
    base_wall = median([w for w, _, _ in samples["baseline"]])
    base_rss = median([float(r) for _, r, _ in samples["baseline"]])
    base_cpu = median([c for _, _, c in samples["baseline"]])
    figures = []
    for name in COMMANDS:
        walls = [w for w, _, _ in samples[name]]
        cpus = [c for _, _, c in samples[name]]
        wall, rss = median(walls), median([float(r) for _, r, _ in samples[name]])
        cpu, modules = median(cpus), samples["modules"][name]
        how = f"median of {repeat} runs, interleaved with the baseline"
        figures += [
            Figure(
                "cli",
                f"ai-agent {name}: time ({runs:,} runs stored)",
                wall * 1000,
                "ms",
                base_wall * 1000,
                'python -c "import sqlite3"',
                wall / base_wall,
                "ours / baseline",
                f"< {TIME_TARGET * 1000:.0f} ms",
                wall < TIME_TARGET,
                f"wall time of the whole process; {how}",
                {"walls": walls},
            ),
            Figure(
                "cli",
                f"ai-agent {name}: CPU time",
                cpu * 1000,
                "ms",
                base_cpu * 1000,
                'python -c "import sqlite3"',
                cpu / base_cpu,
                "ours / baseline",
                f"< {TIME_TARGET * 1000:.0f} ms",
                cpu < TIME_TARGET,
                f"user + system time of the process (os.wait4), which a busy machine inflates "
                f"least; {how}; {modules} modules loaded",
                {"cpus": cpus, "modules": modules},
            ),
            Figure(
                "cli",
                f"ai-agent {name}: peak memory",
                rss,
                "bytes",
                base_rss,
                'python -c "import sqlite3"',
                rss / base_rss,
                "ours / baseline",
                f"< {MEMORY_TARGET / 1e6:.0f} MB",
                rss < MEMORY_TARGET,
                f"peak RSS of the process (os.wait4); {how}; a child counts the pages of the "
                "process that started it until it execs, so a figure at the baseline's is that "
                "floor",
            ),
        ]
    return figures


def main(argv: list[str]) -> None:
    """``seed DB RUNS``, ``time DIR REPEAT`` (JSON samples), or ``DIR [REPEAT]``: the table."""
    if argv[0] == "seed":
        seed_store(Path(argv[1]), int(argv[2]))
    elif argv[0] == "time":
        print(json.dumps(_time_commands(Path(argv[1]), int(argv[2]))))
    else:
        from bench.report import table

        print(table(measure_cli_reads(Path(argv[0]), int(argv[1]) if len(argv) > 1 else 5)))


if __name__ == "__main__":  # python -m bench.cli_reads DIR [REPEAT]: this section alone
    main(sys.argv[1:])
