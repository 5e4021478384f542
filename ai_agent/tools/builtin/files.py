"""The file tools (spec 5.4.1): read, write, append, list, info, delete, move, copy.

Every path goes through the `Sandbox`. Each tool is a typed method whose signature and docstring
are its schema (`ai_agent.tools.builtin.typed`). Reading tools are
READ_ONLY; the others are MODIFICATION tools, and their previews show a person exactly what would
change: a unified diff for ``write_file`` and ``append_file``, the target (and what it is) for
``delete_file``, ``move_file`` and ``copy_file``.
"""

from __future__ import annotations

import codecs
import difflib
import errno
import functools
import os
import stat
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Annotated, Any, ParamSpec

from pydantic import Field

from ai_agent.config import FileToolsConfig
from ai_agent.state import ToolResult
from ai_agent.tools.builtin.protected import ProtectedPaths
from ai_agent.tools.builtin.sandbox import Sandbox, SandboxError, Target, file_kind
from ai_agent.tools.builtin.typed import builtin_spec
from ai_agent.tools.builtin.walk import require_directory, walk
from ai_agent.tools.spec import ToolCategory, ToolSpec
from ai_agent.visible import visible

__all__ = ["file_tools", "sandbox_for"]

_GROUP = "files"
_MAX_LIST = 1000
_DIFF_LINES = 200
_DIFF_WORK = 1_000_000  # pairs of differing lines difflib may match (its matching is quadratic)
_NAME_CODECS = frozenset({"punycode", "idna"})

P = ParamSpec("P")

# The arguments several tools share, with what the model reads about them.
FilePath = Annotated[str, Field(description="File path, relative to the working directory.")]
Encoding = Annotated[str, Field(description="Text encoding.")]
Content = Annotated[str, Field(description="The text to write.")]


def sandbox_for(
    config: FileToolsConfig,
    workdir: str | os.PathLike[str],
    protected: ProtectedPaths | None = None,
) -> Sandbox:
    """The sandbox the file tools use: ``config.base_dir`` or the working directory.

    ``protected`` is the engine's own state, which every tool over this sandbox refuses.

    Examples:
        >>> import tempfile, os
        >>> d = tempfile.mkdtemp()
        >>> inside = sandbox_for(FileToolsConfig(), d)
        >>> inside.base == sandbox_for(FileToolsConfig(base_dir=d), ".").base
        True
    """
    return Sandbox(
        config.base_dir or workdir,
        enabled=config.sandbox,
        allowed_extensions=config.allowed_extensions,
        denied_extensions=config.denied_extensions,
        max_read_bytes=config.max_read_bytes,
        protected=protected,
        allow_hard_links=config.allow_hard_links,
    )


def _streamer(ctx: dict[str, Any], encoding: str) -> Callable[[bytes], None] | None:
    """Decoded chunks for ``ctx["on_output"](text, "content")``, when a listener is there."""
    listener = ctx.get("on_output")
    if listener is None:
        return None
    decoder = codecs.getincrementaldecoder(encoding)(errors="replace")

    def feed(chunk: bytes) -> None:
        try:
            listener(decoder.decode(chunk), "content")
        except Exception:  # a listener's bug must not break the read
            return

    return feed


def _error(code: str, message: str) -> ToolResult:
    return ToolResult(status="error", error=message, meta={"code": code})


def guarded(fn: Callable[P, ToolResult]) -> Callable[P, ToolResult]:
    """Turn the sandbox's refusals and OS errors into error results with a code.

    The wrapper keeps ``fn``'s signature and docstring, which are the tool's schema.
    """

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> ToolResult:
        try:
            return fn(*args, **kwargs)
        except SandboxError as exc:
            return _error(exc.code, str(exc))
        except UnicodeError as exc:
            return _error(
                "ENCODING",
                f"the text cannot be decoded or encoded as requested ({exc}); "
                "pass another encoding, e.g. 'latin-1'",
            )
        except OSError as exc:
            code = "NOT_FOUND" if exc.errno == errno.ENOENT else "OS_ERROR"
            return _error(code, f"{exc.strerror or exc}")

    return run


def _encoding(given: str) -> str:
    name = given or "utf-8"
    try:
        info = codecs.lookup(name)
    except (LookupError, ValueError):  # ValueError: a NUL in the name
        raise SandboxError("BAD_ARGUMENTS", f"unknown encoding {name!r}") from None
    # base64, rot13, zlib... are codecs too, but bytes-to-bytes or str-to-str: decoding a file
    # with them fails deep inside (LookupError), so they are refused here, by name.
    if not getattr(info, "_is_text_encoding", True):
        raise SandboxError(
            "BAD_ARGUMENTS", f"{name!r} is not a text encoding; pass one such as 'utf-8'"
        )
    # The codecs of domain names are not the encoding of any file, and Python's punycode is
    # quadratic: 80 kB of text took a minute to encode, in a thread no timeout can stop.
    if info.name in _NAME_CODECS:
        raise SandboxError(
            "BAD_ARGUMENTS",
            f"{name!r} encodes domain names, not files; pass a file encoding such as 'utf-8'",
        )
    return info.name


class FileTools:
    """The eight file tools over one sandbox."""

    def __init__(self, sandbox: Sandbox, config: FileToolsConfig) -> None:
        self.box = sandbox
        self.config = config

    def show(self, target: Target) -> str:
        return self.box.display(target.path, absolute=self.config.absolute_paths)

    def named(self, target: Target) -> str:
        """The path as a preview names it: on one line, line breaks and hidden characters escaped.

        A path holding a line break and a line of text showed a person another file name, the
        rest of it passing for a line of the preview.
        """
        return visible(self.show(target))

    # Reading ---------------------------------------------------------------------------------
    @guarded
    def read_file(
        self, path: FilePath, encoding: Encoding = "utf-8", *, ctx: dict[str, Any]
    ) -> ToolResult:
        """Read a text file and return its contents."""
        target = self.box.resolve(path)
        codec = _encoding(encoding)
        data = self.box.read_bytes(target, on_chunk=_streamer(ctx, codec))
        text = data.decode(codec)
        return ToolResult(
            status="ok",
            content=text,
            meta={"path": self.show(target), "bytes": len(data), "encoding": codec},
        )

    @guarded
    def list_directory(
        self,
        path: Annotated[str, Field(description="Directory path.")],
        recursive: bool = False,
        max_depth: Annotated[int, Field(ge=1)] = 2,
    ) -> ToolResult:
        """List a directory's entries (name, type, size); recursive lists subdirectories down
        to max_depth levels. Symlinks are listed, not followed.
        """  # noqa: D205 - the model reads the first paragraph whole, as the tool's description
        target = self.box.resolve(path or ".", check_extension=False)
        depth = max_depth if recursive else 1
        require_directory(self.box, target.parts, target.given)
        entries: list[dict[str, Any]] = []
        truncated = False
        for entry in walk(self.box, target.parts, max_depth=depth):
            if len(entries) >= _MAX_LIST:
                truncated = True
                break
            item: dict[str, Any] = {"path": entry.rel, "type": entry.kind}
            if entry.kind == "file":
                item["size"] = entry.size
            entries.append(item)
        return ToolResult(
            status="ok",
            content={"path": self.show(target), "entries": entries, "truncated": truncated},
        )

    @guarded
    def file_info(self, path: FilePath) -> ToolResult:
        """Metadata of a file or directory: type, size, modification time, mode."""
        target = self.box.resolve(path, check_extension=False)
        info = self.box.lstat(target)
        if info is None:
            raise SandboxError("NOT_FOUND", f"no such file or directory: {target.given!r}")
        content: dict[str, Any] = {
            "path": self.show(target),
            "type": file_kind(info.st_mode),
            "size": info.st_size,
            "modified": datetime.fromtimestamp(info.st_mtime, UTC).isoformat(),
            "mode": oct(stat.S_IMODE(info.st_mode)),
            "is_symlink": self._is_symlink(target.given),
        }
        return ToolResult(status="ok", content=content)

    def _is_symlink(self, given: str) -> bool:
        """Whether the path as given names a symlink (its target was checked already)."""
        try:
            entry = self.box.resolve_entry(given, check_extension=False)
        except SandboxError:
            return False
        own = self.box.lstat(entry)
        return own is not None and stat.S_ISLNK(own.st_mode)

    # Writing ---------------------------------------------------------------------------------
    @guarded
    def write_file(
        self, path: FilePath, content: Content, encoding: Encoding = "utf-8"
    ) -> ToolResult:
        """Write a text file, replacing it if it exists (parent directories are created). A
        person sees the diff before it is written.
        """  # noqa: D205 - the model reads the first paragraph whole, as the tool's description
        target = self.box.resolve(path)
        data = content.encode(_encoding(encoding))
        existed = self.box.lstat(target) is not None
        written = self.box.write_atomic(target, data)
        verb = "replaced" if existed else "created"
        return ToolResult(
            status="ok",
            content=f"{verb} {self.show(target)} ({written} bytes)",
            meta={"path": self.show(target), "bytes": written, "created": not existed},
        )

    @guarded
    def append_file(self, path: FilePath, content: Content) -> ToolResult:
        """Append text to the end of a file (created if missing)."""
        target = self.box.resolve(path)
        data = content.encode("utf-8")
        info = self.box.lstat(target)
        before = info.st_size if info is not None else 0
        total = self.box.write_atomic(target, data, prefix=before)
        return ToolResult(
            status="ok",
            content=f"appended {len(data)} bytes to {self.show(target)} (now {total} bytes)",
            meta={"path": self.show(target), "bytes": len(data), "size": total},
        )

    @guarded
    def delete_file(
        self,
        path: FilePath,
        require_confirmation: Annotated[
            bool, Field(description="Ask a person first (cannot relax the approval policy).")
        ] = True,
    ) -> ToolResult:
        """Delete a file (not a directory)."""
        # require_confirmation is read before the call, by escalate_delete.
        target = self.box.resolve_entry(path)
        self.box.unlink(target)
        return ToolResult(
            status="ok", content=f"deleted {self.show(target)}", meta={"path": self.show(target)}
        )

    def _destination(self, source: Target, given: object) -> Target:
        destination = self.box.resolve(given, field="destination")
        info = self.box.lstat(destination)
        if info is not None and stat.S_ISDIR(info.st_mode):
            inner = os.path.join(str(destination.path), source.path.name)
            destination = self.box.resolve(inner, field="destination")
        if destination.path == source.path:
            raise SandboxError("BAD_ARGUMENTS", "source and destination are the same file")
        return destination

    @guarded
    def move_file(self, source: FilePath, destination: FilePath) -> ToolResult:
        """Move or rename a file or directory; into a directory when the destination is one. An
        existing destination file is replaced.
        """  # noqa: D205 - the model reads the first paragraph whole, as the tool's description
        src = self.box.resolve_entry(source, field="source")
        self.box.check_holds_none(src)
        dst = self._destination(src, destination)
        if src.path in dst.path.parents:
            raise SandboxError("BAD_ARGUMENTS", "cannot move a directory into itself")
        try:
            self.box.rename(src, dst)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            self._copy(src, dst)
            self.box.unlink(src)
        return ToolResult(
            status="ok",
            content=f"moved {self.show(src)} to {self.show(dst)}",
            meta={"source": self.show(src), "destination": self.show(dst)},
        )

    def _copy(self, source: Target, destination: Target) -> int:
        with self.box.open_file(source) as (fd, _):
            return self.box.write_atomic(destination, iter(lambda: os.read(fd, 1 << 16), b""))

    @guarded
    def copy_file(self, source: FilePath, destination: FilePath) -> ToolResult:
        """Copy a file; into a directory when the destination is one. An existing destination
        file is replaced.
        """  # noqa: D205 - the model reads the first paragraph whole, as the tool's description
        src = self.box.resolve(source, field="source")
        dst = self._destination(src, destination)
        written = self._copy(src, dst)
        return ToolResult(
            status="ok",
            content=f"copied {self.show(src)} to {self.show(dst)} ({written} bytes)",
            meta={"source": self.show(src), "destination": self.show(dst)},
        )

    # Previews --------------------------------------------------------------------------------
    def _current_text(self, target: Target) -> tuple[str | None, str]:
        """The file's text for a diff, or None and why there is none."""
        try:
            return self.box.read_bytes(target).decode("utf-8"), ""
        except SandboxError as exc:
            return None, str(exc)
        except UnicodeError:
            return None, "it is not UTF-8 text"
        except OSError as exc:
            return None, str(exc.strerror)

    def _diff(self, target: Target, old: str | None, new: str) -> str:
        name = self.named(target)
        lines = _unified(
            (old or "").splitlines(keepends=True),
            new.splitlines(keepends=True),
            "/dev/null" if old is None else f"a/{name}",
            f"b/{name}",
        )
        out = [
            line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
            for line in lines
        ]
        if len(out) > _DIFF_LINES:
            out = [*out[:_DIFF_LINES], f"... ({len(out) - _DIFF_LINES} more diff lines)\n"]
        return "".join(out).rstrip("\n") or "(no change)"

    def _preview_start(
        self, tool: str, args: dict[str, Any], effect: str
    ) -> str | tuple[Target, bool, str | None]:
        """The target of a write's preview, whether it exists and its text now.

        A preview line instead when there is no diff to show: the path is refused, or the file
        there is not text (``effect`` says what the write does to it).
        """
        try:
            target = self.box.resolve(args.get("path"))
        except SandboxError as exc:
            return f"{tool}: refused: {visible(str(exc))}"
        exists = self.box.lstat(target) is not None
        old, why = self._current_text(target) if exists else (None, "")
        if exists and old is None:
            return f"{tool} {self.named(target)}: {effect} (no diff: {why})"
        return target, exists, old

    def preview_write(self, args: dict[str, Any]) -> str:
        start = self._preview_start("write_file", args, "replaces the file")
        if isinstance(start, str):
            return start
        target, exists, old = start
        head = f"write_file {self.named(target)} ({'replace' if exists else 'new file'}):\n"
        return head + self._diff(target, old, str(args.get("content", "")))

    def preview_append(self, args: dict[str, Any]) -> str:
        start = self._preview_start("append_file", args, "appends to the file")
        if isinstance(start, str):
            return start
        target, exists, old = start
        new = (old or "") + str(args.get("content", ""))
        head = f"append_file {self.named(target)}{'' if exists else ' (new file)'}:\n"
        return head + self._diff(target, old, new)

    def _describe(self, given: object, field: str, *, entry: bool = False) -> str:
        resolve = self.box.resolve_entry if entry else self.box.resolve
        try:
            target = resolve(given, field=field, check_extension=False)
        except SandboxError as exc:
            return f"{given!r} (refused: {visible(str(exc))})"
        info = self.box.lstat(target)
        if info is None:
            return f"{self.named(target)} (does not exist)"
        size = f", {info.st_size} bytes" if stat.S_ISREG(info.st_mode) else ""
        return f"{self.named(target)} ({file_kind(info.st_mode)}{size})"

    def preview_delete(self, args: dict[str, Any]) -> str:
        return f"delete_file: delete {self._describe(args.get('path'), 'path', entry=True)}"

    def preview_move(self, args: dict[str, Any]) -> str:
        return (
            f"move_file: move {self._describe(args.get('source'), 'source', entry=True)} to "
            f"{self._describe(args.get('destination'), 'destination')}"
        )

    def preview_copy(self, args: dict[str, Any]) -> str:
        return (
            f"copy_file: copy {self._describe(args.get('source'), 'source')} to "
            f"{self._describe(args.get('destination'), 'destination')}"
        )

    def escalate_delete(self, args: dict[str, Any]) -> str | None:
        if args.get("require_confirmation", True) is False:
            return None
        return f"delete_file asks for confirmation before deleting {args.get('path')!r}"


def _unified(a: list[str], b: list[str], fromfile: str, tofile: str) -> Iterable[str]:
    """A unified diff of ``a`` to ``b`` in bounded time.

    Previews are made for every call before any approval, and difflib's matching is quadratic in
    the lines that differ: a 1 MB file with every other line changed took minutes. Past
    ``_DIFF_WORK``, the lines between the common head and tail are shown as one hunk, removed
    and added: still exactly the change, only not the smallest diff of it.
    """
    head, shorter = 0, min(len(a), len(b))
    while head < shorter and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < shorter - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    removed, added = a[head : len(a) - tail], b[head : len(b) - tail]
    if len(removed) * len(added) <= _DIFF_WORK:
        return difflib.unified_diff(a, b, fromfile=fromfile, tofile=tofile)

    def span(count: int) -> str:  # as difflib writes a hunk's range
        return f"{head + 1}" if count == 1 else f"{head + 1 if count else head},{count}"

    hunk = f"@@ -{span(len(removed))} +{span(len(added))} @@\n"
    return [
        f"--- {fromfile}\n",
        f"+++ {tofile}\n",
        hunk,
        *("-" + line for line in removed),
        *("+" + line for line in added),
    ]


def _summary(verb: str) -> Callable[[ToolResult], str]:
    def line(result: ToolResult) -> str:
        if result["status"] != "ok":
            return f"{verb}: {result.get('error')}"
        meta = result.get("meta") or {}
        content = result.get("content")
        if isinstance(content, dict) and "entries" in content:
            more = " (truncated)" if content.get("truncated") else ""
            return f"{verb} {content['path']}: {len(content['entries'])} entries{more}"
        if isinstance(content, dict):
            return f"{verb} {content.get('path')}: {content.get('type')}, {content.get('size')} B"
        if verb == "read_file":
            return f"read_file {meta.get('path')}: {meta.get('bytes')} bytes"
        return str(content)

    return line


def file_tools(sandbox: Sandbox, config: FileToolsConfig) -> list[ToolSpec]:
    """The eight file tools, sharing one sandbox.

    Examples:
        >>> import tempfile
        >>> from ai_agent.config import FileToolsConfig
        >>> box = Sandbox(tempfile.mkdtemp())
        >>> [t.name for t in file_tools(box, FileToolsConfig())][:3]
        ['read_file', 'write_file', 'append_file']
    """
    t = FileTools(sandbox, config)
    ro, mod = ToolCategory.READ_ONLY, ToolCategory.MODIFICATION

    def spec(fn: Callable[..., ToolResult], category: ToolCategory, **hooks: Any) -> ToolSpec:
        summary = _summary(fn.__name__)
        return builtin_spec(fn, category=category, group=_GROUP, format_result=summary, **hooks)

    return [
        spec(t.read_file, ro),
        spec(t.write_file, mod, preview=t.preview_write),
        spec(t.append_file, mod, preview=t.preview_append),
        spec(t.list_directory, ro),
        spec(t.file_info, ro),
        spec(t.delete_file, mod, preview=t.preview_delete, escalate=t.escalate_delete),
        spec(t.move_file, mod, preview=t.preview_move),
        spec(t.copy_file, mod, preview=t.preview_copy),
    ]
