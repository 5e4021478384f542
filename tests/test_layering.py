"""The package's shape: imports only go downwards, and public names are pinned and sorted."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
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
    """The parts of the package (``tools``, ``graph``...) a file imports when it runs."""
    return {m.split(".")[1] for m in _imported_modules(path) if "." in m}


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


# The run archive (graph/archive.py) and the modules it is made of. It drives runs only through
# the Runner protocol (graph/driving.py): none of them imports the Agent or its runner.
ARCHIVE = {
    "archive",
    "database",
    "divergence",
    "driving",
    "export",
    "history",
    "html_report",
    "inspection",
    "player",
    "prune",
    "replay",
    "result",
    "summary",
    "timeline",
    "usage_report",
    "worker",
}
RUNNER = {"agent", "core", "mcp_mixin", "streaming", "tools_mixin", "toolsmaker_mixin"}


def _imported_modules(path: Path, *, with_annotations: bool = False) -> set[str]:
    """Every ``ai_agent`` module a file imports (annotation-only imports on request)."""
    tree = ast.parse(path.read_text())
    hidden: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            hidden.update(id(n) for n in ast.walk(node))
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in hidden and not with_annotations:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m == "ai_agent" or m.startswith("ai_agent.")}


def test_the_archive_knows_the_runner_only_through_its_protocol() -> None:
    graph = PACKAGE / "graph"
    assert {p.stem for p in graph.glob("*.py")} >= ARCHIVE | RUNNER
    for name in sorted(ARCHIVE):
        imported = _imported_modules(graph / f"{name}.py", with_annotations=True)
        runner = {m for m in imported if m.removeprefix("ai_agent.graph.") in RUNNER}
        assert not runner, f"graph/{name}.py imports {sorted(runner)}"


# Reading stored runs needs the run store and the checkpointer (LangGraph's checkpoint package,
# which brings langchain_core), never the model stack: ``ai-agent runs``, ``show``, ``history``
# and ``export`` must start fast (issue 20 holds them to a quarter of a second).
MODEL_STACK = (
    "langchain_openai",
    "openai",
    "tiktoken",
    "ai_agent.models",
    "ai_agent.tokens",
    "ai_agent.local",
    "ai_agent.graph.core",
    "ai_agent.graph.agent",
)


# Listing runs and plans needs the run store alone: LangGraph's graph runtime, the stages and
# the tools come in with the first checkpoint read, the settings when a view reads them.
BEYOND_THE_STORE = (
    "langgraph.graph",
    "langgraph.pregel",
    "langsmith",
    "ai_agent.nodes",
    "ai_agent.tools",
    "ai_agent.config",
    "pydantic_settings",
)


def heavy_modules(names: list[str], stack: tuple[str, ...] = MODEL_STACK) -> list[str]:
    """The modules of the model stack (or of another ``stack``) among ``names``."""
    return sorted(n for n in names if any(n == h or n.startswith(h + ".") for h in stack))


def imported_by(code: str) -> list[str]:
    """The modules a fresh interpreter has loaded after running ``code``."""
    script = f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    return done.stdout.split()


@pytest.mark.parametrize(
    "module",
    ["ai_agent.graph", "ai_agent.graph.archive", "ai_agent.graph.database", "ai_agent.cli"],
)
def test_the_archive_imports_no_model_stack(module: str) -> None:
    loaded = imported_by(f"import {module}")
    assert module in loaded
    assert heavy_modules(loaded) == []
    assert heavy_modules(loaded, BEYOND_THE_STORE) == []


def test_the_model_stack_is_what_the_agent_imports() -> None:
    # The check above is not vacuous: the Agent does import what the archive must not.
    loaded = heavy_modules(imported_by("from ai_agent.graph import Agent"))
    assert {"ai_agent.models", "ai_agent.tokens", "tiktoken", "ai_agent.graph.core"} <= set(loaded)


# The command line is a client of the public API: the package's top level, the graph layer's
# public names (the Agent, the run archive, the worker...), the settings, the errors, the
# state's types, the typed events, how text is shown, logging set-up (observability's own
# public names) and the size limits of reading a plan file (datafiles). Never storage,
# tools, MCP or toolsmaker modules, nor a module inside the graph layer.
CLI_MAY_IMPORT = {
    "ai_agent",
    "ai_agent.config",
    "ai_agent.datafiles",
    "ai_agent.errors",
    "ai_agent.events",
    "ai_agent.graph",
    "ai_agent.observability",
    "ai_agent.state",
    "ai_agent.visible",
}
# Annotations may also name the types of what the public API hands out (``agent.mcp.status()``,
# ``open_toolsmaker(...)``): they are not imported when the command runs.
CLI_MAY_NAME = {"ai_agent.tools.maker", "ai_agent.tools.mcp"}


def _names_from(path: Path, module: str) -> set[str]:
    """The names a file imports from ``module`` (``from module import a, b``)."""
    return {
        alias.name
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.module == module and node.level == 0
        for alias in node.names
    }


@pytest.mark.parametrize("path", sorted((PACKAGE / "cli").glob("*.py")), ids=lambda p: p.name)
def test_the_cli_uses_only_the_public_api(path: Path) -> None:
    def outside(modules: set[str]) -> set[str]:
        return {m for m in modules if m != "ai_agent.cli" and not m.startswith("ai_agent.cli.")}

    runtime = outside(_imported_modules(path))
    assert runtime <= CLI_MAY_IMPORT, sorted(runtime - CLI_MAY_IMPORT)
    named = outside(_imported_modules(path, with_annotations=True))
    assert named <= CLI_MAY_IMPORT | CLI_MAY_NAME, sorted(named - CLI_MAY_IMPORT - CLI_MAY_NAME)
    for module in ("ai_agent", "ai_agent.graph", "ai_agent.observability"):
        public = set(importlib.import_module(module).__all__)
        assert _names_from(path, module) <= public, (module, _names_from(path, module) - public)
