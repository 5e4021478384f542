"""The toolsmaker folder, read: build records, active versions, a version's code and review.

`ai_agent.tools.maker.registry.ToolsmakerRegistry` is this plus every change (build, approve,
reject, activate, roll back), each under the folder's lock; reading takes no lock (every file
is written atomically, so a reader sees a whole old or a whole new one).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ai_agent.errors import ToolBuildError, UnknownToolError
from ai_agent.tools.maker.records import BuildRecord, ToolStatus
from ai_agent.tools.maker.storage import Layout, read_code, read_json
from ai_agent.tools.maker.validator import NAME

__all__ = ["BuildCatalog"]


class BuildCatalog:
    """What one toolsmaker folder holds (see the module docstring).

    Args:
        layout: Where the folder's files are.
    """

    def __init__(self, layout: Layout) -> None:
        self.layout = layout

    def records(self, name: str | None = None) -> list[BuildRecord]:
        """Every build record, by name then version.

        Args:
            name: Only this tool's versions (None: every tool's).

        Returns:
            The records.
        """
        out = []
        pattern = f"{name}_v*.json" if name else "*_v*.json"
        for path in self.layout.specs.glob(pattern):
            record = self._read(path)
            if record is not None and (name is None or record.name == name):
                out.append(record)
        return sorted(out, key=lambda r: (r.name, r.version))

    def _read(self, path: Path) -> BuildRecord | None:
        """The record in ``path`` (None when missing), or ToolBuildError naming the damage.

        The files are the engine's own, but a person may edit one: what cannot be read is said
        with the file and what to do, not as an internal error of every command that lists.
        """
        try:
            data = read_json(path)
            return None if data is None else BuildRecord.from_json(data)
        except (ValueError, RecursionError, KeyError, TypeError, AttributeError) as exc:
            raise ToolBuildError(
                f"the build record {self.layout.relative(path)} is damaged "
                f"({type(exc).__name__}: {str(exc)[:200]}); restore it, or move it out of "
                f"{self.layout.relative(self.layout.specs)}/ to drop that version"
            ) from None

    def record(self, name: str, version: int | None = None) -> BuildRecord:
        """One version's record.

        Args:
            name: The tool.
            version: The version (None: the latest).

        Returns:
            The record.

        Raises:
            UnknownToolError: no such generated tool or version.
        """
        if version is not None:
            found = self._read(self.layout.record(name, version)) if NAME.match(name) else None
            if found is None:
                raise UnknownToolError(self._unknown(name, version))
            return found
        versions = self.records(name) if NAME.match(name) else []
        if not versions:
            raise UnknownToolError(self._unknown(name, None))
        return versions[-1]

    def _unknown(self, name: str, version: int | None) -> str:
        known = sorted({r.name for r in self.records()})
        what = f"{name} v{version}" if version is not None else name
        return (
            f"no generated tool {what}; generated tools: {', '.join(known) or 'none'} "
            "(`ai-agent tools pending` lists those waiting for review)"
        )

    def pending(self) -> list[BuildRecord]:
        """Versions waiting for a person.

        Returns:
            The records in ``approval_required``, by name then version.
        """
        return [r for r in self.records() if r.status is ToolStatus.APPROVAL_REQUIRED]

    def active_versions(self) -> dict[str, int]:
        """Which version of each tool is active.

        Returns:
            Tool name -> version, from ``active_versions.json`` (empty when there is none).
        """
        try:
            data = read_json(self.layout.active, {})
            return {str(k): int(v) for k, v in data.items()}
        except (ValueError, RecursionError, TypeError, AttributeError) as exc:
            raise ToolBuildError(
                f"{self.layout.relative(self.layout.active)} is damaged ({type(exc).__name__}: "
                f"{str(exc)[:200]}); restore it, or remove it and activate the tools again"
            ) from None

    def code(self, name: str, version: int) -> str:
        """The generated module of one version.

        Args:
            name: The tool.
            version: The version.

        Returns:
            The module's source as it is on disk.

        Raises:
            UnknownToolError: no such version.
        """
        record = self.record(name, version)
        return read_code(self.layout.root / record.code_path)  # as it runs, CRs included

    def review(self, name: str, version: int) -> dict[str, Any]:
        """The review artifact of one version.

        Args:
            name: The tool.
            version: The version.

        Returns:
            The artifact (summary, diff, validation, code path...); empty for a version that
            failed validation.

        Raises:
            UnknownToolError: no such version.
        """
        record = self.record(name, version)
        if record.review_path is None:
            return {}
        data: dict[str, Any] = read_json(self.layout.root / record.review_path, {})
        return data
