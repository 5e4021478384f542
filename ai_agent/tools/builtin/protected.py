"""The engine's own state: the paths no tool may read, change or even see.

The engine keeps its state in files: the checkpoint and run-store database (with the ``-wal``,
``-shm`` and ``-journal`` files SQLite makes next to it), the memory file, the toolsmaker's
folder and audit log, and the ``.agents`` folder under the working directory. A tool that could
write them could approve its own gated calls (a plan queued for a paused run), rewrite a run's
history, or plant memories and tool specs. `ProtectedPaths` names them once, where the Agent is
configured (`ProtectedPaths.for_engine`), and every boundary consults the same object:

- the file sandbox (`ai_agent.tools.builtin.sandbox`) refuses them, by path after symlinks and
  by device and inode at the moment of use, and its walks skip them;
- ``run_bash`` under bubblewrap mounts an empty tmpfs over each protected folder, and over the
  folder holding each protected file (so a file created there later is hidden too), after the
  workspace is bound (`ProtectedPaths.masks`);
- the toolsmaker's sandbox refuses to mount a folder that holds one or lies inside one
  (`ProtectedPaths.overlapping`).

A protected file with more than one hard link has another name somewhere, possibly in a folder a
sandbox shows; both sandboxes refuse to run while one has (`ProtectedPaths.linked`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ai_agent.tools.builtin.refusal import SandboxError

__all__ = ["Protected", "ProtectedPaths"]

# What SQLite keeps next to a database file (WAL mode, and the rollback journal).
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


@dataclass(frozen=True, slots=True)
class Protected:
    """One protected path.

    Attributes:
        path: Where it is (absolute; symlinks resolved when the set was built).
        what: What it is, for messages ("the checkpoint database").
        folder: True for a folder protected with everything below it.
    """

    path: Path
    what: str
    folder: bool


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


class ProtectedPaths:
    """The paths the engine keeps its state in (see the module docstring).

    Args:
        entries: The protected paths; relative ones are taken from the current directory, and
            each is resolved after symlinks here, once.

    Examples:
        >>> from pathlib import Path
        >>> state = ProtectedPaths.for_engine(
        ...     workdir="/srv/app", databases=["/srv/app/db/c.sqlite"])
        >>> state.holding(Path("/srv/app/.agents/memory.jsonl")).what
        "the engine's folder .agents"
        >>> state.holding(Path("/srv/app/db/c.sqlite-wal")).what
        'the checkpoint database'
        >>> state.holding(Path("/srv/app/db/notes.txt")) is None
        True
    """

    def __init__(self, entries: Iterable[Protected] = ()) -> None:
        self._given = tuple(entries)
        self.entries = tuple(
            Protected(Path(os.path.realpath(e.path)), e.what, e.folder) for e in self._given
        )

    @classmethod
    def for_engine(
        cls,
        *,
        workdir: str | os.PathLike[str],
        databases: Iterable[str | os.PathLike[str]] = (),
        memory: Iterable[str | os.PathLike[str]] = (),
        toolsmaker_dir: str | os.PathLike[str] | None = None,
        audit_log: str | os.PathLike[str] | None = None,
    ) -> ProtectedPaths:
        """Every path an Agent keeps state in.

        Args:
            workdir: The working directory: its ``.agents`` folder is protected whole.
            databases: SQLite databases (checkpoints and run store, any configured one, the
                SQLite memory); their side files are protected with them.
            memory: The memory file(s) persist appends to.
            toolsmaker_dir: The folder of generated tools.
            audit_log: The toolsmaker's audit log.
        """
        entries = [Protected(Path(workdir, ".agents"), "the engine's folder .agents", True)]
        for db in databases:
            entries += [
                Protected(Path(f"{os.fspath(db)}{side}"), "the checkpoint database", False)
                for side in ("", *SQLITE_SIDE_FILES)
            ]
        entries += [Protected(Path(m), "the memory file", False) for m in memory]
        if toolsmaker_dir is not None:
            entries.append(Protected(Path(toolsmaker_dir), "the toolsmaker folder", True))
        if audit_log is not None:
            entries.append(Protected(Path(audit_log), "the toolsmaker audit log", False))
        return cls(entries)

    def __bool__(self) -> bool:
        return bool(self.entries)

    def __repr__(self) -> str:
        return f"ProtectedPaths({[str(e.path) for e in self.entries]})"

    def plus(self, entries: Iterable[Protected]) -> ProtectedPaths:
        """These paths and ``entries``."""
        return ProtectedPaths((*self._given, *entries))

    def current(self) -> ProtectedPaths:
        """The same paths resolved after symlinks again, now (for a sandbox about to start)."""
        return ProtectedPaths(self._given)

    # Checks ----------------------------------------------------------------------------------
    def holding(self, path: Path) -> Protected | None:
        """The entry ``path`` (already resolved) is, or lies inside; None when it is neither."""
        for entry in self.entries:
            if path == entry.path or (entry.folder and entry.path in path.parents):
                return entry
        return None

    def identities(self) -> dict[tuple[int, int], Protected]:
        """Device and inode of every protected path that exists now (symlinks followed).

        The file sandbox compares what it opened against these, so a second path to the same
        folder or file (a bind mount, a renamed parent) is refused as well.
        """
        found: dict[tuple[int, int], Protected] = {}
        for entry in self.entries:
            try:
                info = os.stat(entry.path)
            except OSError:
                continue
            found[(info.st_dev, info.st_ino)] = entry
        return found

    def linked(self) -> list[Protected]:
        """Protected files that have more than one hard link (another name somewhere)."""
        out = []
        for entry in self.entries:
            try:
                info = os.stat(entry.path)
            except OSError:
                continue
            if not entry.folder and info.st_nlink > 1:
                out.append(entry)
        return out

    def overlapping(self, mount: Path) -> Protected | None:
        """The entry a mount of folder ``mount`` (resolved) would show: inside it, or holding it."""
        for entry in self.entries:
            if _under(entry.path, mount) or (entry.folder and _under(mount, entry.path)):
                return entry
        return None

    def masks(self, mounts: Sequence[Path]) -> list[Path]:
        """The folders to hide (an empty tmpfs over each) inside a sandbox showing ``mounts``.

        A protected folder is hidden itself; a protected file by hiding the folder that holds
        it, so a file created next to it later (SQLite's ``-wal``) is hidden too.

        Args:
            mounts: The folders the sandbox shows from the host (resolved).

        Returns:
            The folders to mask, outermost first, none inside another.

        Raises:
            SandboxError: PROTECTED_PATH when a mount is, or lies inside, a protected folder,
                or holds a protected file directly (hiding it would hide the whole mount); the
                message says what to do.
        """
        wanted: set[Path] = set()
        for mount in mounts:
            for entry in self.entries:
                unit = entry.path if entry.folder else entry.path.parent
                if not _under(unit, mount) and not (entry.folder and _under(mount, entry.path)):
                    continue
                if _under(mount, unit):
                    raise SandboxError("PROTECTED_PATH", _unmaskable(entry, mount))
                wanted.add(unit)
        ordered = sorted(wanted, key=lambda p: (len(p.parts), p))
        return [p for i, p in enumerate(ordered) if not any(_under(p, q) for q in ordered[:i])]


def _unmaskable(entry: Protected, mount: Path) -> str:
    if entry.folder:
        where = f"the sandbox shows {mount}, which is {entry.what} ({entry.path}) or lies inside it"
    else:
        where = (
            f"{entry.what} ({entry.path}) lies directly in {mount}, which the sandbox shows; "
            "hiding it would hide the whole folder"
        )
    return (
        f"not run: {where}. Keep the engine's state in a folder of its own (the default "
        ".agents/ under the working directory) or outside the workspace"
    )
