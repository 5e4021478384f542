"""The reaper: the parent of every ``run_bash`` command, so the command dies with the engine.

`ai_agent.tools.builtin.bash_process` runs each command as
``python -I _reaper.py WATCH STATUS -- ARGV`` in a session of its own (ARGV is ``bash -c ...``,
or ``bwrap ... bash -c ...``). The reaper:

1. becomes a child subreaper, so a process the command leaves behind (a background job, a
   double-forked daemon in a session of its own) is re-parented to it instead of to init, and
   stays findable as its descendant;
2. starts ARGV in its own session and process group (the engine started the reaper as their
   leader), with its standard output and error, and then lets go of them (so the engine's
   reading ends when the command's processes close them);
3. writes the command's exit status (as ``Popen.returncode`` gives it: negative for a signal)
   to STATUS when the command ends, and reaps whatever else ends;
4. when WATCH reaches its end (the engine closed it when the call was over, or the engine died
   and the kernel closed it), SIGKILLs every process below it, then exits.

A SIGKILLed engine cannot clean up; this is what takes its commands down with it. The reaper
ignores SIGTERM, SIGINT and SIGHUP (the engine's SIGTERM to the group is meant for the command);
only the end of WATCH or SIGKILL ends it. It uses the standard library only, and `descendants`
is shared with the engine's own clean-up.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
from pathlib import Path

__all__ = ["descendants", "kill_below"]

PR_SET_CHILD_SUBREAPER = 36
_IGNORED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_ROUNDS = 100  # kill passes before giving up on a tree that keeps forking


def descendants(root: int) -> list[int]:
    """Processes below ``root`` (by parent links) or in its session, from ``/proc``."""
    parents: dict[int, int] = {}
    session: list[int] = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        pid = int(entry)
        parents[pid] = int(fields[1])
        if int(fields[3]) == root and pid != root:  # same session id
            session.append(pid)
    found, frontier = set(session), [root]
    while frontier:
        current = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == current and pid not in found:
                found.add(pid)
                frontier.append(pid)
    return sorted(found)


def kill_below(root: int) -> None:
    """SIGKILL every process below ``root``, again until none is left (one may still fork)."""
    for _ in range(_ROUNDS):
        victims = descendants(root)
        if not victims:
            return
        for pid in victims:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        _reap(None, -1)


def _reap(status_fd: int | None, command: int) -> int | None:
    """Collect every ended child; write the command's status once it is among them."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return status_fd
        if pid == 0:
            return status_fd
        if pid == command and status_fd is not None:
            with contextlib.suppress(OSError):
                os.write(status_fd, f"{os.waitstatus_to_exitcode(status)}\n".encode())
                os.close(status_fd)
            status_fd = None


def _spawn(argv: list[str]) -> int:
    try:
        return os.posix_spawn(argv[0], argv, os.environ, setsigdef=_IGNORED)
    except OSError as exc:
        os.write(2, f"cannot start {argv[0]}: {exc.strerror}\n".encode())
        raise SystemExit(127) from None


def main(args: list[str]) -> int:
    """``WATCH STATUS -- ARGV...`` (see the module docstring)."""
    watch, status_fd = int(args[0]), int(args[1])
    argv = args[3:]
    for number in _IGNORED:
        signal.signal(number, signal.SIG_IGN)
    # Imported here, in the reaper's own process: the engine imports this module for
    # `descendants` and `kill_below` alone, and ``ai-agent tools`` need not load ctypes.
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda number, frame: None)
    for fd in (watch, status_fd, wake_r, wake_w):
        os.set_inheritable(fd, False)
    command = _spawn(argv)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 1)
    os.dup2(null, 2)
    pending: int | None = status_fd
    while True:
        ready, _, _ = select.select([watch, wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 4096)
            pending = _reap(pending, command)
        if watch in ready:  # the engine is done with the call, or gone
            kill_below(os.getpid())
            return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
