"""Runtime policy of generated tools: the guarded tool that runs every call confined.

What is *policy* (checked by the engine, in Python) and what is *confinement* (enforced by
the kernel, see `ai_agent.tools.maker.confine`):

- the host allowlist is policy (`ai_agent.tools.maker.allowlists`), applied by the engine's HTTP
  broker (`ai_agent.tools.maker.broker`) to every request a tool makes; the tool cannot go
  around the broker because its network namespace has no route out;
- allowed paths are checked by the allowlists (relative, no ``..``, no hidden parts) and then
  *mounted*: a path that is not mounted does not exist for the tool;
- the limits (`ai_agent.tools.maker.limits.SandboxLimits`) are handed to the kernel as rlimits,
  a tmpfs size, a seccomp filter and a deadline after which the engine kills the sandbox's PID
  namespace.

`PolicyGuardedTool` is the function behind a generated tool's ``ToolSpec``: each call runs
confined, its output is capped on the bytes received, and a violation raises
`ai_agent.errors.ToolPolicyViolation` after a ``tool_policy_blocked`` audit event.
"""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ai_agent.errors import ToolPolicyViolation
from ai_agent.state import ToolResult
from ai_agent.tools.builtin.protected import ProtectedPaths
from ai_agent.tools.maker.allowlists import parse_host_rule
from ai_agent.tools.maker.broker import HttpBroker
from ai_agent.tools.maker.confine import ConfinedCall, Outcome, run_confined
from ai_agent.tools.maker.limits import SandboxLimits
from ai_agent.tools.maker.sandbox_setup import WORKSPACE

if TYPE_CHECKING:
    from ai_agent.tools.maker.records import GeneratedToolSpec

__all__ = ["AuditFn", "PolicyGuardedTool"]

AuditFn = Callable[..., Any]


class PolicyGuardedTool:
    """The function behind a generated tool's ``ToolSpec``: every call runs confined.

    Args:
        spec: The tool version's canonical spec (capabilities, paths, hosts, secrets).
        code: Its module (checked against ``spec.code_sha256`` by the loader).
        base_dir: The workspace its ``allowed_paths`` are relative to.
        limits: The call's limits (``max_output_chars`` clips the result text).
        audit: ``audit(event, tool=, version=, **data)``, for ``tool_policy_blocked``.
        protected: The engine's own state: no mount may hold it or lie inside it.

    A call ends in one of: the tool's result (``ok``); the tool's exception as an error result
    (``RESOURCE_LIMIT`` when its pids cgroup refused it a fork first); a ``TIMEOUT`` error
    result after the sandbox was killed at the deadline; or, for a policy
    violation (a host outside the allowlist, a forbidden system call, output over the cap, a
    refused path, a CPU or file-size limit), `ai_agent.errors.ToolPolicyViolation` after
    a ``tool_policy_blocked`` audit event.
    """

    def __init__(
        self,
        spec: GeneratedToolSpec,
        code: str,
        *,
        base_dir: Path,
        limits: SandboxLimits,
        audit: AuditFn,
        protected: ProtectedPaths | None = None,
    ) -> None:
        self.spec = spec
        self.code = code
        self.base_dir = base_dir
        self.limits = limits
        self.audit = audit
        self.protected = protected or ProtectedPaths()

    def _broker(self) -> HttpBroker:
        return HttpBroker(
            [parse_host_rule(d) for d in self.spec.allowed_domains],
            max_response_bytes=self.limits.max_response_bytes,
            max_redirects=self.limits.max_redirects,
        )

    def _call(self, args: dict[str, Any]) -> ConfinedCall:
        caps = set(self.spec.capabilities)
        paths = tuple(self.spec.allowed_paths)
        return ConfinedCall(
            name=f"{self.spec.name}_v{self.spec.version}",
            code=self.code,
            args=args,
            base_dir=self.base_dir,
            read_paths=paths if "fs_read" in caps and "fs_write" not in caps else (),
            write_paths=paths if "fs_write" in caps else (),
            secrets={name: os.environ.get(name, "") for name in self.spec.secrets},
            protected=self.protected,
            limits=self.limits,
            http=self._broker() if "http" in caps else None,
        )

    async def run(self, args: dict[str, Any], ctx: dict[str, Any]) -> ToolResult:
        """Run one call confined (the ``fn`` of the tool's ToolSpec).

        Args:
            args: The call's arguments (already checked against the schema).
            ctx: The tool context (``call_id`` and ``thread_id`` go into audit events).

        Returns:
            The ToolResult: ``ok`` with the (clipped) value, or an error result for an
            exception in the tool, a crash or a timeout (code ``TIMEOUT``).

        Raises:
            ToolPolicyViolation: the sandbox stopped the tool for a policy violation (audited
                as ``tool_policy_blocked`` first).
            SandboxUnavailableError: bubblewrap is missing or cannot build the sandbox.
        """
        outcome = await run_confined(self._call(dict(args)))
        name, version = self.spec.name, self.spec.version
        meta: dict[str, Any] = {
            "tool_version": version,
            "sandboxed": True,
            "seconds": outcome.seconds,
            "received_bytes": outcome.received,
        }
        for stream in ("stdout", "stderr"):
            if getattr(outcome, stream):
                meta[stream] = getattr(outcome, stream)
        self._reached_outside(outcome)
        if outcome.kind in ("violation", "timeout"):
            self.audit(
                "tool_policy_blocked",
                tool=name,
                version=version,
                reason=outcome.reason or outcome.kind,
                detail=outcome.error,
                call_id=ctx.get("call_id"),
                thread_id=ctx.get("thread_id"),
            )
        if outcome.kind == "violation":
            raise ToolPolicyViolation(
                f"{name} v{version} {outcome.error}; the call was stopped "
                f"(tool_policy_blocked: {outcome.reason})"
            )
        if outcome.kind == "timeout":
            return ToolResult(
                status="error",
                error=f"ToolTimeoutError: {name} v{version} {outcome.error} and was killed "
                "with everything it started. Narrow the request and try again.",
                meta={**meta, "code": "TIMEOUT", "error_type": "ToolTimeoutError"},
            )
        if outcome.kind in ("error", "crashed") and outcome.forks_refused:
            return self._process_limit(outcome, meta)
        if outcome.kind != "ok":
            code = "TOOL_EXCEPTION" if outcome.kind == "error" else "CRASHED"
            return ToolResult(
                status="error",
                error=f"{name} v{version}: {outcome.error}",
                meta={**meta, "code": code},
            )
        return ToolResult(status="ok", content=self._clip(outcome.value, meta), meta=meta)

    def _reached_outside(self, outcome: Outcome) -> None:
        """A file operation that failed on a path outside the allowed ones is a violation.

        The sandbox mounts only the allowed paths, so such a path is simply not there and the
        tool sees a missing file; what it tried is what the policy forbids, and is audited so.
        """
        if outcome.kind != "error" or outcome.path is None:
            return
        caps = set(self.spec.capabilities)
        allowed = self.spec.allowed_paths if caps & {"fs_read", "fs_write"} else []
        reached = posixpath.normpath(posixpath.join(WORKSPACE, outcome.path))
        roots = [posixpath.normpath(posixpath.join(WORKSPACE, a)) for a in allowed]
        if any(reached == root or reached.startswith(root + "/") for root in roots):
            return
        outcome.kind, outcome.reason = "violation", "path_not_allowed"
        outcome.error = (
            f"reached for {outcome.path!r}, outside its allowed paths "
            f"({', '.join(allowed) or 'none'}): {outcome.error}"
        )

    def _process_limit(self, outcome: Outcome, meta: dict[str, Any]) -> ToolResult:
        """The error of a call that failed after its pids cgroup refused it a fork."""
        return ToolResult(
            status="error",
            error=f"ResourceLimitError: {self.spec.name} v{self.spec.version} ran into its "
            f"process limit (tool_config.toolsmaker.max_processes = "
            f"{self.limits.max_processes}) and failed: {outcome.error}. Make it start fewer "
            "processes or threads, or raise the setting.",
            meta={**meta, "code": "RESOURCE_LIMIT", "limit": "max_processes"},
        )

    def _clip(self, value: Any, meta: dict[str, Any]) -> Any:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        limit = self.limits.max_output_chars
        if len(text) <= limit:
            return value
        meta.update(clipped=True, full_chars=len(text))
        return text[:limit] + f"\n[... clipped: {len(text) - limit} more characters]"
