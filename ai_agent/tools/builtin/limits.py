"""Kernel resource limits of a sandboxed process: one helper for ``run_bash`` and generated tools.

`rlimits` turns the limits of a call into ``setrlimit`` values, which the generated tools'
runner sets on itself (`ai_agent.tools.maker._child`) and ``run_bash`` sets through the shell's
``ulimit`` (`ulimit_prefix`) before the command runs, inside the sandbox. What each one bounds:

=================  ==============================================================================
RLIMIT_CPU         CPU seconds of each process. The hard limit is one second above the soft one,
                   so the kernel's SIGXCPU (not its SIGKILL) says why the process died.
RLIMIT_AS / DATA   memory of each process: its whole address space (AS), or its heap and other
                   private writable memory (DATA), which leaves large reservations that are never
                   used (Java, V8, Go runtimes) alone.
RLIMIT_NPROC       processes and threads at once. The kernel counts them per user, in the user
                   namespace they run in (bubblewrap gives each sandbox its own), and does not
                   apply the limit to the host's root user at all (inside a user namespace
                   mapped to root too): for root, the call's pids cgroup
                   (`ai_agent.tools.builtin.cgroups`) is what limits processes.
=================  ==============================================================================

Soft and hard limits are the same (CPU aside), so a process cannot raise them again without a
capability, which sandboxed processes do not have. `limit_hit` says which limit a failed
``run_bash`` command ran into, and `tasks_of` counts a user's tasks as RLIMIT_NPROC does.
"""

from __future__ import annotations

import math
import os
import resource
import signal
from pathlib import Path

__all__ = ["limit_hit", "rlimits", "tasks_of", "ulimit_prefix"]

# ``ulimit`` option and unit (bytes per unit; 0: a plain count or seconds) of each limit.
_ULIMIT = {
    "RLIMIT_CPU": ("-t", 0),
    "RLIMIT_AS": ("-v", 1024),
    "RLIMIT_DATA": ("-d", 1024),
    "RLIMIT_NPROC": ("-u", 0),
}


def rlimits(
    *,
    cpu_seconds: float,
    memory_mb: int,
    memory: str = "RLIMIT_DATA",
    processes: int | None = None,
    **others: int,
) -> dict[str, list[int]]:
    """The ``[soft, hard]`` rlimits of one sandboxed process.

    Args:
        cpu_seconds: RLIMIT_CPU (rounded up; at least 1).
        memory_mb: The memory limit, in MiB.
        memory: Which memory limit: ``RLIMIT_AS`` or ``RLIMIT_DATA``.
        processes: RLIMIT_NPROC (None: not set).
        **others: More limits by ``resource`` name (``RLIMIT_FSIZE=...``), soft = hard.

    Returns:
        ``resource`` constant name -> ``[soft, hard]``.

    Examples:
        >>> rlimits(cpu_seconds=2.5, memory_mb=64, processes=16)
        {'RLIMIT_CPU': [3, 4], 'RLIMIT_DATA': [67108864, 67108864], 'RLIMIT_NPROC': [16, 16]}
    """
    cpu = max(1, math.ceil(cpu_seconds))
    same = {memory: memory_mb << 20, **others}
    if processes is not None:
        same["RLIMIT_NPROC"] = processes
    return {"RLIMIT_CPU": [cpu, cpu + 1], **{k: [v, v] for k, v in same.items()}}


def ulimit_prefix(limits: dict[str, list[int]]) -> str:
    """Shell commands setting ``limits`` (those ``ulimit`` knows): soft limits, then hard ones.

    A limit above the engine's own hard limit is lowered to it (only a privileged process may
    raise a hard limit). When a limit cannot be set the command does not run: exit status 126
    and a line on standard error.

    Examples:
        >>> ulimit_prefix({"RLIMIT_CPU": [3, 4], "RLIMIT_NPROC": [16, 16]})  # doctest: +ELLIPSIS
        'ulimit -S -t 3 -u 16 && ulimit -H -t 4 -u 16 || { echo "run_bash: ...; exit 126; }'
    """
    hard, soft = [], []
    for name, values in limits.items():
        if name not in _ULIMIT:
            continue
        option, unit = _ULIMIT[name]
        ceiling = resource.getrlimit(getattr(resource, name))[1]
        low, high = (_within(v, ceiling) // (unit or 1) for v in values)
        soft += [option, str(low)]
        hard += [option, str(high)]
    return (
        f"ulimit -S {' '.join(soft)} && ulimit -H {' '.join(hard)} || "
        '{ echo "run_bash: the sandbox\'s resource limits could not be set" >&2; exit 126; }'
    )


def _within(value: int, ceiling: int) -> int:
    return value if ceiling == resource.RLIM_INFINITY else min(value, ceiling)


_CPU_DEATHS = (-signal.SIGXCPU, 128 + signal.SIGXCPU)
# What programs print when a system call fails for a limit: bash, Python, C and C++ runtimes.
_PROCESS_SIGNS = (
    "fork: Resource temporarily unavailable",
    "fork: retry: Resource temporarily",
    "Cannot fork",
    "can't fork",
    "BlockingIOError: [Errno 11]",
)
_MEMORY_SIGNS = (
    "MemoryError",
    "Cannot allocate memory",
    "cannot allocate memory",
    "xmalloc: cannot allocate",
    "std::bad_alloc",
    "out of memory",
)
_LIMIT_SIGNS = (
    ("max_processes", "process", _PROCESS_SIGNS),
    ("memory_mb", "memory", _MEMORY_SIGNS),
)


def limit_hit(code: int | None, stderr: str, refused_forks: int = 0) -> tuple[str, str] | None:
    """Which limit (its setting, and what it limits) the command failed on, if any."""
    if code in _CPU_DEATHS or "CPU time limit exceeded" in stderr:
        return "cpu_seconds", "CPU time"
    if not code:
        return None
    if refused_forks:
        return "max_processes", "process"
    for setting, what, signs in _LIMIT_SIGNS:
        if any(sign in stderr for sign in signs):
            return setting, what
    return None


def tasks_of(uid: int) -> int:
    """Tasks (processes and threads) whose real user is ``uid``, as RLIMIT_NPROC counts them."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields.get("Uid", "-1").split()[0]) == uid:
            total += int(fields.get("Threads", "1"))
    return total
