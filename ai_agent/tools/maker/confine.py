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
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import platform
import shutil
import signal
import socket
import struct
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ai_agent.errors import SandboxUnavailableError
from ai_agent.tools.builtin.bwrap import root_dirs
from ai_agent.tools.builtin.cgroups import CallCgroup, make_call_cgroup
from ai_agent.tools.builtin.protected import ProtectedPaths
from ai_agent.tools.builtin.sandbox import Sandbox, SandboxError
from ai_agent.tools.maker.limits import SandboxLimits

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

WORKSPACE = "/workspace"
_SANDBOX_UID = "65534"
_KEEP_LOG = 4000  # bytes of stdout/stderr kept for the result's meta
_REAP_SECONDS = 5.0
# Tasks in the call's pids cgroup that are not the tool's: bubblewrap's monitor and the
# sandbox's init. They are allowed on top of max_processes.
_HELPERS = 2
MAX_DEPTH = 64  # lists and objects inside one another in a frame (results included)
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
HttpHandler = Callable[[dict[str, Any], float], Awaitable[dict[str, Any]]]


class Violation(Exception):  # noqa: N818 - internal signal, surfaced as ToolPolicyViolation
    """Something the sandboxed tool did that ends the call as a policy violation.

    Args:
        reason: A short code (``output_cap``, ``host_not_allowed``, ``protocol``...), kept in
            the ``tool_policy_blocked`` event.
        message: What happened, for a person.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class ConfinedCall:
    """One call of a generated tool, with everything the sandbox is built from.

    Args:
        name: The tool's name (for messages and the module's file name).
        code: The module's source (already checked against its approved hash).
        args: The call's arguments (JSON data).
        base_dir: The workspace the allowed paths are relative to.
        read_paths: Allowed paths mounted read-only.
        write_paths: Allowed paths mounted writable.
        secrets: Environment of the tool: declared secret name -> value.
        protected: The engine's own state: no mount may hold it or lie inside it.
        limits: The limits of the call.
        http: The broker for ``http`` requests, or None when the tool may not make any.
    """

    name: str
    code: str
    args: dict[str, Any]
    base_dir: Path
    read_paths: tuple[str, ...] = ()
    write_paths: tuple[str, ...] = ()
    secrets: dict[str, str] = field(default_factory=dict)
    protected: ProtectedPaths = field(default_factory=ProtectedPaths)
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    http: HttpHandler | None = None


@dataclass(slots=True)
class Outcome:
    """How a confined call ended.

    Attributes:
        kind: ``ok`` (a result), ``error`` (the tool raised), ``timeout`` (killed at the
            deadline), ``violation`` (killed for a policy violation) or ``crashed`` (it died
            without a result).
        value: The tool's result (``ok``).
        error: What happened, for a person (every kind but ``ok``).
        reason: The violation's reason code (``output_cap``, ``forbidden_syscall``...).
        stdout: The first bytes the tool printed (decoded).
        stderr: The first bytes of its standard error (decoded).
        received: Bytes the engine read from the sandbox in total.
        seconds: Wall time of the call.
        exit_status: bwrap's exit status (128 + N when the tool died of signal N).
        forks_refused: Forks the call's pids cgroup refused at ``max_processes``.
    """

    kind: str
    value: Any = None
    error: str | None = None
    reason: str | None = None
    stdout: str = ""
    stderr: str = ""
    received: int = 0
    seconds: float = 0.0
    exit_status: int | None = None
    forks_refused: int = 0


def find_bwrap() -> str:
    """The bwrap executable to confine generated tools with.

    Returns:
        Its path.

    Raises:
        SandboxUnavailableError: there is no ``bwrap`` on PATH, or the machine is not x86_64
            (the seccomp filter is written for it); the message says what to do.
    """
    path = shutil.which("bwrap")
    if path is None:
        raise SandboxUnavailableError(
            "generated tools run only inside bubblewrap, which is not installed (no 'bwrap' on "
            "PATH); install the Debian package 'bubblewrap'. They never run in the engine's "
            "process instead."
        )
    if platform.machine() not in ("x86_64", "AMD64"):
        raise SandboxUnavailableError(
            f"the seccomp filter of generated tools is written for x86_64, not "
            f"{platform.machine()}; generated tools are refused here rather than run unfiltered"
        )
    return path


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _python_args() -> tuple[str, list[str]]:
    """The interpreter to run and the mounts it needs beyond ``/usr/lib``."""
    exe = Path(os.path.realpath(sys.executable))
    prefix = Path(os.path.realpath(sys.base_prefix))
    args: list[str] = []
    usr = Path("/usr")
    if not _under(prefix, usr):
        args += ["--ro-bind", str(prefix), str(prefix)]
    if not _under(exe, prefix) and not _under(exe, usr / "lib"):
        args += ["--ro-bind", str(exe), str(exe)]
    return str(exe), args


@contextlib.contextmanager
def _mounts(call: ConfinedCall) -> Iterator[tuple[list[str], list[int]]]:
    """Bwrap options and descriptors for the allowed paths, held open until bwrap has them."""
    box = Sandbox(call.base_dir)
    protected = call.protected.current()
    wanted = [(p, False) for p in call.read_paths] + [(p, True) for p in call.write_paths]
    if wanted:
        _refuse_linked_state(protected)
    # Parents before children, so a writable subdirectory is mounted over a read-only parent.
    wanted.sort(key=lambda item: (item[0].count("/"), item[0]))
    with contextlib.ExitStack() as stack:
        args: list[str] = []
        fds: list[int] = []
        for rel, writable in wanted:
            try:
                target = box.resolve(rel, check_extension=False)
                # Either way round: a mount holding the engine's state, or one inside it
                # (``toolsmaker_dir/specs`` would let a tool rewrite another tool's spec).
                entry = protected.overlapping(Path(os.path.realpath(target.path)))
                if entry is not None:
                    raise Violation(
                        "path_refused",
                        f"allowed path {rel!r} overlaps the engine's own files ({entry.what}); "
                        "not mounted",
                    )
                fd = stack.enter_context(box.directory(target.parts, create=writable))
            except SandboxError as exc:
                if exc.code == "NOT_FOUND" and not writable:
                    continue  # nothing to read there: the tool sees no such directory
                raise Violation("path_refused", f"allowed path {rel!r}: {exc}") from None
            fds.append(fd)
            option = "--bind-fd" if writable else "--ro-bind-fd"
            args += [option, str(fd), f"{WORKSPACE}/{rel}"]
        yield args, fds


def _refuse_linked_state(protected: ProtectedPaths) -> None:
    """No mount while a file of the engine's has a second name: it could be in the mount."""
    linked = protected.linked()
    if linked:
        raise Violation(
            "path_refused",
            f"{linked[0].what} ({linked[0].path}) has more than one hard link, and the other "
            "name may lie in an allowed path; nothing is mounted until the extra link is removed",
        )


def bwrap_command(
    bwrap: str, call: ConfinedCall, mounts: list[str], channel: int, info: int
) -> list[str]:
    """The full bwrap command line of one call (see the module docstring for each part).

    Args:
        bwrap: The bwrap executable.
        call: The call (its limits size ``/tmp``).
        mounts: The options that mount the allowed paths (``--ro-bind-fd``/``--bind-fd``).
        channel: The descriptor of the sandbox's end of the socket pair (passed to the runner).
        info: The descriptor bwrap writes its ``--info-fd`` record to.

    Returns:
        The argv, from ``bwrap`` to the runner's arguments.
    """
    exe, python_mounts = _python_args()
    limits = call.limits
    args = [
        bwrap,
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--uid",
        _SANDBOX_UID,
        "--gid",
        _SANDBOX_UID,
        "--die-with-parent",
        "--new-session",
        "--ro-bind",
        "/usr/lib",
        "/usr/lib",
        "--ro-bind-try",
        "/usr/lib64",
        "/usr/lib64",
        "--ro-bind-try",
        "/usr/share/zoneinfo",
        "/usr/share/zoneinfo",
        *root_dirs(("lib", "lib64")),
        *python_mounts,
        "--dev-bind",
        "/dev/null",
        "/dev/null",
        "--dev-bind",
        "/dev/zero",
        "/dev/zero",
        "--dev-bind",
        "/dev/urandom",
        "/dev/urandom",
    ]
    if limits.tmp_mb > 0:
        args += ["--size", str(limits.tmp_mb << 20), "--tmpfs", "/tmp"]  # noqa: S108
    args += ["--dir", WORKSPACE, *mounts, "--chdir", WORKSPACE, "--remount-ro", "/"]
    args += ["--info-fd", str(info), "--", exe, "-I", "-S", "-B", "-X", "utf8"]
    args += ["-c", _runner_source(), str(channel)]
    return args


def _runner_source() -> str:
    return (Path(__file__).parent / "_child.py").read_text(encoding="utf-8")


def _frame(message: dict[str, Any]) -> bytes:
    data = json.dumps(message, ensure_ascii=False, default=str).encode()
    return struct.pack(">I", len(data)) + data


class _Session:
    """Reads everything the sandbox sends, answers HTTP requests, counts bytes."""

    def __init__(self, call: ConfinedCall, proc: asyncio.subprocess.Process) -> None:
        self.call = call
        self.proc = proc
        self.budget = call.limits.max_output_bytes
        self.received = 0
        self.logs = {"stdout": bytearray(), "stderr": bytearray()}
        self.final: dict[str, Any] | None = None

    def count(self, size: int) -> None:
        self.received += size
        if self.received > self.budget:
            raise Violation(
                "output_cap",
                f"sent more than its output cap of {self.budget} bytes and was killed",
            )

    async def drain(self, stream: asyncio.StreamReader | None, name: str) -> None:
        if stream is None:  # pragma: no cover - both are pipes
            return
        kept = self.logs[name]
        while chunk := await stream.read(1 << 16):
            self.count(len(chunk))
            if len(kept) < _KEEP_LOG:
                kept += chunk[: _KEEP_LOG - len(kept)]

    async def converse(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, deadline: float
    ) -> None:
        writer.write(
            _frame(
                {
                    "code": self.call.code,
                    "filename": f"{self.call.name}.py",
                    "args": self.call.args,
                    "secrets": sorted(self.call.secrets),
                    "rlimits": self.call.limits.rlimits(),
                    "seccomp": self.call.limits.seccomp,
                }
            )
        )
        await writer.drain()
        while True:
            try:
                header = await reader.readexactly(4)
            except asyncio.IncompleteReadError:
                return
            (length,) = struct.unpack(">I", header)
            self.count(4 + length)
            message = _parse(await reader.readexactly(length))
            op = message.get("op")
            if op == "http":
                writer.write(_frame(await self._http(message, deadline)))
                await writer.drain()
            elif op in ("result", "error", "setup_failed") and self.final is None:
                self.final = message
            else:
                raise Violation("protocol", f"sent an unexpected message ({str(op)[:40]!r})")

    async def _http(self, message: dict[str, Any], deadline: float) -> dict[str, Any]:
        if self.call.http is None:
            raise Violation(
                "http_not_declared",
                "tried to make an HTTP request without the http capability",
            )
        return await self.call.http(message, deadline)


def _parse(data: bytes) -> dict[str, Any]:
    try:
        message = json.loads(data)
    except ValueError:
        raise Violation("protocol", "sent a message that is not JSON") from None
    except RecursionError:
        # The engine's JSON parser recurses once per level; the depth is the tool's to choose.
        message = None
    if message is None or _too_deep(message):
        raise Violation(
            "protocol", f"sent a message nested too deeply (over {MAX_DEPTH} levels) to read"
        )
    if not isinstance(message, dict):
        raise Violation("protocol", "sent a message that is not an object")
    return message


def _too_deep(value: Any) -> bool:
    """True when ``value`` nests lists and objects deeper than MAX_DEPTH (checked iteratively).

    What the engine accepts travels on into results, checkpoints and logs, whose serialisers
    recurse too; a bound here keeps a tool from breaking them.
    """
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            if depth > MAX_DEPTH:
                return True
            stack += [(child, depth + 1) for child in item]
    return False


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
        with _mounts(call) as (mounts, fds):
            argv = bwrap_command(bwrap, call, mounts, child.fileno(), info_w)
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
    session = _Session(call, proc)
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
            if store is not None and len(store) < _KEEP_LOG:
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
    return bytes(kept[:_KEEP_LOG])


class _NotStartedError(Exception):
    """bwrap exited before its sandbox existed (it wrote no ``--info-fd`` record)."""


def _ending(session: _Session, outcome: Outcome) -> Outcome:
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
