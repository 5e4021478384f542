"""``run_bash`` (spec 5.4.4): a shell command with stdout, stderr, exit code and a hard timeout.

One job per module:

- what a command may do (lists, environment, escalation): `ai_agent.tools.builtin.bash_policy`;
- running it under the reaper, reading its output and stopping every process it started:
  `ai_agent.tools.builtin.bash_process` (a command never outlives the call, nor the engine);
- its rlimits (processes, memory, CPU time), set by the shell inside the sandbox before the
  command runs, and which one a failed command ran into (``RESOURCE_LIMIT``):
  `ai_agent.tools.builtin.limits`. The process limit is also a pids cgroup of the call's own
  (`ai_agent.tools.builtin.cgroups`), which binds root too; where none can be made and the engine
  runs as root, the tool's description and previews say the limit does not hold;
- the bubblewrap options: `ai_agent.tools.builtin.bwrap`.

This module is the tool: where a command runs, how long, and what the model gets back; its schema
is the signature of `BashTool.run_bash`. Output
is read as it comes, capped per stream (the rest is counted, not kept); every chunk also goes to
``ctx["on_output"](data, stream)`` (``stdout``/``stderr``), which the act stage turns into live
``tool_output`` events. The working directory must be inside the file sandbox.
``sandbox="bwrap"`` runs the command under bubblewrap: the system read-only, only the sandbox
base directory writable, a private ``/tmp``, no network, no capabilities, and the engine's own
state (`ai_agent.tools.builtin.protected`) hidden under empty tmpfs mounts. Without it
(``sandbox="none"``) nothing is hidden from the command: it can do what the engine's user can.

Injection: the command string is run by a shell on purpose. Never build it by pasting untrusted
text into a template; pass data through ``env`` and reference it as ``"$NAME"``.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from ai_agent.config import BashToolConfig
from ai_agent.state import ToolResult
from ai_agent.tools.builtin.bash_policy import CommandPolicy
from ai_agent.tools.builtin.bash_process import Capture, Command, supervise
from ai_agent.tools.builtin.bwrap import bwrap_arguments
from ai_agent.tools.builtin.cgroups import call_cgroup, warn_process_limit_gap
from ai_agent.tools.builtin.limits import limit_hit, rlimits, tasks_of, ulimit_prefix
from ai_agent.tools.builtin.refusal import require_os_text
from ai_agent.tools.builtin.sandbox import Sandbox, SandboxError
from ai_agent.tools.builtin.typed import builtin_spec
from ai_agent.tools.builtin.walk import require_directory
from ai_agent.tools.docstrings import parse_docstring
from ai_agent.tools.spec import ToolCategory, ToolSpec
from ai_agent.visible import visible

__all__ = ["BashTool", "bash_tool"]

# Tasks of the call that are not the command's: the reaper, and bubblewrap's two (its monitor
# and the sandbox's init). The pids cgroup allows them on top of max_processes.
_HELPERS = {"none": 1, "bwrap": 3}


_SANDBOX_NOTE = {
    "bwrap": "It runs sandboxed: only the workspace is writable, no network, and the engine's "
    "own state is not visible.",
    "none": "It runs without an OS sandbox: it can read and change whatever the engine's user "
    "can, the engine's own state included.",
}


class BashTool:
    """``run_bash`` over the file sandbox's base directory."""

    def __init__(
        self, sandbox: Sandbox, config: BashToolConfig, process_limit_gap: str | None = None
    ) -> None:
        self.box = sandbox
        self.config = config
        self.policy = CommandPolicy(config)
        # Why max_processes does not hold here (root, and no pids cgroup), shown in previews.
        self.process_limit_gap = process_limit_gap

    # Before the call ---------------------------------------------------------------------------
    def escalate(self, args: dict[str, Any]) -> str | None:
        """Why a person must see this command first, or None (destructive or unreadable)."""
        return self.policy.escalate(str(args.get("command", "")))

    def preview(self, args: dict[str, Any]) -> str:
        """The exact command, where and how it would run.

        Each line of the command is shown as the shell shows it, the first after ``$ ``, the
        others after ``> ``, so none can pass for a line of the preview (an ``env:`` line, a
        refusal). Control characters are left for where the preview is shown to escape.
        """
        command = str(args.get("command", ""))
        where = args.get("working_dir") or "."
        timeout = self._seconds(args.get("timeout", 30))
        mode = ", sandboxed (bwrap)" if self.config.sandbox == "bwrap" else ", no OS sandbox"
        first, *more = command.split("\n")
        # The folder and the variables' names on one line each (escaped): a line break in them
        # made a line of the preview of the model's choosing.
        header = f"run_bash in {visible(str(where))} (timeout {timeout:g}s{mode}):"
        lines = [header, f"$ {first}"]
        lines += [f"> {line}" for line in more]
        env = args.get("env")
        if isinstance(env, dict) and env:
            lines.append("env: " + ", ".join(f"{visible(str(k))}=..." for k in sorted(env)))
        refused = self.policy.refusal(command, env if isinstance(env, dict) else None)
        if refused:
            lines.append(f"(will be refused: {refused})")
        if self.process_limit_gap:
            lines.append(
                "(process limit not enforced: the engine runs as root without a pids cgroup)"
            )
        return "\n".join(lines)

    # Running ---------------------------------------------------------------------------------
    def _seconds(self, value: Any) -> float:
        """The call's timeout in seconds, at most ``max_timeout`` (30 when it is not a number)."""
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            seconds = 30.0
        return max(0.1, min(seconds, self.config.max_timeout))

    def _limits(self, timeout: float) -> dict[str, list[int]]:
        """The rlimits of one command (see `ai_agent.tools.builtin.limits`)."""
        processes = self.config.max_processes
        uid = os.getuid()
        if self.config.sandbox != "bwrap" and uid != 0:
            # Without a user namespace of its own, the kernel counts every task of the user
            # (and never applies the limit to root, so root's need not be counted).
            processes += tasks_of(uid)
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

    async def run_bash(
        self,
        command: Annotated[str, Field(description="The command line.")],
        working_dir: str = ".",
        timeout: Annotated[int, Field(ge=1)] = 30,  # noqa: ASYNC109 - the model's name for it
        env: dict[str, str] | None = None,
        *,
        ctx: dict[str, Any],
    ) -> ToolResult:
        """Run a bash command and return its exit code, stdout and stderr. The working
        directory must be inside the workspace; pass variables through env.
        """  # noqa: D205 - the model reads the first paragraph whole, as the tool's description
        try:
            return await self._run(command, working_dir, self._seconds(timeout), env, ctx)
        except SandboxError as exc:
            return ToolResult(status="error", error=str(exc), meta={"code": exc.code})

    async def _run(
        self,
        command: str,
        working_dir: str,
        seconds: float,
        extra_env: dict[str, str] | None,
        ctx: dict[str, Any],
    ) -> ToolResult:
        if not command.strip() or "\x00" in command:
            raise SandboxError("BAD_ARGUMENTS", "command must be a non-empty string")
        require_os_text(command, "command")
        refused = self.policy.refusal(command, extra_env)
        if refused:
            return ToolResult(
                status="error",
                error=f"not run: {refused}",
                meta={"code": "COMMAND_NOT_ALLOWED"},
            )
        where = self.box.resolve(working_dir or ".", field="working_dir", check_extension=False)
        require_directory(self.box, where.parts, where.given)
        env = self.policy.env(extra_env)
        on_output = ctx.get("on_output")
        out = Capture("stdout", self.config.max_output_bytes, on_output)
        err = Capture("stderr", self.config.max_output_bytes, on_output)
        started = time.perf_counter()
        argv = self._argv(command, where.path, self._limits(seconds))
        helpers = _HELPERS[self.config.sandbox]
        async with call_cgroup(self.config.max_processes + helpers) as group:
            child = await Command.start(group.enter(argv) if group else argv, where.path, env)
            timed_out = await supervise(child, out, err, seconds)
            refused_forks = group.refused() if group else 0
        elapsed = round(time.perf_counter() - started, 3)
        result = _result(
            command,
            child.code,
            out,
            err,
            timed_out,
            seconds,
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
        limit = limit_hit(code, stderr, refused_forks)
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


def _result(
    command: str,
    code: int | None,
    out: Capture,
    err: Capture,
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

    described = parse_docstring(tool.run_bash.__doc__).description
    return builtin_spec(
        tool.run_bash,
        category=ToolCategory.MODIFICATION,
        group="shell",
        # What the model reads of the sandbox depends on the settings and on the machine.
        description=f"{described} {_SANDBOX_NOTE[config.sandbox]}"
        + (" Its process limit is not enforced (the engine runs as root)." if gap else ""),
        # The command's own timeout kills its processes; the registry's is only a backstop.
        timeout=config.max_timeout + 10,
        preview=tool.preview,
        escalate=tool.escalate,
        format_result=summary,
    )
