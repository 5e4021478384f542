"""ToolsmakerRegistry: the one place that changes toolsmaker state.

It builds (request -> validated code -> review artifact), moves versions through their
lifecycle (`ai_agent.tools.maker.approvals`), activates and rolls back versions, and puts
the active ones in its toolset (`ai_agent.tools.maker.toolset.GeneratedToolset`), mounted in
the Agent's runtime `ai_agent.tools.registry.ToolRegistry` next to the static tools: a run
sees generated and static tools in one catalog, pinned per cycle.

Every change holds the directory's lock (several processes may share one toolsmaker directory)
and is written atomically; every step is an audit event.

Examples:
    >>> import tempfile
    >>> maker = ToolsmakerRegistry(tempfile.mkdtemp())
    >>> built = maker.build_from_intent({"name": "shout", "purpose": "Upper-case a text.",
    ...                                  "inputs": {"text": "string"}, "outputs": ["text"]})
    >>> built.status.value, built.spec.version
    ('approval_required', 1)
    >>> maker.approve("shout", 1).status.value
    'approved'
    >>> maker.activate("shout", 1).name
    'shout'
    >>> maker.active_versions()
    {'shout': 1}
"""

from __future__ import annotations

import logging
import os
from collections.abc import Collection, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ai_agent.errors import (
    ToolBuildError,
    ToolPolicyViolation,
    ToolTransitionError,
    UnknownToolError,
)
from ai_agent.tools.builtin.protected import Protected, ProtectedPaths
from ai_agent.tools.maker.approvals import check_transition, review_artifact
from ai_agent.tools.maker.audit import AuditLog, AuditReport, verify_audit
from ai_agent.tools.maker.builder import build, request_from_intent
from ai_agent.tools.maker.catalog import BuildCatalog
from ai_agent.tools.maker.limits import SandboxLimits
from ai_agent.tools.maker.loader import load_tool
from ai_agent.tools.maker.records import (
    BuildRecord,
    BuildResult,
    GeneratedToolSpec,
    ToolBuildRequest,
    ToolStatus,
)
from ai_agent.tools.maker.storage import Layout, atomic_write, dumps, read_code
from ai_agent.tools.maker.toolset import GeneratedToolset
from ai_agent.tools.maker.trials import results_record, run_examples, run_to_end
from ai_agent.tools.maker.validator import NAME, validate_code, validate_request
from ai_agent.tools.registry import ToolRegistry
from ai_agent.tools.spec import ToolSpec

__all__ = ["DEFAULT_TOOLSMAKER_DIR", "ToolsmakerRegistry"]

DEFAULT_TOOLSMAKER_DIR = Path(".agents/toolsmaker")
log = logging.getLogger("ai_agent.tools.maker")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class ToolsmakerRegistry(BuildCatalog):
    """Builds, reviews, versions and activates generated tools (see the module docstring).

    Args:
        directory: ``toolsmaker_dir`` (created on the first change).
        audit_path: ``toolsmaker_audit_path`` (default ``directory/audit.jsonl``).
        runtime: The runtime tool registry its toolset of active versions is mounted in (a
            new one when None: useful for the CLI and tests).
        base_dir: The workspace generated tools' ``allowed_paths`` are relative to.
        limits: Limits of every generated tool call.
        protected: The rest of the engine's own state (the Agent's `ProtectedPaths`), or more
            host paths no generated tool may have mounted; the toolsmaker directory and the
            audit log always are.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str] = DEFAULT_TOOLSMAKER_DIR,
        *,
        audit_path: str | os.PathLike[str] | None = None,
        runtime: ToolRegistry | None = None,
        base_dir: str | os.PathLike[str] = ".",
        limits: SandboxLimits | None = None,
        protected: ProtectedPaths | Collection[str | os.PathLike[str]] = (),
    ) -> None:
        super().__init__(Layout(Path(directory), Path(audit_path) if audit_path else None))
        self.audit_log = AuditLog(self.layout.audit)
        self.runtime = runtime if runtime is not None else ToolRegistry()
        self.toolset = GeneratedToolset()
        """The active versions this object registered, as a toolset of the runtime registry."""
        self.runtime.mount(self.toolset)
        self.base_dir = Path(base_dir)
        self.limits = limits or SandboxLimits()
        own = [
            Protected(self.layout.root.absolute(), "the toolsmaker folder", folder=True),
            Protected(self.layout.audit.absolute(), "the toolsmaker audit log", folder=False),
        ]
        if not isinstance(protected, ProtectedPaths):
            protected = ProtectedPaths(
                Protected(Path(p).absolute(), "the engine's own files", folder=Path(p).is_dir())
                for p in protected
            )
        self.protected = protected.plus(own)
        self._loaded: dict[str, int] = {}

    # Audit ------------------------------------------------------------------------------------
    def audit(
        self, event: str, *, tool: str | None = None, version: int | None = None, **data: Any
    ) -> dict[str, Any]:
        """Append one event to the hash-chained audit log.

        Args:
            event: The event's name.
            tool: The tool it concerns.
            version: The version it concerns.
            **data: What else to keep with it.

        Returns:
            The entry as written.
        """
        return self.audit_log.append(event, tool=tool, version=version, **data)

    def verify_audit(self) -> AuditReport:
        """Check the audit log's chain and head (``ai-agent tools audit --verify``).

        Returns:
            The report (``ok``, line count, head hash, problems).
        """
        return verify_audit(self.layout.audit)

    # Building ---------------------------------------------------------------------------------
    def request_from_intent(self, intent: Mapping[str, Any]) -> ToolBuildRequest:
        """A build request from a structured intent.

        Args:
            intent: ``name``, ``purpose`` and any other intent field.

        Returns:
            The request (see `ai_agent.tools.maker.builder.request_from_intent`).

        Raises:
            ToolBuildError: not an intent.
        """
        return request_from_intent(intent)

    def build_from_intent(self, intent: Mapping[str, Any], *, by: str = "api") -> BuildResult:
        """Build from a structured intent (see `build`).

        Args:
            intent: ``name``, ``purpose`` and any other intent field.
            by: Who asked (kept in the history and the audit log).

        Returns:
            The build's result.

        Raises:
            ToolBuildError: not an intent, or a name that cannot name files.
        """
        return self.build(request_from_intent(intent), by=by)

    def build(self, request: ToolBuildRequest, *, by: str = "api") -> BuildResult:
        """Generate, validate and prepare one new version for review.

        A request identical to the latest version of its tool (same spec and code) returns that
        version (``reused=True``) instead of making another one, so proposing the same tool
        twice gives one review, not two. A rejected version is never reused.

        Args:
            request: What to build.
            by: Who asked (kept in the history and the audit log).

        Returns:
            The result: ``approval_required`` with the review artifact's path when it passed
            validation, ``draft`` (never shown to a person) when it did not.

        Raises:
            ToolBuildError: the name cannot name files (nothing is stored).
        """
        if not isinstance(request.name, str) or not NAME.match(request.name):
            raise ToolBuildError(
                f"tool name {request.name!r} is invalid: a letter, then letters, digits or '_'"
            )
        with self.layout.locked():
            versions = self.records(request.name)
            latest = versions[-1] if versions else None
            spec, code = build(request, (latest.version if latest else 0) + 1)
            if (
                latest is not None
                and latest.status is not ToolStatus.REJECTED
                and _same_build(latest.spec, spec)
                and latest.request.get("tests", []) == request.to_json()["tests"]
            ):
                return self._result(latest, reused=True)
            return self._build_locked(request, spec, code, versions, by)

    def _build_locked(
        self,
        request: ToolBuildRequest,
        spec: GeneratedToolSpec,
        code: str,
        versions: list[BuildRecord],
        by: str,
    ) -> BuildResult:
        name, version = spec.name, spec.version
        summary = {k: v for k, v in request.to_json().items() if k != "code"}
        self.audit(
            "tool_build_requested",
            tool=name,
            version=version,
            by=by,
            request=summary,
            carries_code=request.code is not None,
        )
        code_file = self.layout.code(name, version)
        atomic_write(code_file, code)
        self.audit(
            "tool_build_generated",
            tool=name,
            version=version,
            code_path=self.layout.relative(code_file),
            code_sha256=spec.code_sha256,
            from_template=spec.generated,
        )
        report = validate_request(request, reserved=self._static_names())
        if report.ok:
            code_report = validate_code(
                code, capabilities=spec.capabilities, inputs=spec.parameters["properties"]
            )
            report.errors += code_report.errors
            report.warnings += code_report.warnings
            report.uses += code_report.uses
        record = BuildRecord(
            spec=spec,
            status=ToolStatus.DRAFT,
            request=request.to_json(),
            validation=report.to_json(),
            code_path=self.layout.relative(code_file),
            history=[{"status": "draft", "at": _now(), "by": by}],
        )
        self._save(record)
        self.audit(
            "tool_build_validated",
            tool=name,
            version=version,
            ok=report.ok,
            errors=report.errors,
            warnings=report.warnings,
        )
        if not report.ok:
            return self._result(record)
        self._move(record, ToolStatus.VALIDATED, by="validator")
        self._try_examples(record, request)
        self._write_review(record, code, versions)
        self._move(record, ToolStatus.APPROVAL_REQUIRED, by="toolsmaker")
        self.audit(
            "tool_approval_required",
            tool=name,
            version=version,
            review_path=record.review_path,
            code_sha256=spec.code_sha256,
        )
        return self._result(record)

    def _try_examples(self, record: BuildRecord, request: ToolBuildRequest) -> None:
        """Run the request's examples as real calls of this version (confined) and keep them.

        A failing example does not stop the build: the person reviewing it decides.
        """
        tests = [dict(t) for t in request.tests]
        entries = run_to_end(lambda: run_examples(self._load(record), tests)) if tests else []
        record.tests = results_record(entries)
        self._save(record)
        if tests:
            self.audit(
                "tool_build_tested",
                tool=record.name,
                version=record.version,
                summary=record.tests["summary"],
                passed=record.tests["passed"],
                failed=record.tests["failed"],
                not_run=record.tests["not_run"],
                results=[
                    {"test": e["test"], "status": e["status"], "seconds": e["seconds"]}
                    for e in record.tests["results"]
                ],
            )

    def _static_names(self) -> set[str]:
        generated = {r.name for r in self.records()}
        return {n for n in self.runtime if n not in generated}

    def _write_review(self, record: BuildRecord, code: str, versions: list[BuildRecord]) -> None:
        active = self.active_versions().get(record.name)
        earlier = [r for r in versions if r.version < record.version]
        previous = next((r for r in earlier if r.version == active), None)
        if previous is None and earlier:
            previous = earlier[-1]
        previous_code = ""
        if previous is not None:
            try:
                previous_code = read_code(self.layout.root / previous.code_path)
            except OSError:
                previous_code = ""
        path = self.layout.review(record.name, record.version)
        artifact = review_artifact(
            record,
            code,
            code_path=str(self.layout.root / record.code_path),
            previous=previous,
            previous_code=previous_code,
        )
        atomic_write(path, dumps(artifact))
        record.review_path = self.layout.relative(path)

    def _result(self, record: BuildRecord, *, reused: bool = False) -> BuildResult:
        review = self.layout.root / record.review_path if record.review_path else None
        return BuildResult(
            spec=record.spec,
            status=record.status,
            validation=record.validation,
            code_path=str((self.layout.root / record.code_path).absolute()),
            review_path=str(review.absolute()) if review else None,
            reused=reused,
        )

    # Lifecycle --------------------------------------------------------------------------------
    def _save(self, record: BuildRecord) -> None:
        atomic_write(self.layout.record(record.name, record.version), dumps(record.to_json()))

    def _check(self, record: BuildRecord, target: ToolStatus, *, by: str) -> None:
        try:
            check_transition(record.name, record.version, record.status, target)
        except ToolTransitionError as exc:
            self.audit(
                "tool_transition_refused",
                tool=record.name,
                version=record.version,
                current=record.status.value,
                wanted=target.value,
                by=by,
                message=str(exc),
            )
            raise

    def _move(
        self, record: BuildRecord, target: ToolStatus, *, by: str, reason: str | None = None
    ) -> None:
        self._check(record, target, by=by)
        record.status = target
        entry: dict[str, Any] = {"status": target.value, "at": _now(), "by": by}
        if reason:
            entry["reason"] = reason
        record.history.append(entry)
        self._save(record)

    def approve(self, name: str, version: int, *, by: str = "person") -> BuildRecord:
        """A person approved this version (``approval_required -> approved``).

        Args:
            name: The tool.
            version: The version.
            by: Who approved it.

        Returns:
            The updated record.

        Raises:
            UnknownToolError: no such version.
            ToolTransitionError: it is not waiting for approval (audited as refused).
        """
        with self.layout.locked():
            record = self.record(name, version)
            self._move(record, ToolStatus.APPROVED, by=by)
            self.audit(
                "tool_approved",
                tool=name,
                version=version,
                by=by,
                code_sha256=record.spec.code_sha256,
            )
            return record

    def reject(self, name: str, version: int, *, reason: str, by: str = "person") -> BuildRecord:
        """A person rejected this version (``approval_required -> rejected``, final).

        As `approve` (same arguments, result and errors), with ``reason``: why, kept in the
        history and the audit log.
        """
        with self.layout.locked():
            record = self.record(name, version)
            self._move(record, ToolStatus.REJECTED, by=by, reason=reason)
            self.audit("tool_build_rejected", tool=name, version=version, by=by, reason=reason)
            return record

    def activate(
        self, name: str, version: int, *, max_output_chars: int | None = None, by: str = "person"
    ) -> ToolSpec:
        """Make an approved version the active one (``approved -> activated``) and register it.

        Args:
            name: The tool.
            version: An approved version.
            max_output_chars: Cap of its result text (default: the registry's limits).
            by: Who activates it (recorded in the history and the audit log).

        Returns:
            The runtime ToolSpec, registered in the runtime registry.

        Raises:
            ToolTransitionError: the version is not approved (an earlier activated version is
                made active again with `rollback`).
            ToolPolicyViolation: its code changed on disk since the review.
            ToolBuildError: ``max_output_chars`` below 1, or a static tool holds the name.
        """
        if max_output_chars is not None and max_output_chars < 1:
            raise ToolBuildError("max_output_chars must be at least 1")
        with self.layout.locked():
            record = self.record(name, version)
            self._check(record, ToolStatus.ACTIVATED, by=by)
            self._check_shadow(name)
            record.max_output_chars = max_output_chars
            spec = self._load(record)  # refuses changed code before anything is marked active
            self._move(record, ToolStatus.ACTIVATED, by=by)
            previous = self._set_active(name, version)
            self.audit(
                "tool_activated",
                tool=name,
                version=version,
                by=by,
                previous_version=previous,
                max_output_chars=max_output_chars,
            )
        return self._register(spec, version)

    def rollback(self, name: str, version: int | None = None, *, by: str = "person") -> ToolSpec:
        """Make an earlier activated version active again.

        Args:
            name: The tool.
            version: The version to return to (None: the latest activated one before the
                active one).
            by: Who rolled it back.

        Returns:
            The runtime ToolSpec of that version, registered in the runtime registry.

        Raises:
            ToolTransitionError: the tool is not active, or there is no such earlier activated
                version (audited as refused).
            ToolPolicyViolation: that version's code changed on disk since its review.
        """
        with self.layout.locked():
            current = self.active_versions().get(name)
            if current is None:
                raise ToolTransitionError(f"{name} has no active version to roll back from")
            earlier = [
                r
                for r in self.records(name)
                if r.status is ToolStatus.ACTIVATED and r.version != current
            ]
            if version is None:
                older = [r for r in earlier if r.version < current]
                target = older[-1] if older else None
            else:
                target = next((r for r in earlier if r.version == version), None)
            if target is None:
                wanted = f"v{version}" if version is not None else "an earlier version"
                self.audit(
                    "tool_transition_refused",
                    tool=name,
                    version=version,
                    by=by,
                    message=f"rollback to {wanted}: not an activated version other than v{current}",
                )
                raise ToolTransitionError(
                    f"{name} cannot roll back to {wanted}: only versions that were activated "
                    f"before can be made active again (active: v{current})"
                )
            self._check_shadow(name)
            spec = self._load(target)
            self._set_active(name, target.version)
            self.audit(
                "tool_rolled_back",
                tool=name,
                version=target.version,
                by=by,
                from_version=current,
            )
        return self._register(spec, target.version)

    def _set_active(self, name: str, version: int) -> int | None:
        active = self.active_versions()
        previous = active.get(name)
        active[name] = version
        atomic_write(self.layout.active, dumps(active))
        return previous

    # Runtime ----------------------------------------------------------------------------------
    def _load(self, record: BuildRecord) -> ToolSpec:
        return load_tool(
            record,
            self.layout.root / record.code_path,
            base_dir=self.base_dir,
            limits=self.limits,
            audit=self.audit,
            protected=self.protected,
        )

    def _check_shadow(self, name: str) -> None:
        """Refuse to let a generated tool take the place of a tool from another source."""
        owner = self.runtime.owner(name)
        if owner is not None and not isinstance(owner, GeneratedToolset):
            raise ToolBuildError(
                f"a tool named {name!r} that is not generated is registered; a "
                "generated tool never replaces it"
            )

    def _register(self, spec: ToolSpec, version: int) -> ToolSpec:
        self._check_shadow(spec.name)
        self.toolset.add(spec, replace=True)
        self._loaded[spec.name] = version
        return spec

    def load_active(self) -> list[ToolSpec]:
        """Put every active version in the toolset (at start-up).

        A version whose code changed since its review is skipped (and audited), as are missing
        ones and names a static tool holds; the others load.

        Returns:
            The specs registered.
        """
        out: list[ToolSpec] = []
        try:
            active = self.active_versions()
        except ToolBuildError as exc:
            # A damaged list must not stop the Agent from starting: it starts without the
            # generated tools, and says why (`tools show` and `activate` say it too).
            log.warning("generated tools not loaded: %s", exc)
            return out
        for name, version in sorted(active.items()):
            try:
                record = self.record(name, version)
                if record.status is not ToolStatus.ACTIVATED:
                    continue
                out.append(self._register(self._load(record), version))
            except (UnknownToolError, ToolBuildError, ToolPolicyViolation):
                # A missing, shadowed or tampered tool must not stop the Agent from starting;
                # a tampered one is in the audit log (tool_policy_blocked, integrity).
                continue
        return out

    def loaded(self) -> dict[str, int]:
        """Generated tools this object put in its toolset (and so in the runtime registry).

        Returns:
            Tool name -> version.
        """
        return dict(self._loaded)


def _same_build(old: GeneratedToolSpec, new: GeneratedToolSpec) -> bool:
    """Same spec and code, whatever the version number."""
    a, b = old.to_json(), new.to_json()
    a.pop("version")
    b.pop("version")
    return a == b
