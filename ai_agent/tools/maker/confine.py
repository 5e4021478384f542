"""The boundary: each call of a generated tool runs in its own process, confined by the OS.

One call = one ``bwrap`` process (Debian ``bubblewrap``) running the standard-library runner
(`ai_agent.tools.maker._child`) with the tool's code. What holds the tool in, and who
enforces it:

=========================  ===================================================================
what                       how (enforced by)
=========================  ===================================================================
sees no host files         a new mount namespace whose root is an empty read-only tmpfs; only
                           ``/usr/lib*``, the Python installation (read-only), three device
                           nodes, a size-capped ``/tmp`` and the tool's ``allowed_paths`` are
                           mounted (kernel: mount namespace, ``--remount-ro /``)
allowed paths              opened by the engine from the workspace one component at a time
                           with ``O_NOFOLLOW`` and handed to bwrap as descriptors
                           (``--ro-bind-fd``/``--bind-fd``): read-only for ``fs_read``,
                           writable for ``fs_write``; a symlink swapped in cannot redirect them
no network                 a new, empty network namespace (only a down ``lo``); HTTP goes
                           through the engine's broker over a socket pair
no other processes         a new PID namespace: the engine and everything else are invisible;
                           no ``/proc`` is mounted
runs no program, no fork   seccomp (installed by the runner before the tool's code loads):
                           execve/clone/fork/socket/ptrace/mount/... kill the process, and
                           so does making a set-user-ID or set-group-ID file
no privileges              user namespace, uid 65534, no capabilities, no_new_privs, no
                           further user namespaces (``--disable-userns``)
environment                only the declared secrets (bwrap starts from the environment the
                           engine gives it, which holds nothing else)
CPU, memory, files, fds    rlimits: RLIMIT_CPU, RLIMIT_AS, RLIMIT_FSIZE, RLIMIT_NOFILE,
                           RLIMIT_CORE=0 (soft = hard, so the tool cannot raise them)
processes                  besides seccomp, a pids cgroup of the call's own
                           (`ai_agent.tools.builtin.cgroups`): ``max_processes`` tasks, for an
                           engine running as root too (kernel: pids controller)
time                       the engine kills the sandbox's PID 1 (SIGKILL, via a pidfd) at the
                           deadline; the kernel then kills every process in the namespace;
                           ``--die-with-parent`` does the same if the engine dies
output                     the engine counts every byte it reads (stdout, stderr, frames) and
                           kills the call past ``max_output_bytes``
=========================  ===================================================================

Where bubblewrap is missing (or cannot create its namespaces), calls raise
`ai_agent.errors.SandboxUnavailableError`: there is no fallback to the engine's process.

This module starts, supervises and kills the sandbox and says how the call ended; the command
line is built in `ai_agent.tools.maker.sandbox_setup`, the engine's end of the socket pair is
`ai_agent.tools.maker.channel`, and the call's types are in `ai_agent.tools.maker.calls`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import time
from typing import Any

from ai_agent.errors import SandboxUnavailableError
from ai_agent.tools.builtin.cgroups import CallCgroup, make_call_cgroup
from ai_agent.tools.builtin.sandbox import SandboxError
from ai_agent.tools.maker.calls import ConfinedCall, Outcome, Violation
from ai_agent.tools.maker.channel import KEEP_LOG, MAX_DEPTH, Session
from ai_agent.tools.maker.sandbox_setup import WORKSPACE, bwrap_command, find_bwrap, mounts

__all__ = [
    "MAX_DEPTH",
    "WORKSPACE",
    "ConfinedCall",
    "Outcome",
    "Violation",
    "bwrap_command",
    "find_bwrap",
    "run_confined",
]

_REAP_SECONDS = 5.0
# Tasks in the call's pids cgroup that are not the tool's: bubblewrap's monitor and the
# sandbox's init. They are allowed on top of max_processes.
_HELPERS = 2
_SIGNALS = {
    signal.SIGSYS: (
        "forbidden_syscall",
        "made a system call the sandbox forbids (starting a "
        "program, a process or a thread, opening a socket, making a set-user-ID file, ...) "
        "and was killed",
    ),
    signal.SIGXCPU: ("cpu_limit", "used up its CPU time limit and was killed"),
    signal.SIGXFSZ: ("file_size_limit", "wrote a file past its size limit and was killed"),
}


async def _read_info(fd: int) -> int | None:
    """The host PID of the sandbox's PID 1, from bwrap's ``--info-fd`` (None if it failed)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", 0)
    )
    try:
        data = b""
        while chunk := await reader.read(4096):
            data += chunk
            with contextlib.suppress(ValueError):
                return int(json.loads(data)["child-pid"])
        return None
    finally:
        transport.close()


class _Killer:
    """Kills the whole sandbox: its PID 1 through a pidfd (no PID reuse race), and bwrap."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.pidfd: int | None = None

    def watch(self, pid: int | None) -> None:
        if pid is not None:
            with contextlib.suppress(OSError):
                self.pidfd = os.pidfd_open(pid)

    def kill(self) -> None:
        if self.pidfd is not None:
            # PID 1 of a PID namespace dying makes the kernel kill every process in it.
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)

    def close(self) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


async def run_confined(call: ConfinedCall) -> Outcome:
    """Run one call of a generated tool in its sandbox and say how it ended.

    Args:
        call: The tool's code, arguments, allowed paths, secrets, limits and broker.

    Returns:
        The outcome: ``ok`` with the value, ``error``, ``timeout``, ``violation`` (with its
        reason) or ``crashed``, and what the sandbox printed. The sandbox is gone, with
        everything it started, when this returns.

    Raises:
        SandboxUnavailableError: bubblewrap is missing, or could not set up the sandbox.
    """
    bwrap = find_bwrap()
    try:
        group = await make_call_cgroup(call.limits.max_processes + _HELPERS)
    except SandboxError as exc:
        raise SandboxUnavailableError(f"generated tools: {exc}") from None
    try:
        outcome = await _run(bwrap, call, group)
        outcome.forks_refused = group.refused() if group else 0
    finally:
        if group is not None:
            await group.close()
    return outcome


async def _run(bwrap: str, call: ConfinedCall, group: CallCgroup | None) -> Outcome:
    """Start the sandbox (inside ``group`` when there is one) and supervise it to its end."""
    started = time.perf_counter()
    parent, child = socket.socketpair()
    info_r, info_w = os.pipe()
    try:
        with mounts(call) as (options, fds):
            argv = bwrap_command(bwrap, call, options, child.fileno(), info_w)
            proc = await asyncio.create_subprocess_exec(
                *(group.enter(argv) if group else argv),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=dict(call.secrets),
                pass_fds=(child.fileno(), info_w, *fds),
                start_new_session=True,
            )
    except Violation as exc:
        parent.close()
        os.close(info_r)
        return Outcome("violation", error=str(exc), reason=exc.reason)
    finally:
        child.close()
        os.close(info_w)
    outcome = await _supervise(call, proc, parent, info_r)
    outcome.seconds = round(time.perf_counter() - started, 4)
    return outcome


async def _supervise(
    call: ConfinedCall, proc: asyncio.subprocess.Process, sock: socket.socket, info_r: int
) -> Outcome:
    killer = _Killer(proc)
    session = Session(call, proc)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + call.limits.timeout
    reader, writer = await asyncio.open_connection(sock=sock)
    tasks: list[asyncio.Task[Any]] = []
    kind, error, reason = "", None, None
    try:
        pid = await asyncio.wait_for(_read_info(info_r), call.limits.timeout)
        if pid is None:
            raise _NotStartedError
        killer.watch(pid)
        tasks = [
            asyncio.ensure_future(session.drain(proc.stdout, "stdout")),
            asyncio.ensure_future(session.drain(proc.stderr, "stderr")),
            asyncio.ensure_future(session.converse(reader, writer, deadline)),
            asyncio.ensure_future(proc.wait()),
        ]
        await asyncio.wait_for(asyncio.gather(*tasks), max(deadline - loop.time(), 0.001))
    except TimeoutError:
        kind, error = "timeout", f"did not finish within {call.limits.timeout:g}s"
    except Violation as exc:
        kind, error, reason = "violation", str(exc), exc.reason
    except (ConnectionError, asyncio.IncompleteReadError):
        kind, error = "crashed", "the sandbox closed its channel mid-message"
    except _NotStartedError:
        kind = "not_started"
    finally:
        killer.kill()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
        stderr = await _reap(proc, keep=kind == "not_started")
        killer.close()
    outcome = Outcome(kind, error=error, reason=reason, exit_status=proc.returncode)
    outcome.stdout = session.logs["stdout"].decode("utf-8", "replace")
    outcome.stderr = (session.logs["stderr"] or stderr).decode("utf-8", "replace")
    outcome.received = session.received
    if kind == "not_started":
        raise SandboxUnavailableError(
            "bubblewrap could not set up the sandbox of generated tools: "
            f"{outcome.stderr.strip()[:500] or 'no reason given'}"
        )
    return outcome if kind else _ending(session, outcome)


async def _reap(proc: asyncio.subprocess.Process, *, keep: bool) -> bytes:
    """Wait for the killed sandbox, reading its pipes to the end (what ``keep`` says is kept).

    asyncio resolves ``wait()`` only once both pipes reached end of file; nobody reading them
    would leave a full pipe buffer that never does, so what is left is read and dropped.
    """

    async def rest(stream: asyncio.StreamReader | None, store: bytearray | None) -> None:
        while stream is not None and (chunk := await stream.read(1 << 16)):
            if store is not None and len(store) < KEEP_LOG:
                store += chunk

    kept = bytearray()
    waiting = asyncio.gather(rest(proc.stdout, None), rest(proc.stderr, kept if keep else None))
    try:
        await asyncio.wait_for(asyncio.shield(waiting), _REAP_SECONDS)
    except TimeoutError:  # pragma: no cover - everything in the namespace is dead by now
        waiting.cancel()
        transport = getattr(proc, "_transport", None)  # asyncio has no public close
        if transport is not None:
            transport.close()
    await proc.wait()
    return bytes(kept[:KEEP_LOG])


class _NotStartedError(Exception):
    """bwrap exited before its sandbox existed (it wrote no ``--info-fd`` record)."""


def _ending(session: Session, outcome: Outcome) -> Outcome:
    """Classify a sandbox that exited on its own (or died) from its last frame and status."""
    final = session.final or {}
    status = outcome.exit_status or 0
    if final.get("op") == "result":
        outcome.kind, outcome.value = "ok", final.get("value")
        return outcome
    if final.get("op") == "setup_failed":
        raise SandboxUnavailableError(
            "the sandbox of generated tools could not limit itself: "
            f"{str(final.get('message'))[:500]}"
        )
    if final.get("op") == "error":
        outcome.kind = "error"
        outcome.error = f"{final.get('type')}: {final.get('message')}"
        path = final.get("path")
        outcome.path = path if isinstance(path, str) else None
        return outcome
    if status > 128 and (status - 128) in _SIGNALS:
        reason, text = _SIGNALS[signal.Signals(status - 128)]
        outcome.kind, outcome.reason, outcome.error = "violation", reason, text
        return outcome
    outcome.kind = "crashed"
    outcome.error = f"exited with status {status} without a result" + (
        f": {outcome.stderr.strip()[-500:]}" if outcome.stderr.strip() else ""
    )
    return outcome
