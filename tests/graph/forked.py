"""Agent processes forked from a server that imported the engine once: real processes, started fast.

Importing the engine takes seconds; the crash tests start dozens of processes. Each one here is
forked from a ``multiprocessing`` fork server that has already imported ``proc_agent`` (and so the
engine), so it starts in a fraction of that. It is still a real process of its own: its own pid,
memory and open files, killed by a real SIGKILL. `start` returns an object with the part of
``subprocess.Popen`` the tests use.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import tempfile
from pathlib import Path

from tests.graph import proc_agent

__all__ = ["Forked", "start"]

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["tests.graph.forked", "tests.graph._preload"])


def _child(argv: list[str], env: dict[str, str], out: str, err: str) -> None:
    os.environ.clear()
    os.environ.update(env)
    for fd, path in ((1, out), (2, err)):
        os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115 - fd 1 for the child
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
    sys.exit(proc_agent.main(argv))


class Forked:
    """One forked agent process (``returncode`` is ``-signal`` when a signal ended it)."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="proc-agent-")
        self._out = os.path.join(self._dir.name, "out")
        self._err = os.path.join(self._dir.name, "err")
        self._proc = _CONTEXT.Process(target=_child, args=(argv, env, self._out, self._err))
        self._proc.start()
        self.pid: int = self._proc.pid or 0

    @property
    def returncode(self) -> int | None:
        return self._proc.exitcode

    def poll(self) -> int | None:
        return self.returncode

    def send_signal(self, sig: int) -> None:
        os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int | None:
        self._proc.join(timeout)
        if self._proc.exitcode is None:
            raise TimeoutError(f"process {self.pid} still runs after {timeout}s")
        return self.returncode

    def communicate(
        self, input: str | None = None, timeout: float | None = None
    ) -> tuple[str, str]:
        self.wait(timeout)
        out, err = Path(self._out).read_text(), Path(self._err).read_text()
        self._dir.cleanup()
        return out, err


def start(db: Path, work: Path, *args: str, **env: str) -> Forked:
    """``proc_agent.py DB WORK ARGS...`` in a forked process, with ``env`` added."""
    return Forked([str(db), str(work), *args], {**os.environ, **env})
