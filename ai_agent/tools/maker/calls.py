"""One confined call of a generated tool: what it is made of, how it ended, what ends it.

The types `ai_agent.tools.maker.confine` runs a call with, below its parts (the sandbox's
command line, the channel to it, the HTTP broker), so that none of them imports the others.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ai_agent.tools.builtin.protected import ProtectedPaths
from ai_agent.tools.maker.limits import SandboxLimits

__all__ = ["ConfinedCall", "HttpHandler", "Outcome", "Violation"]

HttpHandler = Callable[[dict[str, Any], float], Awaitable[dict[str, Any]]]


class Violation(Exception):  # noqa: N818 - internal signal, surfaced as ToolPolicyViolation
    """Something the sandboxed tool did that ends the call as a policy violation.

    Args:
        reason: A short code (``output_cap``, ``host_not_allowed``, ``protocol``...), kept in
            the ``tool_policy_blocked`` event.
        message: What happened, for a person.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class ConfinedCall:
    """One call of a generated tool, with everything the sandbox is built from.

    Args:
        name: The tool's name (for messages and the module's file name).
        code: The module's source (already checked against its approved hash).
        args: The call's arguments (JSON data).
        base_dir: The workspace the allowed paths are relative to.
        read_paths: Allowed paths mounted read-only.
        write_paths: Allowed paths mounted writable.
        secrets: Environment of the tool: declared secret name -> value.
        protected: The engine's own state: no mount may hold it or lie inside it.
        limits: The limits of the call.
        http: The broker for ``http`` requests, or None when the tool may not make any.
    """

    name: str
    code: str
    args: dict[str, Any]
    base_dir: Path
    read_paths: tuple[str, ...] = ()
    write_paths: tuple[str, ...] = ()
    secrets: dict[str, str] = field(default_factory=dict)
    protected: ProtectedPaths = field(default_factory=ProtectedPaths)
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    http: HttpHandler | None = None


@dataclass(slots=True)
class Outcome:
    """How a confined call ended.

    Attributes:
        kind: ``ok`` (a result), ``error`` (the tool raised), ``timeout`` (killed at the
            deadline), ``violation`` (killed for a policy violation) or ``crashed`` (it died
            without a result).
        value: The tool's result (``ok``).
        error: What happened, for a person (every kind but ``ok``).
        reason: The violation's reason code (``output_cap``, ``forbidden_syscall``...).
        stdout: The first bytes the tool printed (decoded).
        stderr: The first bytes of its standard error (decoded).
        received: Bytes the engine read from the sandbox in total.
        seconds: Wall time of the call.
        exit_status: bwrap's exit status (128 + N when the tool died of signal N).
        forks_refused: Forks the call's pids cgroup refused at ``max_processes``.
        path: The file a failed file operation of the tool reached for (``error``), as the
            tool named it.
    """

    kind: str
    value: Any = None
    error: str | None = None
    reason: str | None = None
    stdout: str = ""
    stderr: str = ""
    received: int = 0
    seconds: float = 0.0
    exit_status: int | None = None
    forks_refused: int = 0
    path: str | None = None
