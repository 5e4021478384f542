"""The file tools (spec 5.4.1): read, write, append, list, info, delete, move, copy.

Every path goes through the `Sandbox`. Reading tools are
READ_ONLY; the others are MODIFICATION tools, and their previews show a person exactly what would
change: a unified diff for ``write_file`` and ``append_file``, the target (and what it is) for
``delete_file``, ``move_file`` and ``copy_file``.
"""

from __future__ import annotations

import codecs
import dataclasses
import difflib
import errno
import functools
import os
import stat
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ai_agent.config import FileToolsConfig
from ai_agent.state import ToolResult
from ai_agent.tools.builtin.protected import ProtectedPaths
from ai_agent.tools.builtin.sandbox import Sandbox, SandboxError, Target, file_kind
from ai_agent.tools.builtin.walk import require_directory, walk
from ai_agent.tools.spec import ToolCategory, ToolSpec

__all__ = ["file_tools", "sandbox_for"]

_GROUP = "files"
_MAX_LIST = 1000
_DIFF_LINES = 200

Fn = Callable[[dict[str, Any], dict[str, Any]], ToolResult]


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


def guarded(fn: Fn) -> Fn:
    """Turn the sandbox's refusals and OS errors into error results with a code."""

    @functools.wraps(fn)
    def run(args: dict[str, Any], ctx: dict[str, Any]) -> ToolResult:
        try:
            return fn(args, ctx)
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


def _encoding(args: dict[str, Any]) -> str:
    name = args.get("encoding") or "utf-8"
    try:
        return codecs.lookup(name).name
    except LookupError:
        raise SandboxError("BAD_ARGUMENTS", f"unknown encoding {name!r}") from None


def _string(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str):
        raise SandboxError("BAD_ARGUMENTS", f"{key} must be a string")
    return value


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


_PATH = {"type": "string", "description": "File path, relative to the working directory."}
_ENCODING = {"type": "string", "description": "Text encoding.", "default": "utf-8"}
_CONTENT = {"type": "string", "description": "The text to write."}


class FileTools:
    """The eight file tools over one sandbox."""

    def __init__(self, sandbox: Sandbox, config: FileToolsConfig) -> None:
        self.box = sandbox
        self.config = config

    def show(self, target: Target) -> str:
        return self.box.display(target.path, absolute=self.config.absolute_paths)

    # Reading ---------------------------------------------------------------------------------
    def read_file(self, args: dict[str, Any], ctx: dict[str, Any]) -> ToolResult:
        target = self.box.resolve(args.get("path"))
        encoding = _encoding(args)
        data = self.box.read_bytes(target, on_chunk=_streamer(ctx, encoding))
        text = data.decode(encoding)
        return ToolResult(
            status="ok",
            content=text,
            meta={"path": self.show(target), "bytes": len(data), "encoding": encoding},
        )

    def list_directory(self, args: dict[str, Any], ctx: dict[str, Any]) -> ToolResult:
        target = self.box.resolve(args.get("path") or ".", check_extension=False)
        recursive = bool(args.get("recursive", False))
        depth = int(args.get("max_depth", 2)) if recursive else 1
        if depth < 1:
            raise SandboxError("BAD_ARGUMENTS", "max_depth must be at least 1")
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

    def file_info(self, args: dict[str, Any], ctx: dict[str, Any]) -> ToolResult:
        target = self.box.resolve(args.get("path"), check_extension=False)
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
    def write_file(self, args: dict[str, Any], ctx: dict[str, Any]) -> ToolResult:
        target = self.box.resolve(args.get("path"))
        data = _string(args, "content").encode(_encoding(args))
        existed = self.box.lstat(target) is not None
        written = self.box.write_atomic(target, data)
        verb = "replaced" if existed else "created"
        return ToolResult(
            status="ok",
            content=f"{verb} {self.show(target)} ({written} bytes)",
            meta={"path": self.show(target), "bytes": written, "created": not existed},
        )

    def append_file(self, args: dict[str, Any], ctx: dict[str, Any]) -> ToolResult:
        target = self.box.resolve(args.get("path"))
        data = _string(args, "content").encode("utf-8")
        info = self.box.lstat(target)
        before = info.st_size if info is not None else 0
        total = self.box.write_atomic(target, data, prefix=before)
        return ToolResult(
            status="ok",
            content=f"appended {len(data)} bytes to {self.show(target)} (now {total} bytes)",
            meta={"path": self.show(target), "bytes": len(data), "size": total},
        )

    def delete_file(self, args: dict[str, Any], ctx: dict[str, Any]) -> ToolResult:
        target = self.box.resolve_entry(args.get("path"))
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

    def move_file(self, args: dict[str, Any], ctx: dict[str, Any]) -> ToolResult:
        source = self.box.resolve_entry(args.get("source"), field="source")
        self.box.check_holds_none(source)
        destination = self._destination(source, args.get("destination"))
        if source.path in destination.path.parents:
            raise SandboxError("BAD_ARGUMENTS", "cannot move a directory into itself")
        try:
            self.box.rename(source, destination)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            self._copy(source, destination)
            self.box.unlink(source)
        return ToolResult(
            status="ok",
            content=f"moved {self.show(source)} to {self.show(destination)}",
            meta={"source": self.show(source), "destination": self.show(destination)},
        )

    def _copy(self, source: Target, destination: Target) -> int:
        with self.box.open_file(source) as (fd, _):
            return self.box.write_atomic(destination, iter(lambda: os.read(fd, 1 << 16), b""))

    def copy_file(self, args: dict[str, Any], ctx: dict[str, Any]) -> ToolResult:
        source = self.box.resolve(args.get("source"), field="source")
        destination = self._destination(source, args.get("destination"))
        written = self._copy(source, destination)
        return ToolResult(
            status="ok",
            content=f"copied {self.show(source)} to {self.show(destination)} ({written} bytes)",
            meta={"source": self.show(source), "destination": self.show(destination)},
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
        name = self.show(target)
        lines = difflib.unified_diff(
            (old or "").splitlines(keepends=True),
            new.splitlines(keepends=True),
            fromfile="/dev/null" if old is None else f"a/{name}",
            tofile=f"b/{name}",
        )
        out = [
            line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
            for line in lines
        ]
        if len(out) > _DIFF_LINES:
            out = [*out[:_DIFF_LINES], f"... ({len(out) - _DIFF_LINES} more diff lines)\n"]
        return "".join(out).rstrip("\n") or "(no change)"

    def preview_write(self, args: dict[str, Any]) -> str:
        try:
            target = self.box.resolve(args.get("path"))
        except SandboxError as exc:
            return f"write_file: refused: {exc}"
        exists = self.box.lstat(target) is not None
        old, why = self._current_text(target) if exists else (None, "")
        if exists and old is None:
            return f"write_file {self.show(target)}: replaces the file (no diff: {why})"
        head = f"write_file {self.show(target)} ({'replace' if exists else 'new file'}):\n"
        return head + self._diff(target, old, str(args.get("content", "")))

    def preview_append(self, args: dict[str, Any]) -> str:
        try:
            target = self.box.resolve(args.get("path"))
        except SandboxError as exc:
            return f"append_file: refused: {exc}"
        exists = self.box.lstat(target) is not None
        old, why = self._current_text(target) if exists else (None, "")
        if exists and old is None:
            return f"append_file {self.show(target)}: appends to the file (no diff: {why})"
        new = (old or "") + str(args.get("content", ""))
        head = f"append_file {self.show(target)}{'' if exists else ' (new file)'}:\n"
        return head + self._diff(target, old, new)

    def _describe(self, given: object, field: str, *, entry: bool = False) -> str:
        resolve = self.box.resolve_entry if entry else self.box.resolve
        try:
            target = resolve(given, field=field, check_extension=False)
        except SandboxError as exc:
            return f"{given!r} (refused: {exc})"
        info = self.box.lstat(target)
        if info is None:
            return f"{self.show(target)} (does not exist)"
        size = f", {info.st_size} bytes" if stat.S_ISREG(info.st_mode) else ""
        return f"{self.show(target)} ({file_kind(info.st_mode)}{size})"

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
    specs = [
        ToolSpec(
            "read_file",
            guarded(t.read_file),
            description="Read a text file and return its contents.",
            parameters=_schema({"path": _PATH, "encoding": _ENCODING}, ["path"]),
            category=ro,
            format_result=_summary("read_file"),
        ),
        ToolSpec(
            "write_file",
            guarded(t.write_file),
            description="Write a text file, replacing it if it exists (parent directories are "
            "created). A person sees the diff before it is written.",
            parameters=_schema(
                {"path": _PATH, "content": _CONTENT, "encoding": _ENCODING}, ["path", "content"]
            ),
            category=mod,
            preview=t.preview_write,
            format_result=_summary("write_file"),
        ),
        ToolSpec(
            "append_file",
            guarded(t.append_file),
            description="Append text to the end of a file (created if missing).",
            parameters=_schema({"path": _PATH, "content": _CONTENT}, ["path", "content"]),
            category=mod,
            preview=t.preview_append,
            format_result=_summary("append_file"),
        ),
        ToolSpec(
            "list_directory",
            guarded(t.list_directory),
            description="List a directory's entries (name, type, size); recursive lists "
            "subdirectories down to max_depth levels. Symlinks are listed, not followed.",
            parameters=_schema(
                {
                    "path": {**_PATH, "description": "Directory path."},
                    "recursive": {"type": "boolean", "default": False},
                    "max_depth": {"type": "integer", "minimum": 1, "default": 2},
                },
                ["path"],
            ),
            category=ro,
            format_result=_summary("list_directory"),
        ),
        ToolSpec(
            "file_info",
            guarded(t.file_info),
            description="Metadata of a file or directory: type, size, modification time, mode.",
            parameters=_schema({"path": _PATH}, ["path"]),
            category=ro,
            format_result=_summary("file_info"),
        ),
        ToolSpec(
            "delete_file",
            guarded(t.delete_file),
            description="Delete a file (not a directory).",
            parameters=_schema(
                {
                    "path": _PATH,
                    "require_confirmation": {
                        "type": "boolean",
                        "default": True,
                        "description": "Ask a person first (cannot relax the approval policy).",
                    },
                },
                ["path"],
            ),
            category=mod,
            preview=t.preview_delete,
            escalate=t.escalate_delete,
            format_result=_summary("delete_file"),
        ),
        ToolSpec(
            "move_file",
            guarded(t.move_file),
            description="Move or rename a file or directory; into a directory when the "
            "destination is one. An existing destination file is replaced.",
            parameters=_schema({"source": _PATH, "destination": _PATH}, ["source", "destination"]),
            category=mod,
            preview=t.preview_move,
            format_result=_summary("move_file"),
        ),
        ToolSpec(
            "copy_file",
            guarded(t.copy_file),
            description="Copy a file; into a directory when the destination is one. An "
            "existing destination file is replaced.",
            parameters=_schema({"source": _PATH, "destination": _PATH}, ["source", "destination"]),
            category=mod,
            preview=t.preview_copy,
            format_result=_summary("copy_file"),
        ),
    ]
    return [dataclasses.replace(s, group=_GROUP) for s in specs]
