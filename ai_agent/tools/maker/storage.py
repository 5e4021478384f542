"""The toolsmaker's directory: where each file lives, atomic writes, and one lock for changes.

Layout under ``toolsmaker_dir``::

    specs/<name>_v<version>.json      build records (spec, status, validation, request, history)
    generated/<name>_v<version>.py    the generated code
    reviews/<name>_v<version>.json    review artifacts (summary, diff, validation, code path)
    active_versions.json              tool name -> active version
    audit.jsonl (+ audit.head)        the hash-chained event log (see ``audit.py``)
    .lock                             held (flock) by whoever changes any of the above

Every file but the audit log is written to a temporary file in the same directory, flushed and
renamed over the target, so a crash leaves the old file or the new one, never half of one. The
audit log is append-only. Changes from several processes are serialised by an exclusive
``flock`` on ``.lock``: version numbers are allocated, statuses changed and the audit chain
extended inside it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["Layout", "atomic_write", "read_code", "read_json"]


def atomic_write(path: Path, data: bytes | str, *, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` in one rename (temp file in the same directory, fsync).

    Args:
        path: The file to write (its directory is created).
        data: The new content (str is encoded as UTF-8).
        mode: Permissions of a new file.

    Raises:
        OSError: the write failed; ``path`` is unchanged and no temporary file is left.

    Examples:
        >>> import tempfile
        >>> target = Path(tempfile.mkdtemp()) / "a.json"
        >>> atomic_write(target, '{"x": 1}')
        >>> target.read_text()
        '{"x": 1}'
    """
    blob = data.encode() if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, mode)
    try:
        view = memoryview(blob)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    os.replace(tmp, path)


def read_json(path: Path, default: Any = None) -> Any:
    """The JSON content of a file.

    Args:
        path: The file.
        default: What a missing file gives.

    Returns:
        The parsed content, or ``default`` when the file does not exist.
    """
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return default


def read_code(path: Path) -> str:
    r"""A generated module exactly as stored: its bytes decoded, line endings untouched.

    ``Path.read_text`` translates ``\r\n`` and ``\r`` to ``\n``: code a model wrote with
    Windows line endings would hash differently from what was reviewed (and be refused as
    changed after review), and a reviewer would be shown other bytes than those that run.

    Args:
        path: The module's file.

    Returns:
        Its text (invalid UTF-8 is replaced with U+FFFD, so the hash check refuses it).

    Raises:
        OSError: the file cannot be read.
    """
    return path.read_bytes().decode("utf-8", errors="replace")


def dumps(value: Any) -> str:
    """Stable, readable JSON for the files a person may review.

    Args:
        value: JSON data.

    Returns:
        Indented JSON with sorted keys and a final newline.
    """
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


class Layout:
    """The paths of one toolsmaker directory.

    Args:
        root: ``toolsmaker_dir``.
        audit_path: Where the audit log goes (default ``root/audit.jsonl``).

    Examples:
        >>> layout = Layout(Path("tm"))
        >>> layout.code("fetch", 2).as_posix(), layout.audit.as_posix()
        ('tm/generated/fetch_v2.py', 'tm/audit.jsonl')
    """

    def __init__(self, root: Path, audit_path: Path | None = None) -> None:
        self.root = Path(root)
        self.audit = Path(audit_path) if audit_path is not None else self.root / "audit.jsonl"
        self.specs = self.root / "specs"
        self.generated = self.root / "generated"
        self.reviews = self.root / "reviews"
        self.active = self.root / "active_versions.json"
        self.lock_path = self.root / ".lock"

    def record(self, name: str, version: int) -> Path:
        """The build record of one version.

        Args:
            name: The tool.
            version: The version.

        Returns:
            ``specs/<name>_v<version>.json``.
        """
        return self.specs / f"{name}_v{version}.json"

    def code(self, name: str, version: int) -> Path:
        """The generated module of one version.

        Args:
            name: The tool.
            version: The version.

        Returns:
            ``generated/<name>_v<version>.py``.
        """
        return self.generated / f"{name}_v{version}.py"

    def review(self, name: str, version: int) -> Path:
        """The review artifact of one version.

        Args:
            name: The tool.
            version: The version.

        Returns:
            ``reviews/<name>_v<version>.json``.
        """
        return self.reviews / f"{name}_v{version}.json"

    def relative(self, path: Path) -> str:
        """``path`` as stored in records.

        Args:
            path: A file of this directory (or the audit log, which may be elsewhere).

        Returns:
            The path relative to the root when it is inside, else the path as given.
        """
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the directory's exclusive lock (other processes wait for it).

        Yields:
            Nothing; the lock is held until the block ends.
        """
        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock
