"""Bubblewrap options: the read-only system, the writable workspace, and nothing else.

Shared by ``run_bash`` (`ai_agent.tools.builtin.bash`) and the toolsmaker's sandbox
(`ai_agent.tools.maker.confine`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

__all__ = ["bwrap_arguments", "root_dirs"]

_BWRAP_ETC = (
    "alternatives",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "passwd",
    "group",
    "nsswitch.conf",
    "localtime",
    "hosts",
    "ssl",
    "ca-certificates",
    "bash.bashrc",
    "mime.types",
)


def root_dirs(tops: tuple[str, ...]) -> list[str]:
    """Bubblewrap options recreating top-level system directories (``/lib``...) read-only.

    On merged-/usr systems they are symlinks into ``/usr`` and become the same symlinks; where
    they are real directories they are bound read-only. Shared by ``run_bash`` and the
    toolsmaker's sandbox (`ai_agent.tools.maker.confine`).
    """
    args: list[str] = []
    for top in tops:
        host = Path("/") / top
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), str(host)]
        elif host.is_dir():
            args += ["--ro-bind", str(host), str(host)]
    return args


def bwrap_arguments(
    base: Path, cwd: Path, readonly: list[Path], masks: Sequence[Path] = ()
) -> list[str]:
    """Bubblewrap options: system read-only, ``base`` writable, no network, private /tmp.

    ``masks`` (the engine's state inside what is shown) each get an empty tmpfs, mounted after
    ``base`` so it covers what ``base`` shows there; files created there later land in the
    tmpfs too. The command has no capabilities (``--cap-drop ALL``: when the engine runs as
    root, bubblewrap would otherwise leave them, and with them ``umount`` of a mask), and may
    not create user namespaces of its own.
    """
    args = ["--die-with-parent", "--new-session", "--unshare-all", "--unshare-user"]
    args += ["--disable-userns", "--cap-drop", "ALL", "--ro-bind", "/usr", "/usr"]
    args += root_dirs(("bin", "sbin", "lib", "lib32", "lib64", "libx32"))
    for name in _BWRAP_ETC:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    for path in readonly:
        args += ["--ro-bind-try", str(path), str(path)]
    # /tmp inside the sandbox is a private tmpfs, not the host's.
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]  # noqa: S108
    args += ["--bind", str(base), str(base)]
    for mask in masks:
        args += ["--tmpfs", str(mask)]
    args += ["--chdir", str(cwd)]
    args += ["--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp", "--"]  # noqa: S108
    return args
