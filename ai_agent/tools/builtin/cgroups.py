"""A pids cgroup per call: the process limit that holds for root too.

``RLIMIT_NPROC`` (`ai_agent.tools.builtin.limits`) is never applied to root, not even inside a
user namespace that maps to root, and engines run as root in containers and CI all the time.
The kernel's ``pids`` cgroup controller counts every task (process or thread) in a cgroup and
its children and refuses ``fork``/``clone`` past ``pids.max`` with ``EAGAIN``, whoever the user
is. So each ``run_bash`` command and each call of a generated tool runs in a cgroup of its own,
as ``systemd-run -p TasksMax=N`` does:

1. `locate` finds where the per-call cgroups can go: below the engine's own cgroup in the
   cgroup v2 hierarchy when that cgroup may hand the ``pids`` controller to its children
   (it is then enabled in its ``cgroup.subtree_control``; the pids controller is a threaded
   one, so a cgroup that holds processes may enable it, and the per-call cgroups are then
   threaded ones), otherwise below the engine's cgroup in a v1 ``pids`` hierarchy. The place
   must be writable: as root, or a cgroup delegated to the engine's user (systemd:
   ``Delegate=yes``).
2. `make_call_cgroup` (`call_cgroup` for a block) makes a cgroup there named
   ``ai-agent.<pid namespace>.<engine pid>.<its start time>.<random>``, with ``pids.max``
   set, and `CallCgroup.enter` prefixes the command line with a
   ``/bin/sh`` that writes its own PID to the cgroup's ``cgroup.procs`` and then becomes
   the command (``exec``): everything the command starts is born inside. If that write
   fails, the command does not run.
3. When the call ends its cgroup is removed; whatever is still in it is killed first.
   ``pids.events`` says whether a fork was refused at the limit, which makes the
   ``RESOURCE_LIMIT`` error certain rather than guessed from what the command printed.
4. An engine killed by SIGKILL cannot remove its cgroups. Their processes do not live on
   (``run_bash``'s reaper and bubblewrap's ``--die-with-parent`` kill them), and the next
   `make_call_cgroup`, in any engine of the same PID namespace, removes every cgroup whose
   engine is gone, killing anything still inside.

Where no such cgroup can be made (no pids controller, a read-only cgroup file system, a v2
cgroup not delegated), the call runs with its rlimits only. For an ordinary user those hold;
for root the process limit then does not, and the tools say so: a WARNING when the tool is
made, and their description and preview (`process_limit_gap`). If the place was found but the
cgroup cannot be made, the call is refused rather than run without its limit.

Why not the PID namespace's own ``pid_max`` (one per namespace since Linux 6.14): it would
cover only sandboxed calls, bubblewrap has no option to set it (something holding
CAP_SYS_ADMIN inside the sandbox would have to, before the capabilities are dropped), and
the kernel refuses values below 301, so it cannot express ``max_processes = 64`` (the
generated tools' default) or less.

What it does not hold against: a command without the OS sandbox running as root can move
itself out of its cgroup (as it can raise its rlimits); under bubblewrap it has no
capabilities and no cgroup file system, and cannot.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import secrets
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from ai_agent.tools.builtin.sandbox import SandboxError

__all__ = [
    "PROC_SELF",
    "CallCgroup",
    "Placement",
    "call_cgroup",
    "call_name",
    "locate",
    "make_call_cgroup",
    "members",
    "owner_of",
    "process_limit_gap",
    "warn_process_limit_gap",
]

log = logging.getLogger("ai_agent.tools.limits")

# Where the engine's mounts and cgroups are read (tests point it at a made-up one).
PROC_SELF = Path("/proc/self")
_PREFIX = "ai-agent"
_NAME = re.compile(rf"^{_PREFIX}\.(\d+)\.(\d+)\.(\d+)\.[0-9a-f]+$")
# The launcher: joins the cgroup named by $0, then becomes the command (same PID).
_ENTER = (
    'echo $$ > "$0" || { echo "could not enter the call\'s pids cgroup ($0); the command did '
    'not run" >&2; exit 126; }; exec "$@"'
)
_REMOVE_ROUNDS = 100  # kill-and-wait rounds before a cgroup that will not empty is left
_REMOVE_PAUSE = 0.01  # seconds between them: SIGKILLed tasks take a moment to exit


@dataclass(frozen=True, slots=True)
class Placement:
    """Where per-call cgroups go (``parent``, cgroup ``version`` 1 or 2), or why nowhere.

    Attributes:
        parent: The engine's own cgroup directory, or None when none can be used.
        version: 2 (unified hierarchy) or 1 (a ``pids`` hierarchy); 0 with no parent.
        reason: Why no cgroup can be made (empty when ``parent`` is set).
    """

    parent: Path | None
    version: int = 0
    reason: str = ""


def _unescape(field: str) -> str:
    """A mountinfo path (spaces and the like are written as octal escapes)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _mounts(proc: Path) -> list[tuple[str, Path, str, set[str]]]:
    """``(root, mount point, fstype, super options)`` of every cgroup mount, in order."""
    found = []
    for line in (proc / "mountinfo").read_text().splitlines():
        left, sep, right = line.partition(" - ")
        fields, rest = left.split(), right.split()
        if not sep or len(fields) < 5 or len(rest) < 3 or not rest[0].startswith("cgroup"):
            continue
        root, point = _unescape(fields[3]), Path(_unescape(fields[4]))
        found.append((root, point, rest[0], set(rest[2].split(","))))
    return found


def _engine_cgroups(proc: Path) -> dict[str, str]:
    """Controller list (``""`` for v2) -> the engine's cgroup path, from ``/proc/self/cgroup``."""
    paths = {}
    for line in (proc / "cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            paths[name] = path
    return paths


def _below(root: str, point: Path, path: str) -> Path | str:
    """The directory of cgroup ``path`` under a mount of ``root`` at ``point``, or why not."""
    relative = os.path.relpath(path, root)
    if relative == ".." or relative.startswith("../"):
        return f"the engine's cgroup ({path}) is not under the one mounted at {point}"
    directory = point if relative == "." else point / relative
    if not directory.is_dir():
        return f"the engine's cgroup is not visible at {directory}"
    if not os.access(directory, os.W_OK):
        return f"the engine's cgroup ({directory}) is not writable by it (not delegated?)"
    return directory


def _v2(proc: Path, mounts: list[tuple[str, Path, str, set[str]]]) -> Path | str:
    unified = [(root, point) for root, point, kind, _ in mounts if kind == "cgroup2"]
    path = _engine_cgroups(proc).get("")
    if not unified:
        return "no cgroup v2 file system is mounted"
    if path is None:
        return "the engine has no cgroup v2 entry"
    directory = _below(*unified[0], path)
    if isinstance(directory, str):
        return directory
    if "pids" not in (directory / "cgroup.controllers").read_text().split():
        return f"the pids controller is not available to the engine's cgroup ({directory})"
    enabled = directory / "cgroup.subtree_control"
    if "pids" not in enabled.read_text().split():
        try:
            enabled.write_text("+pids")
        except OSError as exc:
            return f"the pids controller cannot be enabled in {enabled} ({exc.strerror})"
    return directory


def _v1(proc: Path, mounts: list[tuple[str, Path, str, set[str]]]) -> Path | str:
    pids = [
        (root, point) for root, point, kind, opts in mounts if kind == "cgroup" and "pids" in opts
    ]
    path = _engine_cgroups(proc).get("pids")
    if not pids or path is None:
        return "no cgroup v1 pids hierarchy is mounted"
    return _below(*pids[0], path)


def locate(proc: Path | None = None) -> Placement:
    """Where this engine's per-call cgroups go: cgroup v2 first, then a v1 pids hierarchy.

    Enabling the pids controller for the children of the engine's v2 cgroup is the one change
    it may make (writing ``+pids`` to its ``cgroup.subtree_control``).

    Args:
        proc: The ``/proc/self`` to read ``mountinfo`` and ``cgroup`` from (tests give another).

    Returns:
        The placement, or one with ``parent=None`` and the reasons.
    """
    proc = proc or PROC_SELF
    try:
        mounts = _mounts(proc)
        reasons = []
        for version, find in ((2, _v2), (1, _v1)):
            found = find(proc, mounts)
            if isinstance(found, Path):
                return Placement(found, version)
            reasons.append(f"cgroup v{version}: {found}")
    except OSError as exc:
        return Placement(None, reason=f"the cgroups cannot be read ({exc})")
    if not any(kind.startswith("cgroup") for _, _, kind, _ in mounts):
        return Placement(None, reason="no cgroup file system with the pids controller is mounted")
    return Placement(None, reason="; ".join(reasons))


def process_limit_gap(setting: str) -> str | None:
    """Why ``setting`` (a process limit) does not hold for this engine, or None when it does.

    It holds when per-call pids cgroups can be made, or when the engine is not root (then
    RLIMIT_NPROC holds).
    """
    where = locate()
    if where.parent is not None or os.getuid() != 0:
        return None
    return (
        f"the engine runs as root, which RLIMIT_NPROC does not bind, and no pids cgroup can be "
        f"made ({where.reason}); {setting} is not enforced. Run the engine in a cgroup it may "
        "manage (cgroup v2 with the pids controller delegated, e.g. systemd's Delegate=yes, or "
        "a writable v1 pids hierarchy), or as an ordinary user."
    )


def warn_process_limit_gap(setting: str) -> str | None:
    """`process_limit_gap`, also logged as a WARNING (once per tool: call it when it is made)."""
    gap = process_limit_gap(setting)
    if gap is not None:
        log.warning("process limit not enforced: %s", gap)
    return gap


def _start_time(stat: str) -> int:
    """The start time (clock ticks after boot) in a ``/proc/PID/stat`` line."""
    return int(stat.rsplit(")", 1)[1].split()[19])


def _pid_namespace() -> int:
    return os.stat("/proc/self/ns/pid").st_ino


def call_name(*, pid: int, started: int) -> str:
    """The name of a per-call cgroup of the engine ``pid`` (started at ``started``)."""
    return f"{_PREFIX}.{_pid_namespace()}.{pid}.{started}.{secrets.token_hex(4)}"


def owner_of(name: str) -> int | None:
    """The PID of the engine that made the per-call cgroup ``name`` (in this PID namespace).

    None for any other name, and for a cgroup made in another PID namespace, whose PIDs mean
    nothing here.
    """
    match = _NAME.match(name)
    if match is None or int(match.group(1)) != _pid_namespace():
        return None
    return int(match.group(2))


def _stale(name: str) -> bool:
    """True for a per-call cgroup of an engine that is no longer running.

    Gone means no such process, or another one under its PID (it started at another time).
    A process that cannot be read (``/proc`` mounted with ``hidepid``) counts as running.
    """
    match = _NAME.match(name)
    if match is None or int(match.group(1)) != _pid_namespace():
        return False
    try:
        stat = Path(f"/proc/{match.group(2)}/stat").read_text()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return _start_time(stat) != int(match.group(3))


class CallCgroup:
    """The pids cgroup of one call (made by `call_cgroup`).

    Args:
        path: Its directory.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def enter(self, argv: list[str]) -> list[str]:
        """``argv`` run inside this cgroup: a shell joins it, then becomes ``argv`` (``exec``)."""
        return ["/bin/sh", "-c", _ENTER, str(self.path / "cgroup.procs"), *argv]

    def refused(self) -> int:
        """How many forks the limit refused (``max`` in ``pids.events``)."""
        with contextlib.suppress(OSError, ValueError):
            for line in (self.path / "pids.events").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "max":
                    return int(value)
        return 0

    async def close(self) -> None:
        """Kill whatever is still inside, then remove the cgroup (a WARNING if it stays)."""
        if not await _remove(self.path):
            log.warning("the pids cgroup %s of a finished call could not be removed", self.path)


def members(path: Path) -> list[int]:
    """The tasks in the cgroup ``path``: its processes, or (a threaded v2 cgroup) its threads.

    A threaded cgroup's ``cgroup.procs`` cannot be read; SIGKILL to any thread ends its
    whole process, so either list serves to kill them.
    """
    for name in ("cgroup.procs", "cgroup.threads"):
        try:
            return [int(pid) for pid in (path / name).read_text().split()]
        except FileNotFoundError:
            return []
        except OSError:
            continue
    return []


def _kill_members(path: Path) -> None:
    for pid in members(path):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _removed(path: Path) -> bool:
    """Try to remove the cgroup once; while it still holds tasks, SIGKILL them (False)."""
    try:
        path.rmdir()
    except FileNotFoundError:
        return True
    except OSError:
        _kill_members(path)
        return False
    return True


async def _remove(path: Path) -> bool:
    """Remove the cgroup ``path``, killing what is inside and waiting for it to exit."""
    for _ in range(_REMOVE_ROUNDS):
        if _removed(path):
            return True
        await asyncio.sleep(_REMOVE_PAUSE)
    return False


def _stale_groups(parent: Path) -> list[Path]:
    """The per-call cgroups under ``parent`` of engines that are gone."""
    try:
        return [entry for entry in parent.iterdir() if _stale(entry.name)]
    except OSError:
        return []


async def _sweep(parent: Path) -> None:
    """Remove the per-call cgroups of engines that are gone (killed ones leave theirs)."""
    for group in _stale_groups(parent):
        await _remove(group)


def _make(parent: Path, limit: int, name: str | None = None) -> CallCgroup:
    """A new per-call cgroup under ``parent`` with ``pids.max = limit``.

    In cgroup v2, a cgroup holding processes (the engine's) that enables the pids controller
    for its children becomes a *threaded domain*, and a new child of it is an invalid domain
    until it is made threaded; a threaded cgroup is enough for the pids controller (a
    threaded one), and a whole process can still be moved into it through ``cgroup.procs``.

    ``pids.max`` is opened without ``O_CREAT``: the kernel makes it in every new cgroup, so a
    directory that is not a cgroup with the pids controller fails here, before any command
    could run believing itself limited.

    Args:
        parent: Where (a `Placement`'s ``parent``).
        limit: ``pids.max``.
        name: Its name (default: a new `call_name` of this engine).
    """
    started = _start_time(Path("/proc/self/stat").read_text())
    path = parent / (name or call_name(pid=os.getpid(), started=started))
    try:
        path.mkdir()
        if "invalid" in _read(path / "cgroup.type"):
            _write(path / "cgroup.type", "threaded")
        _write(path / "pids.max", str(limit))
    except OSError as exc:
        with contextlib.suppress(OSError):
            path.rmdir()
        raise SandboxError(
            "SANDBOX_UNAVAILABLE",
            f"not run: could not make the call's pids cgroup in {parent} ({exc.strerror}), which "
            "enforces its process limit. Check that the engine may still manage its cgroup.",
        ) from None
    return CallCgroup(path)


def _read(path: Path) -> str:
    """A cgroup file's text ("" when the hierarchy has no such file, as v1 has no types)."""
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


def _write(path: Path, text: str) -> None:
    """Write an existing cgroup file (never create one: a missing file is an error)."""
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


async def make_call_cgroup(limit: int) -> CallCgroup | None:
    """A new pids cgroup for one call, allowing ``limit`` tasks (remove it with `CallCgroup.close`).

    Cgroups that engines now gone left behind are removed first.

    Returns:
        The cgroup, or None where none can be made (see `locate` and `process_limit_gap`).

    Raises:
        SandboxError: ``SANDBOX_UNAVAILABLE``: there is a place for it, but it could not be
            made; the call must not run.
    """
    where = locate()
    if where.parent is None:
        return None
    await _sweep(where.parent)
    return _make(where.parent, limit)


@contextlib.asynccontextmanager
async def call_cgroup(limit: int) -> AsyncIterator[CallCgroup | None]:
    """`make_call_cgroup` for the length of a block, closed when it ends."""
    group = await make_call_cgroup(limit)
    try:
        yield group
    finally:
        if group is not None:
            await group.close()
