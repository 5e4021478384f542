"""The file sandbox: every path a tool touches stays inside one base directory.

Checking a path once and then opening it by name is not enough: between the two, a directory on
the way can be swapped for a symlink that points out. So the sandbox checks twice:

1. ``resolve`` rejects what is wrong on its face (NUL bytes, empty paths) and resolves the path
   after symlinks (``realpath``); the result must be the base or below it, compared by path
   components, so ``base-evil`` next to ``base`` is outside. Extensions are checked on both the
   given and the resolved name.
2. At the moment of use, the path is opened from the base directory's file descriptor one
   component at a time with ``O_NOFOLLOW``, and the final entry is opened (or renamed onto)
   relative to its parent's descriptor, never by full path. A symlink that appears after step 1
   makes the open fail instead of leading outside. Reads and writes accept regular files only, so
   device files and FIFOs are refused.

Writes are atomic: the content goes to a temporary file in the target's directory, is flushed to
disk and renamed over the target, so a failure leaves the old file (or nothing), never half a file.

Two more refusals hold whatever the path:

- The engine's own state (`ai_agent.tools.builtin.protected.ProtectedPaths`: the run store,
  memory, the toolsmaker's files) is refused with PROTECTED_PATH: by path after symlinks in
  step 1, and by device and inode of every directory and file opened in step 2, so another path
  to the same folder or file is refused too. Walks skip it.
- A regular file with more than one hard link is not read (HARD_LINK) unless
  ``allow_hard_links``: its other name may be outside the base, and the path check cannot see it.

With ``enabled=False`` the containment check is skipped (paths may go anywhere); everything else
still applies.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ai_agent.tools.builtin.refusal import SandboxError, require_os_text

if TYPE_CHECKING:
    from ai_agent.tools.builtin.protected import Protected, ProtectedPaths

    _Identities = dict[tuple[int, int], Protected]

__all__ = ["Sandbox", "SandboxError", "Target"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 1 << 16


@dataclass(frozen=True, slots=True)
class Target:
    """A checked path: where it really is, and its components below the walk root."""

    given: str
    path: Path
    parts: tuple[str, ...]

    @property
    def name(self) -> str:
        """The final component ('' for the root itself)."""
        return self.parts[-1] if self.parts else ""


def file_kind(mode: int, other: str = "special file") -> str:
    """What a ``st_mode`` is, in words: file, directory, symlink, or ``other``."""
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "symlink"
    return other


class Sandbox:
    """Path checks and race-safe file operations under a base directory.

    Args:
        base: The directory every path must stay in (resolved once, here).
        enabled: False lets paths go anywhere (sandbox mode off).
        allowed_extensions: When not empty, only these extensions (``.py``) may be used.
        denied_extensions: Extensions that may never be used.
        max_read_bytes: Files larger than this are not read.
        protected: The engine's own state, refused whatever ``enabled`` says.
        allow_hard_links: Read regular files that have more than one hard link.

    Examples:
        >>> import tempfile
        >>> box = Sandbox(tempfile.mkdtemp())
        >>> box.resolve("notes/a.txt").parts
        ('notes', 'a.txt')
        >>> box.resolve("../x")
        Traceback (most recent call last):
        ...
        ai_agent.tools.builtin.refusal.SandboxError: path '../x' is outside the sandbox directory
    """

    def __init__(
        self,
        base: str | os.PathLike[str],
        *,
        enabled: bool = True,
        allowed_extensions: Sequence[str] = (),
        denied_extensions: Sequence[str] = (),
        max_read_bytes: int = 1_000_000,
        protected: ProtectedPaths | None = None,
        allow_hard_links: bool = False,
    ) -> None:
        self.base = Path(os.path.realpath(base))
        self.enabled = enabled
        self.allowed = tuple(e.lower() for e in allowed_extensions)
        self.denied = tuple(e.lower() for e in denied_extensions)
        self.max_read_bytes = max_read_bytes
        self.protected = protected
        self.allow_hard_links = allow_hard_links
        # Without the sandbox, walks start at the filesystem root.
        self._root = self.base if enabled else Path(self.base.anchor or "/")

    # Checking --------------------------------------------------------------------------------
    def inside(self, path: Path) -> bool:
        """True when ``path`` (already resolved) is the base or below it."""
        return path == self.base or self.base in path.parents

    def resolve(
        self, given: object, *, field: str = "path", check_extension: bool = True
    ) -> Target:
        """Check a path the model gave and resolve it (after symlinks) under the base.

        Raises:
            SandboxError: BAD_PATH (not a string, empty, NUL byte), OUTSIDE_SANDBOX,
                PROTECTED_PATH or EXTENSION_DENIED.
        """
        if not isinstance(given, str) or not given.strip():
            raise SandboxError("BAD_PATH", f"{field} must be a non-empty path")
        if "\x00" in given:
            raise SandboxError("BAD_PATH", f"{field} contains a NUL byte")
        require_os_text(given, field, "BAD_PATH")
        raw = Path(given)
        real = Path(os.path.realpath(raw if raw.is_absolute() else self.base / raw))
        if self.enabled and not self.inside(real):
            raise SandboxError(
                "OUTSIDE_SANDBOX", f"{field} {given!r} is outside the sandbox directory"
            )
        self._check_protected(given, real, field)
        if check_extension:
            self._check_extension(given, raw.name)
            self._check_extension(given, real.name)
        parts = real.relative_to(self._root).parts
        return Target(given=given, path=real, parts=tuple(parts))

    def _check_protected(self, given: object, real: Path, field: str) -> None:
        entry = self.protected.holding(real) if self.protected else None
        if entry is not None:
            raise _protected(f"{field} {given!r}", entry.what)

    def check_holds_none(self, target: Target) -> None:
        """Refuse ``target`` when the engine's state lies inside it (moving it would move that)."""
        entry = self.protected.overlapping(target.path) if self.protected else None
        if entry is not None:
            raise _protected(f"{target.given!r} holds", entry.what)

    def _check_identity(self, info: os.stat_result, given: str, ids: _Identities) -> None:
        """Refuse what was opened when it is a protected folder or file, whatever its path."""
        entry = ids.get((info.st_dev, info.st_ino))
        if entry is not None:
            raise _protected(repr(given), entry.what)

    def identities(self) -> _Identities:
        """Device and inode of the protected paths, now (empty without any)."""
        return self.protected.identities() if self.protected else {}

    def resolve_entry(
        self, given: object, *, field: str = "path", check_extension: bool = True
    ) -> Target:
        """Like `resolve`, but the final component is the entry itself, not followed.

        Deleting or moving a symlink acts on the link (``rm link`` semantics); only the
        directory holding it must be inside the sandbox.
        """
        if not isinstance(given, str) or "\x00" in given:
            return self.resolve(given, field=field, check_extension=check_extension)
        require_os_text(given, field, "BAD_PATH")
        norm = os.path.normpath(given)
        head, name = os.path.split(norm)
        if name in ("", ".", ".."):
            return self.resolve(given, field=field, check_extension=check_extension)
        parent = self.resolve(head or ".", field=field, check_extension=False)
        if check_extension:
            self._check_extension(given, name)
        self._check_protected(given, parent.path / name, field)
        return Target(given=given, path=parent.path / name, parts=(*parent.parts, name))

    def _check_extension(self, given: str, name: str) -> None:
        suffix = Path(name).suffix.lower()
        if not suffix:
            return
        if suffix in self.denied or (self.allowed and suffix not in self.allowed):
            raise SandboxError(
                "EXTENSION_DENIED", f"files ending in {suffix} may not be used ({given!r})"
            )

    def display(self, path: Path, *, absolute: bool = False) -> str:
        """How a path is shown in results: relative to the base (or absolute)."""
        if absolute or not self.inside(path):
            return str(path)
        rel = path.relative_to(self.base).as_posix()
        return rel or "."

    # Walking ---------------------------------------------------------------------------------
    @contextlib.contextmanager
    def directory(self, parts: Sequence[str], *, create: bool = False) -> Iterator[int]:
        """A descriptor of the directory at ``parts``, opened without following any symlink.

        Each directory on the way is compared with the protected folders by device and inode.
        """
        try:
            fd = os.open(self._root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise SandboxError(
                "NOT_FOUND", f"the directory {self._root} cannot be opened ({exc.strerror})"
            ) from None
        ids = self.identities()
        try:
            for depth, part in enumerate(parts):
                if ids:
                    self._check_identity(os.fstat(fd), "/".join(parts[:depth]) or ".", ids)
                child = self._child(fd, part, create=create)
                os.close(fd)
                fd = child
            if ids:
                self._check_identity(os.fstat(fd), "/".join(parts) or ".", ids)
            yield fd
        finally:
            os.close(fd)

    @staticmethod
    def _child(fd: int, part: str, *, create: bool) -> int:
        try:
            return os.open(part, _DIR_FLAGS, dir_fd=fd)
        except FileNotFoundError:
            if not create:
                raise SandboxError("NOT_FOUND", f"no such directory: {part!r}") from None
        except OSError as exc:
            raise SandboxError(
                "PATH_CHANGED",
                f"{part!r} is not a directory the sandbox can enter (a symlink or a file "
                f"appeared: {exc.strerror})",
            ) from None
        os.mkdir(part, 0o777, dir_fd=fd)
        return os.open(part, _DIR_FLAGS, dir_fd=fd)

    @contextlib.contextmanager
    def parent(self, target: Target, *, create: bool = False) -> Iterator[int]:
        """The descriptor of ``target``'s parent directory."""
        if not target.parts:
            raise SandboxError("IS_A_DIRECTORY", "the sandbox directory itself is not a file")
        with self.directory(target.parts[:-1], create=create) as fd:
            yield fd

    def lstat(self, target: Target) -> os.stat_result | None:
        """The entry's own status (a symlink is not followed), or None when it does not exist."""
        if not target.parts:
            return os.stat(self._root)
        try:
            with self.parent(target) as fd:
                info = self._entry(fd, target)
        except SandboxError as exc:
            if exc.code == "NOT_FOUND":  # a parent directory is missing: so is the entry
                return None
            raise
        if info is not None:
            self._check_identity(info, target.given, self.identities())
        return info

    # Reading ---------------------------------------------------------------------------------
    @contextlib.contextmanager
    def open_file(self, target: Target) -> Iterator[tuple[int, os.stat_result]]:
        """An open descriptor of a regular file (and its status), opened without following."""
        with self.parent(target) as dfd:
            try:
                fd = os.open(target.name, _READ_FLAGS, dir_fd=dfd)
            except FileNotFoundError:
                raise SandboxError("NOT_FOUND", f"no such file: {target.given!r}") from None
            except OSError as exc:
                raise SandboxError(
                    "PATH_CHANGED", f"cannot open {target.given!r}: {exc.strerror}"
                ) from None
        try:
            info = os.fstat(fd)
            self._check_readable(info, target.given)
            yield fd, info
        finally:
            os.close(fd)

    def _check_readable(self, info: os.stat_result, given: str) -> None:
        """A regular file, not the engine's, with one link (unless hard links are allowed)."""
        if not stat.S_ISREG(info.st_mode):
            raise SandboxError(
                "NOT_A_FILE", f"{given!r} is a {file_kind(info.st_mode)}, not a regular file"
            )
        self._check_identity(info, given, self.identities())
        if info.st_nlink > 1 and not self.allow_hard_links:
            raise SandboxError(
                "HARD_LINK",
                f"{given!r} has {info.st_nlink} hard links: the same file has another name, "
                "possibly outside the sandbox directory, so it is not read. Set "
                "tool_config.files.allow_hard_links = true to read such files",
            )

    def read_bytes(
        self, target: Target, *, on_chunk: Callable[[bytes], object] | None = None
    ) -> bytes:
        """The whole content of a regular file no larger than ``max_read_bytes``.

        ``on_chunk`` sees each block as it is read (the seam for streaming a long read).
        """
        with self.open_file(target) as (fd, info):
            if info.st_size > self.max_read_bytes:
                raise SandboxError(
                    "TOO_LARGE",
                    f"{target.given!r} is {info.st_size} bytes, over the read limit of "
                    f"{self.max_read_bytes}; read a smaller file or search it with grep_search",
                )
            # The size is checked again while reading: a file can grow after the fstat, and
            # some report no size at all (/proc/self/pagemap would read hundreds of GB).
            chunks, size = [], 0
            while chunk := os.read(fd, min(_CHUNK, self.max_read_bytes + 1 - size)):
                size += len(chunk)
                if size > self.max_read_bytes:
                    raise SandboxError(
                        "TOO_LARGE",
                        f"{target.given!r} holds more than the read limit of "
                        f"{self.max_read_bytes} bytes (it grew while read, or does not report "
                        "its size); read a smaller file or search it with grep_search",
                    )
                chunks.append(chunk)
                if on_chunk is not None:
                    on_chunk(chunk)
            return b"".join(chunks)

    # Writing ---------------------------------------------------------------------------------
    def _existing_file(self, dfd: int, target: Target) -> os.stat_result | None:
        try:
            info = os.stat(target.name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        if not stat.S_ISREG(info.st_mode):
            raise SandboxError(
                "NOT_A_FILE", f"{target.given!r} is a {file_kind(info.st_mode)}, not a regular file"
            )
        return info

    def write_atomic(
        self, target: Target, chunks: Iterator[bytes] | bytes, *, prefix: int | None = None
    ) -> int:
        """Replace ``target`` with new content in one rename; returns the bytes written.

        Args:
            target: The checked path (its parent directories are created).
            chunks: The new content.
            prefix: Copy this many leading bytes of the existing file first (how append is done
                without ever leaving a half-written file).
        """
        if target.given.endswith(("/", os.sep)):
            # The path's trailing slash would be dropped, and a file made where a folder was
            # meant ("newdir/" became a file named newdir).
            raise SandboxError(
                "NOT_A_FILE",
                f"{target.given!r} ends with a slash, so it names a folder; give a file's name "
                "(the folders it is in are made)",
            )
        with self.parent(target, create=True) as dfd:
            existing = self._existing_file(dfd, target)
            tmp = f".{target.name}.{secrets.token_hex(6)}.tmp"
            fd = os.open(
                tmp,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o644,
                dir_fd=dfd,
            )
            try:
                written = self._fill(fd, dfd, target, chunks, prefix if existing else None)
                if existing is not None:
                    os.fchmod(fd, stat.S_IMODE(existing.st_mode))
                os.fsync(fd)
                os.close(fd)
                fd = -1
                os.rename(tmp, target.name, src_dir_fd=dfd, dst_dir_fd=dfd)
            except BaseException:
                if fd >= 0:
                    os.close(fd)
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp, dir_fd=dfd)
                raise
        return written

    def _fill(
        self,
        fd: int,
        dfd: int,
        target: Target,
        chunks: Iterator[bytes] | bytes,
        prefix: int | None,
    ) -> int:
        written = 0
        if prefix:
            src = os.open(target.name, _READ_FLAGS, dir_fd=dfd)
            try:
                # The old content is copied into the new file: it is read, so checked as a read.
                self._check_readable(os.fstat(src), target.given)
                remaining = prefix
                while remaining and (block := os.read(src, min(_CHUNK, remaining))):
                    written += _write_all(fd, block)
                    remaining -= len(block)
            finally:
                os.close(src)
        for chunk in [chunks] if isinstance(chunks, bytes) else chunks:
            written += _write_all(fd, chunk)
        return written

    def unlink(self, target: Target) -> None:
        """Delete a file or a symlink itself (never a directory, never through a symlink)."""
        with self.parent(target) as dfd:
            info = self._entry(dfd, target)
            if info is None:
                raise SandboxError("NOT_FOUND", f"no such file: {target.given!r}")
            if stat.S_ISDIR(info.st_mode):
                raise SandboxError(
                    "IS_A_DIRECTORY", f"{target.given!r} is a directory; only files are deleted"
                )
            os.unlink(target.name, dir_fd=dfd)

    def rename(self, source: Target, destination: Target) -> None:
        """Move ``source`` onto ``destination`` (same filesystem), both via their parents."""
        with self.parent(source) as sfd, self.parent(destination, create=True) as dfd:
            if self._entry(sfd, source) is None:
                raise SandboxError("NOT_FOUND", f"no such file or directory: {source.given!r}")
            os.rename(source.name, destination.name, src_dir_fd=sfd, dst_dir_fd=dfd)

    @staticmethod
    def _entry(dfd: int, target: Target) -> os.stat_result | None:
        try:
            return os.stat(target.name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            return None


def _protected(what: str, holder: str) -> SandboxError:
    return SandboxError(
        "PROTECTED_PATH",
        f"{what} is part of the engine's own state ({holder}); tools may not read, list or "
        "change it",
    )


def _write_all(fd: int, data: bytes) -> int:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    return len(data)
