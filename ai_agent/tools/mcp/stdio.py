"""The stdio transport: the server as a child process, JSON-RPC lines over its stdin and stdout.

The same protocol as ``mcp.client.stdio.stdio_client`` (whose building blocks it uses), with what
a managed lifecycle needs and that client does not give: the process itself (its pid, and whether
it has exited, for health checks and crash detection), and its stderr read line by line instead of
going to ours (the tail explains a failed start; each line is logged at DEBUG).

The child starts in a session of its own. On close, stdin is closed (the MCP way to ask a stdio
server to exit), then after ``grace`` seconds the whole process group gets SIGTERM and SIGKILL,
and finally anything left in the group is killed, so a server that started helpers (``npx``
starts ``node``) leaves no orphans.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
from anyio.streams.text import TextReceiveStream
from mcp import types
from mcp.client.stdio import get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

from ai_agent.datafiles import valid_text

if TYPE_CHECKING:
    from anyio.abc import Process
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = ["stdio_transport"]


MAX_LINE_CHARS = 64 * 1024 * 1024
"""The longest line a server may send (a message is one line): far above a large result with
images in it, and a bound on what a server that never ends its line makes the engine hold."""


# An escaped half of a UTF-16 surrogate pair: the only lines worth a second parse.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class LineTooLongError(ValueError):
    """A server's line passed `MAX_LINE_CHARS`: it is skipped, up to its end."""


async def _pump_stdout(process: Process, sink: MemoryObjectSendStream[Any]) -> None:
    if process.stdout is None:  # pragma: no cover - opened with a pipe
        return
    try:
        async with sink:
            # errors="replace": a byte that is not UTF-8 (a binary log line) would otherwise
            # raise here and end the session; replaced, its line is skipped like other noise.
            stream = TextReceiveStream(process.stdout, encoding="utf-8", errors="replace")
            async for line in _lines(stream):
                if isinstance(line, Exception):
                    await sink.send(line)
                    continue
                if not line.strip():
                    continue
                try:
                    message = _message(line)
                except Exception as exc:
                    # A server printing something else on stdout: the session hears of it.
                    await sink.send(exc)
                    continue
                await sink.send(SessionMessage(message))
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        await anyio.lowlevel.checkpoint()


def _message(line: str) -> types.JSONRPCMessage:
    r"""One line as a JSON-RPC message; a lone UTF-16 surrogate in it is read as U+FFFD.

    JavaScript's ``JSON.stringify`` writes half of a surrogate pair as an escape (``\ud83d``,
    from text cut between the two halves, such as an emoji), and the JSON parser of pydantic
    refuses the whole line: a reply dropped so, having no id, left its call waiting for the
    timeout, and a tool list so dropped failed the start. Python's own parser reads the half,
    which is then replaced as ``errors="replace"`` does a byte that is not UTF-8.
    """
    try:
        return types.JSONRPCMessage.model_validate_json(line)
    except ValueError as refused:
        if not _SURROGATE_ESCAPE.search(line):
            raise
        try:
            text = json.dumps(json.loads(line), ensure_ascii=False)  # the halves stay raw here
            return types.JSONRPCMessage.model_validate_json(valid_text(text))
        except (ValueError, RecursionError):
            raise refused from None


async def _lines(chunks: AsyncIterator[str]) -> AsyncIterator[str | Exception]:
    """The lines of a stream of text, each at most `MAX_LINE_CHARS` long.

    A line's pieces are kept apart until its end arrives (joining them at each piece took time
    growing with the square of a long line's length), and one past the limit is dropped up to
    its end: in its place comes a `LineTooLongError`, once.
    """
    parts: list[str] = []
    held, skipping = 0, False
    async for chunk in chunks:
        *ended, rest = chunk.split("\n")
        for piece in ended:
            if not skipping:
                yield "".join([*parts, piece])
            parts, held, skipping = [], 0, False
        held += len(rest)
        if skipping or held > MAX_LINE_CHARS:
            if not skipping:
                yield LineTooLongError(
                    f"the server sent a line of more than {MAX_LINE_CHARS:,} characters without "
                    "ending it; it is skipped"
                )
            parts, skipping = [], True
        elif rest:
            parts.append(rest)


async def _pump_stdin(process: Process, source: MemoryObjectReceiveStream[SessionMessage]) -> None:
    if process.stdin is None:  # pragma: no cover - opened with a pipe
        return
    try:
        async with source:
            async for message in source:
                line = message.message.model_dump_json(by_alias=True, exclude_none=True)
                await process.stdin.send((line + "\n").encode())
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        await anyio.lowlevel.checkpoint()


async def _pump_stderr(process: Process, on_line: Callable[[str], None]) -> None:
    if process.stderr is None:  # pragma: no cover - opened with a pipe
        return
    buffer = ""
    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
        async for chunk in TextReceiveStream(process.stderr, encoding="utf-8", errors="replace"):
            lines = (buffer + chunk).split("\n")
            buffer = lines.pop()
            for line in lines:
                on_line(line)
    if buffer:
        on_line(buffer)


def _kill_group(pid: int) -> None:
    """SIGKILL whatever is left in the process group the server led."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def _shut_down(process: Process, grace: float) -> None:
    if process.stdin is not None:
        with contextlib.suppress(Exception):
            await process.stdin.aclose()
    exited = False
    with anyio.move_on_after(grace):
        await process.wait()
        exited = True
    if not exited:
        await terminate_posix_process_tree(process, grace)
        with anyio.move_on_after(grace):
            await process.wait()
    _kill_group(process.pid)


@asynccontextmanager
async def stdio_transport(
    command: str,
    args: list[str],
    *,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    on_stderr: Callable[[str], None] = lambda line: None,
    grace: float = 2.0,
) -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[Any], MemoryObjectSendStream[SessionMessage], Process]
]:
    """Start the server process and yield ``(read, write, process)`` for a ClientSession.

    Args:
        command: The program.
        args: Its arguments.
        env: Variables added to the small default environment (HOME, LOGNAME, PATH, SHELL,
            TERM, USER): the agent's own environment, and its keys, are not passed on.
        cwd: Working directory.
        on_stderr: Called with each line the server writes to stderr.
        grace: Seconds the server gets to exit after stdin closes, and after SIGTERM.

    Raises:
        OSError: The program cannot be started (not found, not executable).
    """
    read_in, read_out = anyio.create_memory_object_stream[Any](0)
    write_in, write_out = anyio.create_memory_object_stream[SessionMessage](0)
    try:
        process = await anyio.open_process(
            [command, *args],
            env={**get_default_environment(), **(env or {})},
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError:
        for stream in (read_in, read_out, write_in, write_out):
            await stream.aclose()
        raise
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_pump_stdout, process, read_in)
        tasks.start_soon(_pump_stdin, process, write_out)
        tasks.start_soon(_pump_stderr, process, on_stderr)
        try:
            yield read_out, write_in, process
        finally:
            with anyio.CancelScope(shield=True):
                await _shut_down(process, grace)
                for stream in (read_out, write_in):
                    await stream.aclose()
                tasks.cancel_scope.cancel()
                await process.aclose()
