"""Built-in tools, activated by name (``Agent(tools=["read_file", "run_bash"])``, ``--tools``).

========================  ============  ====================================================
group                     category      tools
========================  ============  ====================================================
``files``                 read_only     read_file, list_directory, file_info
``files``                 modification  write_file, append_file, delete_file, move_file,
                                        copy_file
``search``                read_only     glob_search, grep_search
``shell``                 modification  run_bash
``toolsmaker``            modification  propose_tool (a person reviews every proposal)
``web``                   external      web_search
``notes``                 read_only     find_similar, read_note
``math``                  read_only     calculator
========================  ============  ====================================================

They are built from `ToolConfig` (sandbox directory, limits, lists,
search backend, notes folder) and the Agent's working directory.
"""

from __future__ import annotations

import os

from ai_agent.config import ToolConfig
from ai_agent.state import ToolResult
from ai_agent.tools.builtin.bash import bash_tool
from ai_agent.tools.builtin.files import file_tools, sandbox_for
from ai_agent.tools.builtin.notes import notes_tools
from ai_agent.tools.builtin.notes_rank import Embed
from ai_agent.tools.builtin.protected import ProtectedPaths
from ai_agent.tools.builtin.search import search_tools
from ai_agent.tools.builtin.typed import builtin_spec
from ai_agent.tools.builtin.web_search import web_search_tool
from ai_agent.tools.spec import ToolCategory, ToolSpec

__all__ = ["BUILTIN_NAMES", "builtin_tools"]

BUILTIN_NAMES = (
    "read_file",
    "write_file",
    "append_file",
    "list_directory",
    "file_info",
    "delete_file",
    "move_file",
    "copy_file",
    "glob_search",
    "grep_search",
    "run_bash",
    "propose_tool",
    "web_search",
    "find_similar",
    "read_note",
    "calculator",
)


def _calculator(expression: str) -> ToolResult:
    """Evaluate an arithmetic expression exactly: + - * / // % ** ^, parentheses, and
    percentages such as '19.5% of 349' or '50 + 10%'. Returns the number.

    Args:
        expression: The expression, e.g. 19.5% of 349
    """  # noqa: D205 - the model reads the first paragraph whole, as the tool's description
    # Loaded on the first call: importing the tools does not need the calculator.
    from ai_agent.tools.builtin.calculator import CalculatorError, evaluate, format_number

    if not expression.strip():
        return ToolResult(
            status="error",
            error="give an arithmetic expression, e.g. '19.5% of 349'",
            meta={"code": "BAD_ARGUMENTS"},
        )
    try:
        value = evaluate(expression)
    except CalculatorError as exc:
        return ToolResult(status="error", error=str(exc), meta={"code": "CANNOT_PARSE"})
    return ToolResult(status="ok", content=format_number(value))


def builtin_tools(
    config: ToolConfig | None = None,
    *,
    workdir: str | os.PathLike[str] = ".",
    embed: Embed | None = None,
    protected: ProtectedPaths | None = None,
) -> list[ToolSpec]:
    """Every built-in tool's spec (the catalog the Agent starts from).

    Args:
        config: Tool settings (defaults when None).
        workdir: The working directory: the file sandbox's base unless the settings name one.
        embed: An embedding function for the notes ranker (default: lexical).
        protected: The engine's own state: the file, search and notes tools refuse it, and
            ``run_bash`` under bubblewrap hides it.

    Examples:
        >>> [t.name for t in builtin_tools()][-3:]
        ['find_similar', 'read_note', 'calculator']
    """
    # The toolsmaker's modules load only when an Agent builds its catalog, not on import.
    from ai_agent.tools.maker.propose import propose_tool_spec

    config = config or ToolConfig()
    sandbox = sandbox_for(config.files, workdir, protected)
    notes_folder = config.notes.folder or sandbox.base
    return [
        *file_tools(sandbox, config.files),
        *search_tools(sandbox, config.files),
        bash_tool(sandbox, config.bash),
        propose_tool_spec(),
        web_search_tool(config.web_search),
        *notes_tools(
            notes_folder,
            config.notes,
            embed,
            protected=protected,
            allow_hard_links=config.files.allow_hard_links,
        ),
        # The calculator has always ignored arguments it does not know (its schema never said
        # additionalProperties: false, and recorded runs replay only against the same schema).
        builtin_spec(
            _calculator,
            name="calculator",
            category=ToolCategory.READ_ONLY,
            group="math",
            extra="ignore",
        ),
    ]
