"""Walking directories inside the sandbox without following symlinks (list, glob and grep).

Each directory is opened relative to its parent's descriptor with ``O_NOFOLLOW``, so a walk never
leaves the tree it started in, whatever symlinks the tree holds: symlinks are reported as
entries, never entered. The engine's own state (the sandbox's protected paths, matched by device
and inode) is neither reported nor entered.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ai_agent.tools.builtin.sandbox import Sandbox, SandboxError, file_kind

__all__ = ["Entry", "require_directory", "walk"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class Entry:
    """One directory entry met on a walk.

    Attributes:
        rel: Path below the walk's start, with ``/`` separators.
        kind: ``file``, ``directory``, ``symlink`` or ``other``.
        size: Size in bytes (of the entry itself; a symlink's own size).
        depth: 1 for the start directory's children.
        dir_fd: Descriptor of the directory holding it (valid during the iteration step only).
        name: The entry's name in that directory.
        mtime_ns: Modification time in nanoseconds.
    """

    rel: str
    kind: str
    size: int
    depth: int
    dir_fd: int
    name: str
    mtime_ns: int = 0


def walk(
    sandbox: Sandbox,
    parts: tuple[str, ...],
    *,
    max_depth: int | None,
    descend: Callable[[str], bool] = lambda rel: True,
) -> Iterator[Entry]:
    """Entries below the directory at ``parts``, depth first, names sorted.

    Args:
        sandbox: The sandbox the directory is in.
        parts: The directory's components (from `Sandbox.resolve`).
        max_depth: 1 lists only the directory's own entries; None has no limit.
        descend: Whether to enter a subdirectory (by its ``rel`` path); ignored ones are still
            yielded.

    Raises:
        SandboxError: the start is not a directory the sandbox can enter.
    """
    with sandbox.directory(parts) as fd:
        yield from _walk(fd, "", 1, _Walk(max_depth, descend, frozenset(sandbox.identities())))


@dataclass(frozen=True, slots=True)
class _Walk:
    max_depth: int | None
    descend: Callable[[str], bool]
    hidden: frozenset[tuple[int, int]]  # device and inode of what is never shown


def _walk(fd: int, prefix: str, depth: int, how: _Walk) -> Iterator[Entry]:
    max_depth, descend = how.max_depth, how.descend
    try:
        with os.scandir(fd) as it:
            names = sorted(e.name for e in it)
    except OSError as exc:
        # A directory can open and still not list (EACCES on /proc/1/map_files, EIO): below
        # the start it is skipped, as one that cannot be opened is, not the end of the walk.
        if depth == 1:
            raise SandboxError(
                "OS_ERROR", f"the directory cannot be listed ({exc.strerror})"
            ) from None
        return
    for name in names:
        try:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:  # removed while we walk
            continue
        if (info.st_dev, info.st_ino) in how.hidden:
            continue
        rel = f"{prefix}{name}"
        kind = file_kind(info.st_mode, other="other")
        yield Entry(rel, kind, info.st_size, depth, fd, name, info.st_mtime_ns)
        if kind != "directory" or (max_depth is not None and depth >= max_depth):
            continue
        if not descend(rel):
            continue
        try:
            child = os.open(name, _DIR_FLAGS, dir_fd=fd)
        except OSError:  # replaced by a symlink or removed since the stat: skip it
            continue
        try:
            yield from _walk(child, rel + "/", depth + 1, how)
        finally:
            os.close(child)


def require_directory(sandbox: Sandbox, parts: tuple[str, ...], given: str) -> None:
    """Raise SandboxError unless ``parts`` names an existing directory."""
    try:
        with sandbox.directory(parts):
            return
    except SandboxError as exc:
        if exc.code == "PROTECTED_PATH":
            raise
        if exc.code == "NOT_FOUND":
            raise SandboxError("NOT_FOUND", f"no such directory: {given!r}") from None
        raise SandboxError("NOT_A_DIRECTORY", f"{given!r} is not a directory") from None
