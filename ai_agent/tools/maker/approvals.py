"""Approvals: the status lifecycle of a generated tool version, and its review artifact.

```text
draft -> validated -> approval_required -> approved -> activated
                                        `-> rejected
```

Any other change is refused with `ai_agent.errors.ToolTransitionError` (and the
registry writes a ``tool_transition_refused`` audit event). A build that fails validation stays a
``draft``; it never reaches a person. Making an earlier *activated* version active again is a
rollback (``ToolsmakerRegistry.rollback``), not a status change.

The review artifact (``reviews/<name>_v<version>.json``) is what a person reads before
approving: a summary (what the tool may touch: paths, hosts, secrets; what changed since the
previous version), the unified diff of the code against the previous version, the validation
report, and the path and hash of the code that will run.
"""

from __future__ import annotations

import difflib
from typing import Any

from ai_agent.errors import ToolTransitionError
from ai_agent.tools.maker.records import BuildRecord, GeneratedToolSpec, ToolStatus

__all__ = ["TRANSITIONS", "check_transition", "review_artifact", "review_summary"]

TRANSITIONS: dict[ToolStatus, frozenset[ToolStatus]] = {
    ToolStatus.DRAFT: frozenset({ToolStatus.VALIDATED}),
    ToolStatus.VALIDATED: frozenset({ToolStatus.APPROVAL_REQUIRED}),
    ToolStatus.APPROVAL_REQUIRED: frozenset({ToolStatus.APPROVED, ToolStatus.REJECTED}),
    ToolStatus.APPROVED: frozenset({ToolStatus.ACTIVATED}),
    ToolStatus.REJECTED: frozenset(),
    ToolStatus.ACTIVATED: frozenset(),
}


def check_transition(name: str, version: int, current: ToolStatus, target: ToolStatus) -> None:
    """Raise ToolTransitionError unless ``current -> target`` is in the lifecycle.

    Args:
        name: The tool (for the message).
        version: Its version (for the message).
        current: The version's status now.
        target: The status it should move to.

    Raises:
        ToolTransitionError: the lifecycle has no such step; the message says which steps
            ``current`` allows.

    Examples:
        >>> check_transition("t", 1, ToolStatus.APPROVAL_REQUIRED, ToolStatus.APPROVED)
        >>> try:
        ...     check_transition("t", 1, ToolStatus.DRAFT, ToolStatus.ACTIVATED)
        ... except ToolTransitionError as exc:
        ...     print(exc)
        t v1 is draft; it cannot become activated (from draft it can only become validated)
    """
    allowed = TRANSITIONS[current]
    if target in allowed:
        return
    if not allowed:
        why = f"{current.value} is final"
    else:
        why = f"from {current.value} it can only become " + " or ".join(
            sorted(s.value for s in allowed)
        )
    raise ToolTransitionError(
        f"{name} v{version} is {current.value}; it cannot become {target.value} ({why})"
    )


def _access(spec: GeneratedToolSpec) -> list[str]:
    caps = set(spec.capabilities)
    lines = []
    if caps & {"fs_read", "fs_write"}:
        mode = "read and write" if "fs_write" in caps else "read only"
        lines.append(f"files: {mode} in {', '.join(spec.allowed_paths)}")
    else:
        lines.append("files: none")
    lines.append(
        f"network: {', '.join(spec.allowed_domains)} (through the broker)"
        if "http" in caps
        else "network: none"
    )
    lines.append(f"secrets: {', '.join(spec.secrets)}" if spec.secrets else "secrets: none")
    return lines


def review_summary(
    spec: GeneratedToolSpec,
    validation: dict[str, Any],
    previous: GeneratedToolSpec | None,
    diff: str,
    tests: dict[str, Any] | None = None,
) -> str:
    """A few lines a person reads first: what the tool does and may touch, what changed.

    Args:
        spec: The version under review.
        validation: Its validation report (JSON data).
        previous: The version it is compared with (None for a new tool).
        diff: The unified diff of the code against ``previous``.
        tests: The results of the request's examples (the record's ``tests``), if they ran.

    Returns:
        The summary, one statement per line.
    """
    added = sum(1 for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++"))
    removed = sum(1 for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---"))
    origin = "template" if spec.generated else "code written by the requester"
    lines = [
        f"{spec.name} v{spec.version} ({spec.risk} risk, {origin}): {spec.purpose}",
        *_access(spec),
        f"inputs: {', '.join(spec.parameters.get('properties', {})) or 'none'}",
    ]
    if previous is None:
        lines.append(f"new tool: {added} line(s) of code")
    else:
        lines.append(f"changes from v{previous.version}: +{added} -{removed} line(s) of code")
        lines += [f"  {change}" for change in spec.changes_from(previous)]
    errors, warnings = validation.get("errors", []), validation.get("warnings", [])
    verdict = "passed" if not errors else f"FAILED ({len(errors)} error(s))"
    lines.append(f"validation: {verdict}; {len(warnings)} warning(s)")
    if tests is not None:
        lines.append(f"tests: {tests.get('summary')}")
        lines += [
            f"  test {e.get('test')} FAILED: {e.get('problem')}"
            for e in tests.get("results", [])
            if e.get("status") == "failed"
        ]
    lines.append("it runs confined by the OS whatever is approved; approve what it should do")
    return "\n".join(lines)


def review_artifact(
    record: BuildRecord,
    code: str,
    *,
    code_path: str,
    previous: BuildRecord | None = None,
    previous_code: str = "",
) -> dict[str, Any]:
    """The review artifact of ``record`` (JSON data), diffed against ``previous``.

    Args:
        record: The version under review.
        code: Its module.
        code_path: Where the module is, as shown to the reviewer.
        previous: The version to diff against (the active one, else the latest earlier one).
        previous_code: That version's module ("" when there is none).

    Returns:
        ``name``, ``version``, ``previous_version``, ``summary``, ``spec_changes``, ``diff``,
        ``validation``, ``tests``, ``code_path``, ``code_sha256`` and ``spec``.
    """
    old_name = f"{previous.name}_v{previous.version}.py" if previous else "/dev/null"
    new_name = f"{record.name}_v{record.version}.py"
    diff = "".join(
        difflib.unified_diff(
            previous_code.splitlines(keepends=True),
            code.splitlines(keepends=True),
            fromfile=old_name,
            tofile=new_name,
        )
    )
    prev_spec = previous.spec if previous else None
    return {
        "name": record.name,
        "version": record.version,
        "previous_version": previous.version if previous else None,
        "summary": review_summary(record.spec, record.validation, prev_spec, diff, record.tests),
        "spec_changes": record.spec.changes_from(prev_spec),
        "diff": diff,
        "validation": record.validation,
        "tests": record.tests,
        "code_path": code_path,
        "code_sha256": record.spec.code_sha256,
        "spec": record.spec.to_json(),
    }
