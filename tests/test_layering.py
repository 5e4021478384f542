"""The package's shape: imports only go downwards, and public names are pinned and sorted."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "ai_agent"

# What each part may import from inside the package (besides itself). Imports under
# ``if TYPE_CHECKING:`` are annotations only and do not count.
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "datafiles": {"errors"},
    "state": set(),
    "visible": set(),
    "config": {"errors", "datafiles"},
    "context": {"state"},
    "observability": {"errors", "state", "context", "config", "visible"},
    "resilience": {"errors", "state", "observability"},
    "tokens": {"errors", "config"},
    "compaction": {"errors", "state", "context", "tokens"},
    "accounting": {"state", "context", "tokens", "compaction"},
    "usage": {"state"},
    "tools": {"errors", "state", "context", "config", "resilience", "observability"},
    "nodes": {"errors", "state", "context", "config", "tools", "observability"},
}


def _runtime_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    hidden: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            hidden.update(id(n) for n in ast.walk(node))
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in hidden:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "ai_agent" and len(parts) > 1:
                found.add(parts[1])
    return found


def _part(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0].removesuffix(".py")


@pytest.mark.parametrize("part", sorted(ALLOWED))
def test_imports_only_go_downwards(part: str) -> None:
    files = [p for p in PACKAGE.rglob("*.py") if _part(p) == part]
    assert files, part
    for path in files:
        extra = _runtime_imports(path) - ALLOWED[part] - {part}
        assert not extra, f"{path.relative_to(PACKAGE)} imports {sorted(extra)}"


def test_nodes_never_import_graph_or_checkpoints() -> None:
    for path in (PACKAGE / "nodes").rglob("*.py"):
        imported = _runtime_imports(path)
        assert not imported & {"graph", "checkpoints", "cli"}, path.name


@pytest.mark.parametrize(
    "module",
    [
        "ai_agent",
        "ai_agent.config",
        "ai_agent.errors",
        "ai_agent.state",
        "ai_agent.context",
        "ai_agent.tools",
        "ai_agent.checkpoints",
        "ai_agent.graph",
        "ai_agent.testing",
        "ai_agent.models",
        "ai_agent.resilience",
        "ai_agent.tokens",
        "ai_agent.compaction",
        "ai_agent.accounting",
        "ai_agent.usage",
        "ai_agent.events",
        "ai_agent.observability",
        "ai_agent.visible",
    ],
)
def test_public_names_are_sorted_and_exist(module: str) -> None:
    mod = importlib.import_module(module)
    names = list(getattr(mod, "__all__", []))
    assert names, module
    # The order ruff's RUF022 keeps: CONSTANTS, then Classes, then functions, each alphabetical.
    assert names == sorted(
        names, key=lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n)
    )
    for name in names:
        assert hasattr(mod, name), f"{module}.{name}"


def test_the_public_api_of_the_design() -> None:
    import ai_agent

    expected = {
        "Agent",
        "AgentSettings",
        "RunResult",
        "UserPlan",
        "ToolSpec",
        "ToolResult",
        "make_tool_registry",
    }
    assert expected <= set(ai_agent.__all__)


# Every public name of the single module ``ai_agent/config.py`` that the package replaced: import
# sites across the tree, the docs and users' code keep working.
CONFIG_NAMES = {
    "AgentSettings", "ApprovalPolicyName", "BashToolConfig", "BudgetConfig", "CompactionConfig",
    "CompactionStrategy", "CONFIG_FILE_SUFFIXES", "DEFAULT_CONFIG_FILES", "ENV_NESTED_DELIMITER",
    "ENV_PREFIX", "ErrorRecoveryConfig", "FileToolsConfig", "HybridComponent", "LoggingConfig",
    "MAX_CONFIG_FILE_BYTES", "MAX_ITERATIONS", "MCP_ENV_REFERENCE", "McpAuthConfig",
    "McpServerConfig", "McpTransportName", "ModelBackendSettings", "ModelRate", "NotesConfig",
    "ObservabilityConfig", "SECRET_ENV_NAME", "StreamingConfig", "TokenizerConfig",
    "ToolCategoryName", "ToolConfig", "ToolsmakerConfig", "USER_ENV_FILE_NAME", "WebSearchConfig",
    "load_mcp_config", "load_settings", "split_tool_names",
}  # fmt: skip


def test_the_config_package_keeps_the_names_of_the_module() -> None:
    import ai_agent.config

    assert set(ai_agent.config.__all__) == CONFIG_NAMES


def test_the_config_file_travels_as_an_argument() -> None:
    # Settings are read from what the call names; no context variable carries the file beside it.
    paths = [*PACKAGE.glob("config.py"), *(PACKAGE / "config").rglob("*.py")]
    assert paths
    for path in paths:
        assert "ContextVar" not in path.read_text(), path.name
