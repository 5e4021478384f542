"""A command under the reaper: its output read as it comes, every process it started stopped.

The command runs as ``bash -c`` under a reaper (`ai_agent.tools.builtin._reaper`) that leads a
session of its own and adopts what the command leaves behind. On timeout, or when the call is
cancelled, the command's processes get SIGTERM and, after a short grace, SIGKILL; they are found
through ``/proc`` by session and by parent, so a child that ignores SIGTERM, moves to a group or
session of its own, or detaches completely (double-forking) is still gone. When the engine dies,
even by SIGKILL, the reaper kills them all: a command never outlives the engine.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ai_agent.tools.builtin._reaper import descendants

__all__ = ["Capture", "Command", "supervise"]

_GRACE = 1.0
_REAPER = str(Path(__file__).with_name("_reaper.py"))
_DRAIN = 1.0  # seconds background jobs may keep writing after the shell exits


def _kill_tree(pid: int, known: list[int] | None = None) -> None:
    """SIGKILL every process below the reaper ``pid`` or in its session (``known`` too).

    The reaper itself stays: it still reports the command's exit status, and kills whatever
    is left when the engine lets it go.
    """
    for victim in sorted({*descendants(pid), *(known or [])} - {pid}):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(victim, signal.SIGKILL)


class Capture:
    """Reads one stream, keeping at most ``limit`` bytes and counting the rest."""

    def __init__(
        self, name: str, limit: int, on_output: Callable[[bytes, str], Any] | None
    ) -> None:
        self.name, self.limit, self.on_output = name, limit, on_output
        self.kept = bytearray()
        self.total = 0
        self.cut_off = False  # a process that left the command kept the stream open

    async def read(self, stream: asyncio.StreamReader) -> None:
        """Read ``stream`` to its end, passing every chunk on to the listener."""
        while chunk := await stream.read(1 << 14):
            self.total += len(chunk)
            room = self.limit - len(self.kept)
            if room > 0:
                self.kept += chunk[:room]
            if self.on_output is not None:
                with contextlib.suppress(Exception):  # a listener's bug must not break the call
                    self.on_output(chunk, self.name)

    @property
    def text(self) -> str:
        """What was kept, decoded, with a note of what was not."""
        text = self.kept.decode("utf-8", "replace")
        if self.total > len(self.kept):
            text += f"\n[... {self.total - len(self.kept)} more bytes not kept]"
        if self.cut_off:
            text += "\n[a process that detached from the command kept this open; not read further]"
        return text


class Command:
    """A command running under the reaper (`ai_agent.tools.builtin._reaper`).

    The engine holds the write end of the reaper's WATCH pipe and never writes to it: when the
    call is over the engine closes it, and when the engine dies (even by SIGKILL) the kernel
    does; either way the reaper then kills everything the command started. The command's exit
    status arrives on the STATUS pipe, because the reaper itself outlives the command.
    """

    def __init__(self, proc: asyncio.subprocess.Process, watch: int, status: int) -> None:
        self.proc = proc
        self.watch = watch
        self.status: asyncio.Future[int | None] = asyncio.ensure_future(_read_status(status))

    @classmethod
    async def start(cls, argv: list[str], cwd: Path, env: dict[str, str]) -> Command:
        """Start ``argv`` under a reaper that leads a session of its own."""
        watch_r, watch_w = os.pipe()
        status_r, status_w = os.pipe()
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-I",
                _REAPER,
                str(watch_r),
                str(status_w),
                "--",
                *argv,
                cwd=cwd,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                pass_fds=(watch_r, status_w),
                start_new_session=True,
            )
        except BaseException:
            os.close(watch_w)
            os.close(status_r)
            raise
        finally:
            os.close(watch_r)
            os.close(status_w)
        return cls(proc, watch_w, status_r)

    @property
    def ended(self) -> bool:
        """True once the command (not its background jobs) has ended."""
        return self.status.done()

    @property
    def code(self) -> int | None:
        """The command's exit status (negative: killed by that signal), or the reaper's."""
        code = self.status.result() if self.status.done() else None
        return code if code is not None else self.proc.returncode

    async def release(self) -> None:
        """Let the reaper go: it kills whatever is left and exits (once per command)."""
        os.close(self.watch)
        try:
            await asyncio.wait_for(asyncio.shield(self.proc.wait()), _GRACE)
        except TimeoutError:  # pragma: no cover - the reaper only waits for its kills
            _kill_tree(self.proc.pid)
            os.kill(self.proc.pid, signal.SIGKILL)
            await self.proc.wait()
        # The reaper held the only other end of the status pipe: it is at its end now.
        await self.status


async def _read_status(fd: int) -> int | None:
    """The exit status the reaper writes (None when it ended without writing one)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", 0)
    )
    try:
        text = (await reader.read()).decode().strip()
    finally:
        transport.close()
    return int(text) if text.lstrip("-").isdigit() else None


async def supervise(child: Command, out: Capture, err: Capture, seconds: float) -> bool:
    """Wait for the shell and its output; True when it ran out of time.

    However the call ends (done, timed out, cancelled), everything the command started is killed
    before it returns: background jobs get ``_DRAIN`` seconds after the shell exits to finish
    their output.
    """
    proc = child.proc
    if proc.stdout is None or proc.stderr is None:  # pragma: no cover - both are pipes
        raise RuntimeError("run_bash needs the command's stdout and stderr as pipes")
    done = asyncio.ensure_future(
        asyncio.gather(out.read(proc.stdout), err.read(proc.stderr), asyncio.shield(child.status))
    )
    try:
        try:
            timed_out = await _watch(child, done, asyncio.get_running_loop().time() + seconds)
            if not timed_out and not done.done():
                await asyncio.wait({done}, timeout=_DRAIN)
        finally:
            await _stop(proc, done, out, err)
    finally:
        await child.release()
    return timed_out


async def _watch(child: Command, done: asyncio.Future[Any], deadline: float) -> bool:
    """Until the shell has exited (False) or the deadline has passed (True).

    ``done`` finishes when the shell has exited *and* its output is closed, which is the usual
    way; a background process holding the output open is noticed through the exit status.
    """
    loop = asyncio.get_running_loop()
    while not done.done() and not child.ended:
        remaining = deadline - loop.time()
        if remaining <= 0:
            return True
        await asyncio.wait({done}, timeout=min(remaining, 0.2))
    return False


async def _stop(
    proc: asyncio.subprocess.Process, done: asyncio.Future[Any], out: Capture, err: Capture
) -> None:
    """SIGTERM the command's group and tree, SIGKILL what is left; stop reading for good.

    The reaper leads the group and ignores SIGTERM; the processes it adopted (ones that left
    the group) are among its descendants.
    """
    if not done.done():
        victims = descendants(proc.pid)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        for victim in victims:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(victim, signal.SIGTERM)
        await asyncio.wait({done}, timeout=_GRACE)
        _kill_tree(proc.pid, victims)
        await asyncio.wait({done}, timeout=_GRACE)
    if not done.done():
        # A process that left the command entirely still holds the output open: stop reading.
        done.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await done
        transport = getattr(proc, "_transport", None)  # asyncio offers no public close
        if transport is not None:
            transport.close()
        out.cut_off = err.cut_off = True
