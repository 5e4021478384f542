"""The loader: an activated build record -> a runtime ``ToolSpec`` whose calls run confined.

Nothing of the generated module is imported into the engine: the loader reads the file, checks
that its sha256 is the one recorded when the build was reviewed (a file changed after review is
refused and audited), and wraps it in a `ai_agent.tools.maker.policy.PolicyGuardedTool`.

The tool's category follows what it may do, so calls still pass the engine's approval policy:
``http`` makes it EXTERNAL (confirmation, first-use gate), ``fs_write``, ``secrets`` or high risk
make it MODIFICATION, anything else READ_ONLY. Its declared secrets become ``requires_env`` (a
missing one pauses the run with MISSING_ENV, and their values are scrubbed from every result).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from ai_agent.errors import ToolPolicyViolation
from ai_agent.tools.builtin.cgroups import warn_process_limit_gap
from ai_agent.tools.builtin.protected import ProtectedPaths
from ai_agent.tools.maker.builder import code_sha256
from ai_agent.tools.maker.limits import SandboxLimits
from ai_agent.tools.maker.policy import AuditFn, PolicyGuardedTool
from ai_agent.tools.maker.records import BuildRecord, GeneratedToolSpec
from ai_agent.tools.maker.storage import read_code
from ai_agent.tools.spec import ToolCategory, ToolSpec

__all__ = ["GENERATED_GROUP", "category_for", "load_tool"]

GENERATED_GROUP = "generated"
_TIMEOUT_SLACK = 5.0  # the sandbox's own deadline fires first; the registry's is a backstop


def category_for(spec: GeneratedToolSpec) -> ToolCategory:
    """The oversight category a generated tool gets from its capabilities and risk.

    Args:
        spec: The version's spec.

    Returns:
        EXTERNAL with ``http``; MODIFICATION with ``fs_write``, ``secrets`` or high risk;
        READ_ONLY otherwise.

    Examples:
        >>> from ai_agent.tools.maker.builder import build, request_from_intent
        >>> spec, _ = build(request_from_intent({"name": "n", "purpose": "p"}), 1)
        >>> category_for(spec)
        <ToolCategory.READ_ONLY: 'read_only'>
    """
    caps = set(spec.capabilities)
    if "http" in caps:
        return ToolCategory.EXTERNAL
    if caps & {"fs_write", "secrets"} or spec.risk == "high":
        return ToolCategory.MODIFICATION
    return ToolCategory.READ_ONLY


def load_tool(
    record: BuildRecord,
    code_path: Path,
    *,
    base_dir: Path,
    limits: SandboxLimits,
    audit: AuditFn,
    protected: ProtectedPaths | None = None,
) -> ToolSpec:
    """The runtime ToolSpec of an activated (or approved) version.

    Args:
        record: The version's build record.
        code_path: Its module on disk.
        base_dir: The workspace its allowed paths are relative to.
        limits: The limits of each call (``record.max_output_chars`` overrides the clip).
        audit: Where ``tool_policy_blocked`` events go.
        protected: The engine's own state: no mount may hold it or lie inside it.

    Returns:
        A ToolSpec in the group ``generated`` whose ``fn`` runs each call confined.

    Raises:
        ToolPolicyViolation: the code on disk is not the code that was reviewed (audited as
            ``tool_policy_blocked``, reason ``integrity``).
    """
    spec = record.spec
    try:
        code = read_code(code_path)  # the exact bytes: no newline translation
    except OSError as exc:
        code, problem = "", f"cannot be read ({exc.strerror})"
    else:
        problem = "changed after it was reviewed" if code_sha256(code) != spec.code_sha256 else ""
    if problem:
        audit(
            "tool_policy_blocked",
            tool=spec.name,
            version=spec.version,
            reason="integrity",
            detail=f"{code_path.name} {problem}",
        )
        raise ToolPolicyViolation(
            f"{spec.name} v{spec.version}: its code file {problem}; it is not loaded. Build and "
            "review it again."
        )
    if record.max_output_chars is not None:
        limits = dataclasses.replace(limits, max_output_chars=record.max_output_chars)
    guard = PolicyGuardedTool(
        spec, code, base_dir=base_dir, limits=limits, audit=audit, protected=protected
    )

    note = _process_limit_note(limits)

    def preview(args: dict[str, object]) -> str:
        shown = json.dumps(args, ensure_ascii=False, sort_keys=True, default=str)
        return f"{spec.name} v{spec.version} (generated, runs sandboxed{note}) with {shown}"

    return ToolSpec(
        spec.name,
        guard.run,
        requires_env=spec.secrets,
        description=f"{spec.purpose} (generated tool v{spec.version}; runs sandboxed{note})",
        parameters=spec.parameters,
        category=category_for(spec),
        timeout=limits.timeout + _TIMEOUT_SLACK,
        preview=preview,
        group=GENERATED_GROUP,
    )


def _process_limit_note(limits: SandboxLimits) -> str:
    """What the description and preview add when ``max_processes`` does not hold (else "").

    With the seccomp filter a tool cannot start a process or thread at all, so the process
    limit only matters without it; then an engine running as root without a pids cgroup says
    so (and logs a WARNING for the tool).
    """
    if limits.seccomp or not warn_process_limit_gap("tool_config.toolsmaker.max_processes"):
        return ""
    return "; its process limit is not enforced (the engine runs as root)"
