"""CPU time of the processes in a scale-out round, read from ``/proc`` (Linux).

A round's figures in runs per second depend on what else the machine does; CPU milliseconds
per run, per process kind, do not (much), and say where the time goes:

- the workers: each one's own rusage when it exits (``os.wait4``), start-up included, so the
  bench subtracts an idle worker's start-up (`startup_cpu_ms`);
- PostgreSQL: the postmaster and every backend. A backend that exits is reaped by the
  postmaster, whose ``cutime``/``cstime`` then hold its CPU, so the postmaster's own and
  children's times plus the live backends' own times count every backend, gone or not;
- the model server: its process's own time;
- the machine: all cores' busy time (``/proc/stat``), which shows how much the rest of the
  machine (other jobs) took during the round.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["machine_busy_ms", "postgres_cpu_ms", "process_cpu_ms"]

_TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str]:
    # Fields after the command name (which may hold spaces), from field 3 (state) on.
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def process_cpu_ms(pid: int, *, children: bool = False) -> float:
    """User plus system CPU of a live process (with ``children``: of its reaped children too)."""
    fields = _stat(pid)
    ticks = int(fields[11]) + int(fields[12])  # utime, stime
    if children:
        ticks += int(fields[13]) + int(fields[14])  # cutime, cstime
    return ticks * _TICK_MS


def postgres_cpu_ms(postmaster: int) -> float:
    """CPU of a PostgreSQL server so far: the postmaster and all its backends, live or gone."""
    total = process_cpu_ms(postmaster, children=True)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = _stat(int(entry.name))
        except (OSError, IndexError):  # gone meanwhile: the postmaster's cutime has it now
            continue
        if int(fields[1]) == postmaster:  # ppid
            total += (int(fields[11]) + int(fields[12])) * _TICK_MS
    return total


def machine_busy_ms() -> float:
    """Busy CPU time of all cores since boot (everything but idle and iowait)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    ticks = [int(f) for f in fields]
    idle = ticks[3] + ticks[4]
    return (sum(ticks[:8]) - idle) * _TICK_MS
