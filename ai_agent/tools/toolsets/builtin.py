"""BuiltinToolset: the built-in tools (`ai_agent.tools.builtin`) as one toolset.

Examples:
    >>> builtin = BuiltinToolset()
    >>> [spec.name for spec in builtin.tools()][-2:]
    ['read_note', 'calculator']
"""

from __future__ import annotations

import os

from ai_agent.config import ToolConfig
from ai_agent.tools.builtin import builtin_tools
from ai_agent.tools.builtin.notes_rank import Embed
from ai_agent.tools.builtin.protected import ProtectedPaths
from ai_agent.tools.toolsets.functions import FunctionToolset

__all__ = ["BuiltinToolset"]


class BuiltinToolset(FunctionToolset):
    """Every built-in tool, built from the tool settings (see `builtin_tools`).

    Args:
        config: Tool settings (defaults when None).
        workdir: The working directory: the file sandbox's base unless the settings name one.
        embed: An embedding function for the notes ranker (default: lexical).
        protected: The engine's own state, out of reach of every built-in tool.
    """

    def __init__(
        self,
        config: ToolConfig | None = None,
        *,
        workdir: str | os.PathLike[str] = ".",
        embed: Embed | None = None,
        protected: ProtectedPaths | None = None,
    ) -> None:
        tools = builtin_tools(config, workdir=workdir, embed=embed, protected=protected)
        super().__init__(tools, name="builtin")
        # pydantic writes the built-ins' schemas from their signatures, and the test suite
        # checks each against the metaschema (tests/tools/test_builtin_schemas.py): mounting
        # them does not load jsonschema, which ``ai-agent tools`` would pay for every time.
        self.schemas_checked = True
