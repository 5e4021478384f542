"""Reviewing generated tools without an Agent: the toolsmaker's records, as people review them.

``ai-agent tools pending | show | approve | reject | activate | rollback | audit`` work on the
toolsmaker's directory alone: building an Agent would load (and could refuse) the very tools a
person is about to review. `open_toolsmaker` gives the registry of a directory, with the
settings' locations as the defaults, the same ones an Agent uses (``Agent.toolsmaker``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ai_agent.config import AgentSettings
    from ai_agent.tools.maker import ToolsmakerRegistry

__all__ = ["open_toolsmaker"]


def open_toolsmaker(
    settings: AgentSettings,
    *,
    directory: str | Path | None = None,
    audit_path: str | Path | None = None,
) -> ToolsmakerRegistry:
    """The toolsmaker registry of a directory, for review (no runtime tools are loaded).

    Args:
        settings: Give the defaults: ``tool_config.toolsmaker.dir`` and its ``audit_path``.
        directory: The toolsmaker directory (default: the settings').
        audit_path: Its audit log (default: the settings', else ``directory/audit.jsonl``).

    Examples:
        >>> import tempfile
        >>> from ai_agent import AgentSettings
        >>> maker = open_toolsmaker(AgentSettings(_env_file=None), directory=tempfile.mkdtemp())
        >>> maker.pending()
        []
    """
    from ai_agent.tools.maker import ToolsmakerRegistry

    config = settings.tool_config.toolsmaker
    return ToolsmakerRegistry(directory or config.dir, audit_path=audit_path or config.audit_path)
