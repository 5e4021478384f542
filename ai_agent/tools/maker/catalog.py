"""The toolsmaker folder, read: build records, active versions, a version's code and review.

`ai_agent.tools.maker.registry.ToolsmakerRegistry` is this plus every change (build, approve,
reject, activate, roll back), each under the folder's lock; reading takes no lock (every file
is written atomically, so a reader sees a whole old or a whole new one).
"""

from __future__ import annotations

from typing import Any

from ai_agent.errors import UnknownToolError
from ai_agent.tools.maker.records import BuildRecord, ToolStatus
from ai_agent.tools.maker.storage import Layout, read_json
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
            data = read_json(path)
            if data is not None and (name is None or data["spec"]["name"] == name):
                out.append(BuildRecord.from_json(data))
        return sorted(out, key=lambda r: (r.name, r.version))

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
            data = read_json(self.layout.record(name, version)) if NAME.match(name) else None
            if data is None:
                raise UnknownToolError(self._unknown(name, version))
            return BuildRecord.from_json(data)
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
        data = read_json(self.layout.active, {})
        return {str(k): int(v) for k, v in data.items()}

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
        return (self.layout.root / record.code_path).read_text(encoding="utf-8")

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
