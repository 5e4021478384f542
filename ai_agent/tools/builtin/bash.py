"""``run_bash`` (spec 5.4.4): a shell command with stdout, stderr, exit code and a hard timeout.

- The command runs as ``bash -c`` under a reaper (`ai_agent.tools.builtin._reaper`) that leads
  a session of its own and adopts what the command leaves behind. On timeout, or when the call
  is cancelled, the command's processes get SIGTERM and, after a short grace, SIGKILL; they are
  found through ``/proc`` by session and by parent, so a child that ignores SIGTERM, moves to a
  group or session of its own, or detaches completely (double-forking) is still gone. When the
  engine dies, even by SIGKILL, the reaper kills them all: a command never outlives the engine.
- Each command gets rlimits (`ai_agent.tools.builtin.limits`): processes, memory and CPU time,
  set by the shell inside the sandbox before the command runs; failing on one is an error
  naming the setting (``RESOURCE_LIMIT``). The process limit is also a pids cgroup of the
  call's own (`ai_agent.tools.builtin.cgroups`), which binds root too; where none can be made
  and the engine runs as root, the tool's description and previews say the limit does not hold.
- Output is read as it comes, capped per stream (the rest is counted, not kept); every chunk also
  goes to ``ctx["on_output"](data, stream)`` (``stdout``/``stderr``), which the act stage turns
  into live ``tool_output`` events.
- The working directory must be inside the file sandbox. The environment is the agent's minus
  anything that looks like a secret (``*KEY*``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``...,
  ``MAMBA_*``) and minus variables that hijack the shell (``BASH_ENV``, ``BASH_FUNC_*``,
  ``LD_PRELOAD``...); ``env`` adds variables, never those.
- Allow and deny lists name programs and are checked on every command of the *parsed* command
  line (`ai_agent.tools.builtin.shellparse`); a line that cannot be fully read is refused
  while a list is configured. With a list configured, ``PATH`` cannot be changed either.
- Destructive commands (``rm``, ``dd``, ``git reset --hard``, overwriting redirections...) and
  command lines that cannot be read are escalated: they wait for a person even where shell
  commands would otherwise run unasked.
- ``sandbox="bwrap"`` runs the command under bubblewrap: the system read-only, only the sandbox
  base directory writable, a private ``/tmp``, no network, no capabilities, and the engine's own
  state (`ai_agent.tools.builtin.protected`) hidden under empty tmpfs mounts. Without it
  (``sandbox="none"``) nothing is hidden from the command: it can do what the engine's user can.

Injection: the command string is run by a shell on purpose. Never build it by pasting untrusted
text into a template; pass data through ``env`` and reference it as ``"$NAME"``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ai_agent.config import BashToolConfig
from ai_agent.state import ToolResult
from ai_agent.tools.builtin._reaper import descendants
from ai_agent.tools.builtin.cgroups import call_cgroup, warn_process_limit_gap
from ai_agent.tools.builtin.limits import rlimits, ulimit_prefix
from ai_agent.tools.builtin.sandbox import Sandbox, SandboxError
from ai_agent.tools.builtin.shellparse import Parsed, parse_command
from ai_agent.tools.builtin.walk import require_directory
from ai_agent.tools.spec import ToolCategory, ToolSpec

__all__ = ["BashTool", "bash_tool", "root_dirs"]

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|^MAMBA_", re.IGNORECASE)
_HIJACK = re.compile(
    r"^(BASH_ENV|ENV|BASH_FUNC_.*|LD_PRELOAD|LD_AUDIT|LD_LIBRARY_PATH|SHELLOPTS|BASHOPTS|PS4|"
    r"IFS|PROMPT_COMMAND|GLOBIGNORE|CDPATH|PYTHONSTARTUP|PERL5OPT|NODE_OPTIONS)$"
)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_GRACE = 1.0
# Tasks of the call that are not the command's: the reaper, and bubblewrap's two (its monitor
# and the sandbox's init). The pids cgroup allows them on top of max_processes.
_HELPERS = {"none": 1, "bwrap": 3}
_REAPER = str(Path(__file__).with_name("_reaper.py"))
_DRAIN = 1.0  # seconds background jobs may keep writing after the shell exits
_DESTRUCTIVE = frozenset(
    (
        "rm",
        "rmdir",
        "unlink",
        "shred",
        "dd",
        "truncate",
        "wipefs",
        "fdisk",
        "sfdisk",
        "parted",
        "mkswap",
        "kill",
        "killall",
        "pkill",
        "reboot",
        "shutdown",
        "halt",
        "poweroff",
        "sudo",
        "doas",
        "crontab",
    )
)
_HARMLESS_TARGETS = frozenset(("/dev/null", "/dev/stdout", "/dev/stderr"))
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


_SANDBOX_NOTE = {
    "bwrap": "It runs sandboxed: only the workspace is writable, no network, and the engine's "
    "own state is not visible.",
    "none": "It runs without an OS sandbox: it can read and change whatever the engine's user "
    "can, the engine's own state included.",
}


def _destructive(parsed: Parsed) -> list[str]:
    """Why the commands could destroy data or stop processes (empty when they look safe)."""
    reasons: list[str] = []
    for cmd in parsed.commands:
        name, args = cmd.name, cmd.args
        if name in _DESTRUCTIVE or name.startswith("mkfs"):
            reasons.append(f"{name} {' '.join(args)}".strip())
        elif name in ("chmod", "chown", "chgrp") and any(a in ("-R", "--recursive") for a in args):
            reasons.append(f"{name} -R")
        elif name == "find" and "-delete" in args:
            reasons.append("find -delete")
        elif name == "git" and _destructive_git(args):
            reasons.append(f"git {' '.join(args)}")
        for op, target in cmd.redirects:
            if op in (">", ">|", "&>") and target not in _HARMLESS_TARGETS and not target.isdigit():
                reasons.append(f"overwrites {target or 'a file'} ({op})")
    return reasons


def _destructive_git(args: list[str]) -> bool:
    if not args:
        return False
    sub, rest = args[0], set(args[1:])
    return (
        (sub == "reset" and "--hard" in rest)
        or (sub == "clean" and any(a.startswith("-") and "f" in a for a in rest))
        or (sub == "push" and bool(rest & {"-f", "--force", "--force-with-lease"}))
        or (sub == "branch" and "-D" in rest)
        or (sub == "checkout" and "--" in rest)
    )


def _base_env(pass_env: list[str]) -> dict[str, str]:
    keep = set(pass_env)
    return {
        k: v
        for k, v in os.environ.items()
        if k in keep or not (_SECRET_NAME.search(k) or _HIJACK.match(k))
    }


def _kill_tree(pid: int, known: list[int] | None = None) -> None:
    """SIGKILL every process below the reaper ``pid`` or in its session (``known`` too).

    The reaper itself stays: it still reports the command's exit status, and kills whatever
    is left when the engine lets it go.
    """
    for victim in sorted({*descendants(pid), *(known or [])} - {pid}):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(victim, signal.SIGKILL)


class _Capture:
    """Reads one stream, keeping at most ``limit`` bytes and counting the rest."""

    def __init__(
        self, name: str, limit: int, on_output: Callable[[bytes, str], Any] | None
    ) -> None:
        self.name, self.limit, self.on_output = name, limit, on_output
        self.kept = bytearray()
        self.total = 0
        self.cut_off = False  # a process that left the command kept the stream open

    async def read(self, stream: asyncio.StreamReader) -> None:
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
        text = self.kept.decode("utf-8", "replace")
        if self.total > len(self.kept):
            text += f"\n[... {self.total - len(self.kept)} more bytes not kept]"
        if self.cut_off:
            text += "\n[a process that detached from the command kept this open; not read further]"
        return text


class BashTool:
    """``run_bash`` over the file sandbox's base directory."""

    def __init__(
        self, sandbox: Sandbox, config: BashToolConfig, process_limit_gap: str | None = None
    ) -> None:
        self.box = sandbox
        self.config = config
        self.allow = frozenset(config.allow)
        self.deny = frozenset(config.deny)
        # Why max_processes does not hold here (root, and no pids cgroup), shown in previews.
        self.process_limit_gap = process_limit_gap

    @property
    def listed(self) -> bool:
        """True when an allow or deny list is configured."""
        return bool(self.allow or self.deny)

    # Policy ----------------------------------------------------------------------------------
    def refusal(self, command: str, env: dict[str, Any] | None) -> str | None:
        """Why the command may not run at all under the lists, or None."""
        parsed = parse_command(command)
        if self.listed and parsed.unverifiable:
            return (
                "the command cannot be checked against the allow/deny list because it uses "
                f"{', '.join(parsed.unverifiable)}; write it without those constructs"
            )
        for name in parsed.programs:
            if not name:
                continue
            if name in self.deny:
                return f"{name!r} is on the deny list"
            if self.allow and name not in self.allow:
                allowed = ", ".join(sorted(self.allow))
                return f"{name!r} is not on the allow list (allowed: {allowed})"
        names = [a.split("=", 1)[0].split("[", 1)[0].rstrip("+") for a in parsed.assignments]
        names += list(env or {})
        for name in names:
            if _HIJACK.match(name) or (self.listed and name == "PATH"):
                return f"the command may not set {name}"
        return None

    def escalate(self, args: dict[str, Any]) -> str | None:
        """Why a person must see this command first, or None (destructive or unreadable)."""
        if not self.config.confirm_destructive:
            return None
        parsed = parse_command(str(args.get("command", "")))
        if parsed.unverifiable:
            return (
                "run_bash: the command cannot be fully read ("
                + ", ".join(parsed.unverifiable)
                + "); a person should check it"
            )
        reasons = _destructive(parsed)
        if reasons:
            return "run_bash: destructive command: " + "; ".join(reasons)
        return None

    def preview(self, args: dict[str, Any]) -> str:
        """The exact command, where and how it would run.

        Each line of the command is shown as the shell shows it, the first after ``$ ``, the
        others after ``> ``, so none can pass for a line of the preview (an ``env:`` line, a
        refusal). Control characters are left for where the preview is shown to escape.
        """
        command = str(args.get("command", ""))
        where = args.get("working_dir") or "."
        timeout = self._timeout(args)
        mode = ", sandboxed (bwrap)" if self.config.sandbox == "bwrap" else ", no OS sandbox"
        first, *more = command.split("\n")
        lines = [f"run_bash in {where} (timeout {timeout:g}s{mode}):", f"$ {first}"]
        lines += [f"> {line}" for line in more]
        env = args.get("env")
        if isinstance(env, dict) and env:
            lines.append("env: " + ", ".join(f"{k}=..." for k in sorted(env)))
        refused = self.refusal(command, env if isinstance(env, dict) else None)
        if refused:
            lines.append(f"(will be refused: {refused})")
        if self.process_limit_gap:
            lines.append(
                "(process limit not enforced: the engine runs as root without a pids cgroup)"
            )
        return "\n".join(lines)

    # Running ---------------------------------------------------------------------------------
    def _timeout(self, args: dict[str, Any]) -> float:
        value = args.get("timeout", 30)
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            seconds = 30.0
        return max(0.1, min(seconds, self.config.max_timeout))

    def _env(self, extra: Any) -> dict[str, str]:
        env = _base_env(self.config.pass_env)
        if extra is None:
            return env
        if not isinstance(extra, dict):
            raise SandboxError("BAD_ARGUMENTS", "env must be an object of NAME: value strings")
        for name, value in extra.items():
            if not _ENV_NAME.match(str(name)):
                raise SandboxError("BAD_ARGUMENTS", f"env name {name!r} is not a valid name")
            if not isinstance(value, str) or "\x00" in value:
                raise SandboxError("BAD_ARGUMENTS", f"env {name} must be a string without NUL")
            env[str(name)] = value
        return env

    def _limits(self, timeout: float) -> dict[str, list[int]]:
        """The rlimits of one command (see `ai_agent.tools.builtin.limits`)."""
        processes = self.config.max_processes
        uid = os.getuid()
        if self.config.sandbox != "bwrap" and uid != 0:
            # Without a user namespace of its own, the kernel counts every task of the user
            # (and never applies the limit to root, so root's need not be counted).
            processes += _tasks_of(uid)
        return rlimits(
            cpu_seconds=self.config.cpu_seconds or timeout,
            memory_mb=self.config.memory_mb,
            processes=processes,
        )

    def _argv(self, command: str, cwd: Path, limits: dict[str, list[int]]) -> list[str]:
        # The limits are set by the shell that then becomes the command's shell: inside the
        # sandbox, where the process count is the sandbox's own.
        shell = ["/bin/bash", "-c", f'{ulimit_prefix(limits)}; exec /bin/bash -c "$1"']
        shell += ["run_bash", command]
        if self.config.sandbox != "bwrap":
            return shell
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise SandboxError(
                "SANDBOX_UNAVAILABLE",
                "bubblewrap (bwrap) is not installed; install the Debian package 'bubblewrap' "
                "or set tool_config.bash.sandbox = 'none'",
            )
        masks = self._masks()
        return [
            bwrap,
            *bwrap_arguments(self.box.base, cwd, self.config.readonly_paths, masks),
            *shell,
        ]

    def _masks(self) -> list[Path]:
        """The folders of the engine's state to hide inside the sandbox (see `bwrap_arguments`).

        Resolved again for each command, so the masks follow the state wherever symlinks now
        put it. A file of the engine's with a second hard link could have that name anywhere
        in the workspace, where no mask can find it: the command is refused instead.
        """
        if not self.box.protected:
            return []
        state = self.box.protected.current()
        linked = state.linked()
        if linked:
            raise SandboxError(
                "PROTECTED_PATH",
                f"not run: {linked[0].what} ({linked[0].path}) has more than one hard link, and "
                "the other name may lie in the workspace; remove the extra link first",
            )
        shown = [self.box.base, *(Path(os.path.realpath(p)) for p in self.config.readonly_paths)]
        return state.masks(shown)

    async def run(self, args: dict[str, Any], ctx: dict[str, Any]) -> ToolResult:
        """The tool function."""
        try:
            return await self._run(args, ctx)
        except SandboxError as exc:
            return ToolResult(status="error", error=str(exc), meta={"code": exc.code})

    async def _run(self, args: dict[str, Any], ctx: dict[str, Any]) -> ToolResult:
        command = args.get("command")
        if not isinstance(command, str) or not command.strip() or "\x00" in command:
            raise SandboxError("BAD_ARGUMENTS", "command must be a non-empty string")
        refused = self.refusal(command, args.get("env"))
        if refused:
            return ToolResult(
                status="error",
                error=f"not run: {refused}",
                meta={"code": "COMMAND_NOT_ALLOWED"},
            )
        where = self.box.resolve(
            args.get("working_dir") or ".", field="working_dir", check_extension=False
        )
        require_directory(self.box, where.parts, where.given)
        env = self._env(args.get("env"))
        timeout = self._timeout(args)
        on_output = ctx.get("on_output")
        out = _Capture("stdout", self.config.max_output_bytes, on_output)
        err = _Capture("stderr", self.config.max_output_bytes, on_output)
        started = time.perf_counter()
        argv = self._argv(command, where.path, self._limits(timeout))
        helpers = _HELPERS[self.config.sandbox]
        async with call_cgroup(self.config.max_processes + helpers) as group:
            child = await _Command.start(group.enter(argv) if group else argv, where.path, env)
            timed_out = await _supervise(child, out, err, timeout)
            refused_forks = group.refused() if group else 0
        elapsed = round(time.perf_counter() - started, 3)
        result = _result(
            command,
            child.code,
            out,
            err,
            timed_out,
            timeout,
            elapsed,
            self.config.sandbox == "bwrap",
        )
        if timed_out:
            return result
        return self._limited(result, child.code, err.text, refused_forks)

    def _limited(
        self, result: ToolResult, code: int | None, stderr: str, refused_forks: int = 0
    ) -> ToolResult:
        """The result as an error naming the limit, when the command failed on one.

        A process over its CPU limit dies of SIGXCPU, which says so for certain, and the
        call's pids cgroup counts the forks it refused. Without the cgroup, running out of
        processes, like running out of memory, only makes system calls fail, so those are
        recognised by what failing programs print (bash, Python, C and C++ runtimes). Either
        way only when the command failed.
        """
        limit = _limit_hit(code, stderr, refused_forks)
        if limit is None:
            return result
        setting, what = limit
        value = getattr(self.config, setting)
        shown = f"{value}" if value is not None else "the call's timeout"
        return ToolResult(
            status="error",
            error=f"ResourceLimitError: the command ran into its {what} limit "
            f"(tool_config.bash.{setting} = {shown}) and failed. Make it need less, or raise "
            f"the setting.\n{result.get('content')}",
            meta={**(result.get("meta") or {}), "code": "RESOURCE_LIMIT", "limit": setting},
        )


class _Command:
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
    async def start(cls, argv: list[str], cwd: Path, env: dict[str, str]) -> _Command:
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


async def _supervise(child: _Command, out: _Capture, err: _Capture, seconds: float) -> bool:
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


async def _watch(child: _Command, done: asyncio.Future[Any], deadline: float) -> bool:
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
    proc: asyncio.subprocess.Process, done: asyncio.Future[Any], out: _Capture, err: _Capture
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


_CPU_DEATHS = (-signal.SIGXCPU, 128 + signal.SIGXCPU)
# What programs print when a system call fails for a limit: bash, Python, C and C++ runtimes.
_PROCESS_SIGNS = (
    "fork: Resource temporarily unavailable",
    "fork: retry: Resource temporarily",
    "Cannot fork",
    "can't fork",
    "BlockingIOError: [Errno 11]",
)
_MEMORY_SIGNS = (
    "MemoryError",
    "Cannot allocate memory",
    "cannot allocate memory",
    "xmalloc: cannot allocate",
    "std::bad_alloc",
    "out of memory",
)
_LIMIT_SIGNS = (
    ("max_processes", "process", _PROCESS_SIGNS),
    ("memory_mb", "memory", _MEMORY_SIGNS),
)


def _limit_hit(code: int | None, stderr: str, refused_forks: int = 0) -> tuple[str, str] | None:
    """Which limit (its setting, and what it limits) the command failed on, if any."""
    if code in _CPU_DEATHS or "CPU time limit exceeded" in stderr:
        return "cpu_seconds", "CPU time"
    if not code:
        return None
    if refused_forks:
        return "max_processes", "process"
    for setting, what, signs in _LIMIT_SIGNS:
        if any(sign in stderr for sign in signs):
            return setting, what
    return None


def _tasks_of(uid: int) -> int:
    """Tasks (processes and threads) whose real user is ``uid``, as RLIMIT_NPROC counts them."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields.get("Uid", "-1").split()[0]) == uid:
            total += int(fields.get("Threads", "1"))
    return total


def _result(
    command: str,
    code: int | None,
    out: _Capture,
    err: _Capture,
    timed_out: bool,
    timeout: float,
    elapsed: float,
    sandboxed: bool,
) -> ToolResult:
    text = f"exit code: {code}\n--- stdout ---\n{out.text}\n--- stderr ---\n{err.text}"
    meta = {
        "exit_code": code,
        "timed_out": timed_out,
        "stdout_bytes": out.total,
        "stderr_bytes": err.total,
        "output_cut_off": out.cut_off or err.cut_off,
        "sandboxed": sandboxed,
        "seconds": elapsed,
    }
    if timed_out:
        return ToolResult(
            status="error",
            error=f"ToolTimeoutError: the command did not finish within {timeout:g}s and was "
            "killed with every process it started. Narrow the scope or raise timeout.\n" + text,
            meta={**meta, "code": "TIMEOUT", "error_type": "ToolTimeoutError"},
        )
    return ToolResult(status="ok", content=text, meta=meta)


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


def bash_tool(sandbox: Sandbox, config: BashToolConfig) -> ToolSpec:
    """The ``run_bash`` tool (MODIFICATION: a person sees the exact command first).

    Examples:
        >>> import asyncio, tempfile
        >>> from ai_agent.tools import ToolRegistry
        >>> reg = ToolRegistry([bash_tool(Sandbox(tempfile.mkdtemp()), BashToolConfig())])
        >>> call = {"id": "1", "name": "run_bash", "args": {"command": "echo hi"}}
        >>> asyncio.run(reg.execute(call, {}))["meta"]["exit_code"]
        0
        >>> reg["run_bash"].escalate({"command": "rm -rf build"})
        'run_bash: destructive command: rm -rf build'
    """
    gap = warn_process_limit_gap("tool_config.bash.max_processes")
    tool = BashTool(sandbox, config, gap)

    def summary(result: ToolResult) -> str:
        meta = result.get("meta") or {}
        if meta.get("code") == "TIMEOUT":
            return f"run_bash: killed after timeout ({meta.get('seconds')}s)"
        if result["status"] != "ok":
            return f"run_bash: {str(result.get('error'))[:160]}"
        return (
            f"run_bash: exit {meta.get('exit_code')} in {meta.get('seconds')}s "
            f"({meta.get('stdout_bytes')} B stdout, {meta.get('stderr_bytes')} B stderr)"
        )

    return ToolSpec(
        "run_bash",
        tool.run,
        description="Run a bash command and return its exit code, stdout and stderr. The "
        "working directory must be inside the workspace; pass variables through env. "
        + _SANDBOX_NOTE[config.sandbox]
        + (" Its process limit is not enforced (the engine runs as root)." if gap else ""),
        parameters={
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line."},
                "working_dir": {"type": "string", "default": "."},
                "timeout": {"type": "integer", "minimum": 1, "default": 30},
                "env": {
                    "type": ["object", "null"],
                    "additionalProperties": {"type": "string"},
                    "default": None,
                },
            },
            "required": ["command"],
            "additionalProperties": False,
        },
        category=ToolCategory.MODIFICATION,
        # The command's own timeout kills its processes; the registry's is only a backstop.
        timeout=config.max_timeout + 10,
        preview=tool.preview,
        escalate=tool.escalate,
        format_result=summary,
        group="shell",
    )
