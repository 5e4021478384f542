"""The toolsmaker's data: statuses, capabilities, build requests, canonical specs, build records.

A person's intent (``{name, purpose, inputs, outputs, capabilities, allowed_paths,
allowed_domains, secrets, risk}``, optionally with ``code``) becomes a `ToolBuildRequest`;
the builder turns a request into a canonical `GeneratedToolSpec` plus code, which the validator
judges in a `ValidationReport`; every version of a tool is kept as a `BuildRecord` on disk
(``specs/<name>_v<version>.json``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

__all__ = [
    "CAPABILITIES",
    "LIST_FIELDS",
    "RECORD_VERSION",
    "BuildRecord",
    "BuildResult",
    "GeneratedToolSpec",
    "ToolBuildRequest",
    "ToolStatus",
    "ValidationReport",
]

RECORD_VERSION = 1
CAPABILITIES = ("fs_read", "fs_write", "http", "secrets")
# The fields that are sequences in requests and specs (lists in JSON).
LIST_FIELDS = ("outputs", "capabilities", "allowed_paths", "allowed_domains", "secrets")


class ToolStatus(StrEnum):
    """Where a generated tool version stands.

    ``draft -> validated -> approval_required -> approved | rejected``, and
    ``approved -> activated``; nothing else (see `ai_agent.tools.maker.approvals`).
    """

    DRAFT = "draft"
    VALIDATED = "validated"
    APPROVAL_REQUIRED = "approval_required"
    APPROVED = "approved"
    REJECTED = "rejected"
    ACTIVATED = "activated"


@dataclass(frozen=True, slots=True)
class ToolBuildRequest:
    """What a person (or the model, through ``propose_tool``) asks the toolsmaker to build.

    Args:
        name: The tool's name (letters, digits, ``_``; starts with a letter).
        purpose: What it does: the tool's description for the model and the reviewer.
        inputs: Parameter name -> JSON type (``"string"``) or a JSON-schema object.
        outputs: Names of the result's fields (documentation for the reviewer).
        capabilities: Any of ``fs_read``, ``fs_write``, ``http``, ``secrets``.
        allowed_paths: Directories (relative to the workspace) the tool may see.
        allowed_domains: Hosts (``api.example.com``, ``*.example.com``, ``host:8080``) the
            tool may reach through the engine's HTTP broker.
        secrets: Environment variables the tool receives (and nothing else of the engine's
            environment).
        risk: ``low``, ``medium`` or ``high``, as the requester judges it.
        code: The module (``class GeneratedTool`` with ``execute(self, **kwargs)``); None: the
            builder writes it from its template.
        tests: Examples run confined once the build passes validation (at most 10), each
            ``{"args": {...}, "expect": {field: value}}`` or ``{"args": {...},
            "expect_error": "text"}`` (see `ai_agent.tools.maker.examples`).
    """

    name: str
    purpose: str
    inputs: Mapping[str, Any] = field(default_factory=dict)
    outputs: Sequence[str] = ()
    capabilities: Sequence[str] = ()
    allowed_paths: Sequence[str] = ()
    allowed_domains: Sequence[str] = ()
    secrets: Sequence[str] = ()
    risk: str = "medium"
    code: str | None = None
    tests: Sequence[Mapping[str, Any]] = ()

    def to_json(self) -> dict[str, Any]:
        """The request as JSON data.

        Returns:
            Every field, sequences as lists (what build records keep).
        """
        data = asdict(self)
        for key in LIST_FIELDS:
            data[key] = list(data[key])
        data["inputs"] = dict(data["inputs"])
        if isinstance(data["tests"], tuple):
            data["tests"] = list(data["tests"])
        return data


@dataclass(frozen=True, slots=True)
class GeneratedToolSpec:
    """The canonical description of one generated tool version (sorted, de-duplicated lists).

    Attributes:
        name: The tool's name.
        version: Its version number (1, 2, ...).
        purpose: What it does.
        parameters: The JSON schema of its arguments, built from the request's ``inputs``.
        outputs: Names of the result's fields, in the order given.
        capabilities: What it may do (``fs_read``, ``fs_write``, ``http``, ``secrets``).
        allowed_paths: Workspace directories it sees.
        allowed_domains: Hosts it may reach through the broker (lower case).
        secrets: Environment variables it receives.
        risk: ``low``, ``medium`` or ``high``.
        code_sha256: The hash of the reviewed code; what runs must match it.
        generated: True when the template wrote the code, False when the request carried it.
    """

    name: str
    version: int
    purpose: str
    parameters: dict[str, Any]
    outputs: tuple[str, ...]
    capabilities: tuple[str, ...]
    allowed_paths: tuple[str, ...]
    allowed_domains: tuple[str, ...]
    secrets: tuple[str, ...]
    risk: str
    code_sha256: str
    generated: bool  # True: written by the template; False: the request carried the code

    def to_json(self) -> dict[str, Any]:
        """The spec as JSON data.

        Returns:
            Every field, tuples as lists.
        """
        data = asdict(self)
        for key in LIST_FIELDS:
            data[key] = list(data[key])
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GeneratedToolSpec:
        """The spec from JSON data.

        Args:
            data: What `to_json` wrote.

        Returns:
            The spec.
        """
        return cls(
            name=str(data["name"]),
            version=int(data["version"]),
            purpose=str(data["purpose"]),
            parameters=dict(data["parameters"]),
            outputs=tuple(data["outputs"]),
            capabilities=tuple(data["capabilities"]),
            allowed_paths=tuple(data["allowed_paths"]),
            allowed_domains=tuple(data["allowed_domains"]),
            secrets=tuple(data["secrets"]),
            risk=str(data["risk"]),
            code_sha256=str(data["code_sha256"]),
            generated=bool(data["generated"]),
        )

    def changes_from(self, older: GeneratedToolSpec | None) -> list[str]:
        """What a reviewer should know changed from ``older`` (capabilities, paths, hosts...).

        Args:
            older: The version this one replaces (None: a new tool).

        Returns:
            One ``"field: before -> after"`` line per changed field (none for a new tool).
        """
        if older is None:
            return []
        out = []
        for key in ("purpose", "parameters", *LIST_FIELDS, "risk"):
            before, after = getattr(older, key), getattr(self, key)
            if before != after:
                out.append(f"{key}: {_show(before)} -> {_show(after)}")
        return out


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return "[" + ", ".join(value) + "]" if value else "[]"
    if isinstance(value, dict):
        return ", ".join(sorted(value.get("properties", value)))
    return repr(value)


@dataclass(slots=True)
class BuildRecord:
    """One version of a generated tool as kept in ``specs/<name>_v<version>.json``.

    Attributes:
        spec: The canonical spec (its ``code_sha256`` is the hash of the approved code).
        status: The current `ToolStatus`.
        request: The request it was built from.
        validation: The validator's report (``ok``, ``errors``, ``warnings``).
        code_path: The generated module, relative to the toolsmaker directory.
        review_path: The review artifact, once there is one.
        history: ``[{status, at, by, reason}]``, oldest first.
        max_output_chars: The result-text cap set when it was activated (None: the default).
        tests: The results of the request's examples, run confined after validation
            (``summary``, ``given``, ``passed``, ``failed``, ``not_run``, ``results``; see
            `ai_agent.tools.maker.trials.results_record`); None before validation passed.
    """

    spec: GeneratedToolSpec
    status: ToolStatus
    request: dict[str, Any]
    validation: dict[str, Any]
    code_path: str
    review_path: str | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    max_output_chars: int | None = None
    tests: dict[str, Any] | None = None

    @property
    def name(self) -> str:
        """The tool's name."""
        return self.spec.name

    @property
    def version(self) -> int:
        """The version number (1, 2, ...)."""
        return self.spec.version

    def to_json(self) -> dict[str, Any]:
        """The record as written to disk.

        Returns:
            JSON data with ``record_version`` (the format's version) first.
        """
        return {
            "record_version": RECORD_VERSION,
            "spec": self.spec.to_json(),
            "status": self.status.value,
            "request": self.request,
            "validation": self.validation,
            "code_path": self.code_path,
            "review_path": self.review_path,
            "history": self.history,
            "max_output_chars": self.max_output_chars,
            "tests": self.tests,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BuildRecord:
        """The record from disk.

        Args:
            data: What `to_json` wrote.

        Returns:
            The record.
        """
        return cls(
            spec=GeneratedToolSpec.from_json(data["spec"]),
            status=ToolStatus(data["status"]),
            request=dict(data["request"]),
            validation=dict(data["validation"]),
            code_path=str(data["code_path"]),
            review_path=data.get("review_path"),
            history=list(data.get("history", [])),
            max_output_chars=data.get("max_output_chars"),
            tests=_stored_tests(data.get("tests")),
        )


def _stored_tests(value: Any) -> dict[str, Any] | None:
    """A record's test results as read from disk; a changed file's are said to be unreadable."""
    if value is None:
        return None
    results = value.get("results") if isinstance(value, dict) else None
    if isinstance(results, list) and all(isinstance(r, dict) for r in results):
        return dict(value)
    return {
        "summary": "the stored test results are unreadable (the record file was changed)",
        "given": 0,
        "passed": 0,
        "failed": 0,
        "not_run": 0,
        "results": [],
    }


@dataclass(frozen=True, slots=True)
class BuildResult:
    """What a build returns: the record's spec and status, and where a person reviews it.

    Attributes:
        spec: The canonical spec (``spec.name``, ``spec.version``).
        status: ``approval_required`` when it passed validation, else ``draft``.
        validation: The validator's report.
        code_path: The generated module (absolute).
        review_path: The review artifact (absolute), or None when validation failed.
        reused: True when an identical build already existed and was returned instead.
    """

    spec: GeneratedToolSpec
    status: ToolStatus
    validation: dict[str, Any]
    code_path: str
    review_path: str | None
    reused: bool = False

    @property
    def ok(self) -> bool:
        """True when the build passed validation and waits for a person."""
        return self.status is ToolStatus.APPROVAL_REQUIRED


@dataclass(slots=True)
class ValidationReport:
    """Errors (the build fails) and warnings (for the reviewer) of one validation.

    Attributes:
        errors: What must change before the tool can be reviewed.
        warnings: What a reviewer should look at (file access, network, secrets).
        uses: What the code was seen to use (``open``, ``os``, ``http``, ``secrets``...).
    """

    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    uses: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when there are no errors."""
        return not self.errors

    def to_json(self) -> dict[str, Any]:
        """The report as JSON data.

        Returns:
            ``ok``, ``errors``, ``warnings``, ``uses`` (sorted) and a ``note`` that this is not
            the boundary.
        """
        return {
            "ok": self.ok,
            "errors": list(self.errors),
            "warnings": list(self.warnings),
            "uses": sorted(set(self.uses)),
            "note": "a filter and review aid; the OS sandbox is the boundary",
        }
