"""The sandbox of one call, as a bwrap command line.

Where bwrap is (`find_bwrap`), the interpreter and the allowed paths mounted (`mounts`: each
opened by the engine one component at a time and handed to bwrap as a descriptor) and the whole
argv (`bwrap_command`). What each option enforces is in `ai_agent.tools.maker.confine`.
"""

from __future__ import annotations

import contextlib
import os
import platform
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

from ai_agent.errors import SandboxUnavailableError
from ai_agent.tools.builtin.bwrap import root_dirs
from ai_agent.tools.builtin.protected import ProtectedPaths
from ai_agent.tools.builtin.sandbox import Sandbox, SandboxError
from ai_agent.tools.maker.calls import ConfinedCall, Violation

__all__ = ["WORKSPACE", "bwrap_command", "find_bwrap", "mounts"]

WORKSPACE = "/workspace"
_SANDBOX_UID = "65534"


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
def mounts(call: ConfinedCall) -> Iterator[tuple[list[str], list[int]]]:
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
