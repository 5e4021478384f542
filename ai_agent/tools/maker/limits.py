"""What one confined call of a generated tool may use: `SandboxLimits`.

Below both the guarded tool (`ai_agent.tools.maker.policy`) and the sandbox that enforces the
limits (`ai_agent.tools.maker.confine`), which import it from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from ai_agent.tools.builtin.limits import rlimits

__all__ = ["SandboxLimits"]


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """What one confined call may use; each is enforced by the kernel or by the engine's reader.

    Args:
        timeout: Wall-clock seconds; then the sandbox's PID namespace is killed (SIGKILL).
        cpu_seconds: RLIMIT_CPU (None: the timeout, rounded up).
        memory_mb: RLIMIT_AS, the address space of the tool's process.
        max_processes: Tasks at once, through the call's pids cgroup (which binds root too)
            and RLIMIT_NPROC; the seccomp filter already forbids new processes and threads.
        file_size_mb: RLIMIT_FSIZE, the largest file it may write.
        open_files: RLIMIT_NOFILE.
        tmp_mb: Size of the private ``/tmp`` (a tmpfs; 0: no ``/tmp``).
        max_output_bytes: Everything the engine accepts from the sandbox in one call (stdout,
            stderr and protocol frames together); past it the call is killed as a violation.
        max_response_bytes: The largest HTTP response body the broker hands to the tool.
        max_redirects: Redirects the broker follows (each hop checked against the allowlist).
        max_output_chars: The tool's result text is clipped to this many characters.
        seccomp: Install the seccomp filter (only tests turn it off, to show the namespaces
            alone still hold).
    """

    timeout: float = 30.0
    cpu_seconds: int | None = None
    memory_mb: int = 512
    max_processes: int = 64
    file_size_mb: int = 16
    open_files: int = 64
    tmp_mb: int = 16
    max_output_bytes: int = 1_000_000
    max_response_bytes: int = 1_000_000
    max_redirects: int = 5
    max_output_chars: int = 12_000
    seccomp: bool = True

    def rlimits(self) -> dict[str, list[int]]:
        """The rlimits ``[soft, hard]`` the runner sets before the tool's code is loaded.

        Made by the helper ``run_bash`` shares (`ai_agent.tools.builtin.limits.rlimits`):
        hard limits cannot be raised without a capability, which the sandbox does not have, and
        the CPU limit's hard value is one second above the soft one, so the kernel's SIGXCPU
        (not its SIGKILL) says why the tool died.

        Returns:
            ``resource`` constant name -> ``[soft, hard]``.
        """
        return rlimits(
            cpu_seconds=self.cpu_seconds if self.cpu_seconds is not None else self.timeout,
            memory_mb=self.memory_mb,
            memory="RLIMIT_AS",
            processes=self.max_processes,
            RLIMIT_FSIZE=self.file_size_mb << 20,
            RLIMIT_NOFILE=self.open_files,
            RLIMIT_CORE=0,
            RLIMIT_MEMLOCK=0,
            RLIMIT_MSGQUEUE=0,
        )
