"""Runtime policy of generated tools: limits, path and host allowlists, the guarded tool.

What here is *policy* (checked by the engine, in Python) and what is *confinement* (enforced by
the kernel, see `ai_agent.tools.maker.confine`):

- the host allowlist is policy, applied by the engine's HTTP broker to every request a tool
  makes; the tool cannot go around the broker because its network namespace has no route out;
- allowed paths are checked here (relative, no ``..``, no hidden parts) and then *mounted*: a
  path that is not mounted does not exist for the tool;
- the limits (`SandboxLimits`) are handed to the kernel as rlimits, a tmpfs size, a
  seccomp filter and a deadline after which the engine kills the sandbox's PID namespace.

`PolicyGuardedTool` is the function behind a generated tool's ``ToolSpec``: each call runs
confined, its output is capped on the bytes received, and a violation raises
`ai_agent.errors.ToolPolicyViolation` after a ``tool_policy_blocked`` audit event.
"""

from __future__ import annotations

import ipaddress
import json
import os
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ai_agent.errors import ToolPolicyViolation
from ai_agent.state import ToolResult
from ai_agent.tools.builtin.limits import rlimits
from ai_agent.tools.builtin.protected import ProtectedPaths

if TYPE_CHECKING:
    from ai_agent.tools.maker.confine import ConfinedCall, Outcome
    from ai_agent.tools.maker.records import GeneratedToolSpec

__all__ = [
    "HostRule",
    "PolicyGuardedTool",
    "SandboxLimits",
    "address_ok",
    "check_relative_path",
    "host_allowed",
    "parse_host_rule",
]

_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


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


def check_relative_path(value: object) -> str:
    """``value`` as a normalised relative directory, or ValueError saying what is wrong.

    Args:
        value: An ``allowed_paths`` entry.

    Returns:
        The path, relative to the workspace, without ``.`` parts or trailing slashes.

    Raises:
        ValueError: not a string, absolute, climbing out (``..``), the whole workspace, naming a
            hidden entry, or holding a NUL byte or a backslash.

    Examples:
        >>> check_relative_path("reports/2024/")
        'reports/2024'
        >>> check_relative_path("../etc")
        Traceback (most recent call last):
        ...
        ValueError: '../etc' climbs out of the workspace ('..')
    """
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{value!r} is not a path")
    if "\x00" in value or "\\" in value:
        raise ValueError(f"{value!r} contains a NUL byte or a backslash")
    if value.startswith("/") or value.startswith("~"):
        raise ValueError(f"{value!r} is absolute; give a path relative to the workspace")
    parts = [p for p in value.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ValueError(f"{value!r} climbs out of the workspace ('..')")
    if not parts:
        raise ValueError(
            f"{value!r} is the whole workspace; name a subdirectory (the workspace holds the "
            "engine's own files)"
        )
    hidden = [p for p in parts if p.startswith(".")]
    if hidden:
        raise ValueError(
            f"{value!r} names a hidden entry ({hidden[0]}); hidden directories (.git, .agents, "
            ".env...) are never given to generated tools"
        )
    return posixpath.join(*parts)


@dataclass(frozen=True, slots=True)
class HostRule:
    """One allowlist entry: a host (``*.`` for its subdomains) and an optional port.

    Attributes:
        host: The lower-case host name or address (without ``*.``).
        port: The only port it allows (None: 80 and 443).
        subdomains: True for ``*.host``: subdomains of ``host``, not ``host`` itself.
        literal_ip: True when ``host`` is an address.
    """

    host: str
    port: int | None
    subdomains: bool
    literal_ip: bool

    def matches(self, host: str, port: int) -> bool:
        """Whether the rule covers ``host:port``.

        Args:
            host: A lower-case host name or address.
            port: The port the request goes to.

        Returns:
            True when the host matches (a ``*.`` rule: a subdomain) and so does the port (a
            rule without a port: 80 and 443 only).
        """
        if self.port is None:
            if port not in (80, 443):
                return False
        elif port != self.port:
            return False
        if self.subdomains:
            return host.endswith("." + self.host)
        return host == self.host

    @property
    def private_ok(self) -> bool:
        """A rule that names a literal address or ``localhost`` may reach a private address."""
        return self.literal_ip or self.host == "localhost"


def _check_host(host: str, entry: str) -> bool:
    """True when ``host`` is an IP literal; ValueError when it is neither an IP nor a name."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        pass
    else:
        return True
    labels = host.split(".")
    if len(host) > 253 or not all(_LABEL.match(label) for label in labels):
        raise ValueError(f"{entry!r} is not a host name (letters, digits, '-' and dots)")
    if labels[-1].isdigit():
        raise ValueError(f"{entry!r} is not a valid address")
    return False


def parse_host_rule(entry: object) -> HostRule:
    """Parse an allowlist entry (``api.example.com``, ``*.example.com``, ``127.0.0.1:8080``).

    Args:
        entry: One ``allowed_domains`` entry.

    Returns:
        The rule (lower-case host, optional port).

    Raises:
        ValueError: a URL rather than a host, a misplaced wildcard, an invalid name, address or
            port.

    Examples:
        >>> parse_host_rule("*.Example.com").matches("api.example.com", 443)
        True
        >>> parse_host_rule("http://x.com")
        Traceback (most recent call last):
        ...
        ValueError: 'http://x.com' must be a host, not a URL (no scheme, path or user)
    """
    if not isinstance(entry, str) or not entry.strip():
        raise ValueError(f"{entry!r} is not a host")
    text = entry.strip().lower()
    if any(c in text for c in "/@?#") or "://" in text:
        raise ValueError(f"{entry!r} must be a host, not a URL (no scheme, path or user)")
    subdomains = text.startswith("*.")
    if subdomains:
        text = text[2:]
    port: int | None = None
    if text.startswith("["):  # [v6] or [v6]:port
        close = text.find("]")
        host, rest = text[1:close], text[close + 1 :]
        if rest:
            port = _port(rest.removeprefix(":"), entry)
    elif text.count(":") == 1:
        host, _, raw = text.partition(":")
        port = _port(raw, entry)
    else:
        host = text
    if "*" in host:
        raise ValueError(f"{entry!r}: a wildcard may only lead ('*.example.com')")
    literal = _check_host(host, entry)
    if literal and subdomains:
        raise ValueError(f"{entry!r}: '*.' goes with host names, not addresses")
    return HostRule(host=host, port=port, subdomains=subdomains, literal_ip=literal)


def _port(raw: str, entry: object) -> int:
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise ValueError(f"{entry!r} has an invalid port")
    return int(raw)


def host_allowed(rules: list[HostRule], host: str, port: int) -> HostRule | None:
    """The first rule that covers ``host:port``.

    Args:
        rules: The parsed allowlist.
        host: The request's host (case and a trailing dot do not matter).
        port: The request's port.

    Returns:
        The rule, or None when no rule covers it.
    """
    host = host.lower().rstrip(".")
    return next((r for r in rules if r.matches(host, port)), None)


def address_ok(address: str, rule: HostRule) -> bool:
    """May a request that matched ``rule`` connect to ``address``?

    A name from the allowlist must resolve to public addresses: a DNS answer pointing at
    loopback, a private network or link-local (cloud metadata at 169.254.169.254) is refused,
    so an allowlisted name cannot be turned against the engine's own network. Rules naming a
    literal address or ``localhost`` reach exactly what they name.

    Args:
        address: An address the host resolved to (or the literal address in the URL).
        rule: The allowlist rule the host matched.

    Returns:
        True when the broker may connect to it.
    """
    ip = ipaddress.ip_address(address)
    if rule.private_ok:
        return True
    return bool(ip.is_global) and not ip.is_multicast


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

    def _broker(self) -> Any:
        from ai_agent.tools.maker.broker import HttpBroker

        return HttpBroker(
            [parse_host_rule(d) for d in self.spec.allowed_domains],
            max_response_bytes=self.limits.max_response_bytes,
            max_redirects=self.limits.max_redirects,
        )

    def _call(self, args: dict[str, Any]) -> ConfinedCall:
        from ai_agent.tools.maker.confine import ConfinedCall

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
        from ai_agent.tools.maker.confine import run_confined

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
