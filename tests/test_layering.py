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


def _package_imports(path: Path, package: str) -> set[str]:
    """The modules of ``ai_agent.<package>`` that ``path`` imports, wherever the import stands.

    Imports inside functions count, and so do those under ``if TYPE_CHECKING:``: a circle of
    them still means neither module can be read, tested or moved without the other. A name
    imported from the package itself (not one of its modules) is an import of its ``__init__``.
    """
    prefix = f"ai_agent.{package}"
    modules = {p.stem for p in (PACKAGE / package).glob("*.py")}
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == prefix:
                found.update(a.name if a.name in modules else "__init__" for a in node.names)
            elif node.module.startswith(prefix + "."):
                found.add(node.module.removeprefix(prefix + ".").split(".")[0])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(prefix + "."):
                    found.add(alias.name.removeprefix(prefix + ".").split(".")[0])
    return found - {path.stem}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of a graph: its strongly connected parts of two or more modules."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        for other in sorted(graph.get(module, ())):
            if other not in order:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], order[other])
        if low[module] == order[module]:
            part = stack[stack.index(module) :]
            del stack[stack.index(module) :]
            if len(part) > 1:
                circles.append(sorted(part))

    for module in sorted(graph):
        if module not in order:
            visit(module)
    return circles


def test_no_import_circles_inside_checkpoints() -> None:
    # The storage engines sit on shared low modules (locations, the run-store protocol, the
    # delta store's core); nothing below imports back up, not even inside a function.
    folder = PACKAGE / "checkpoints"
    graph = {p.stem: _package_imports(p, "checkpoints") for p in folder.glob("*.py")}
    assert _circles(graph) == []


def test_checkpoints_modules_stay_small() -> None:
    # One job per module: the delta store was one 1,410-line file before it was split.
    for path in (PACKAGE / "checkpoints").glob("*.py"):
        lines = len(path.read_text().splitlines())
        assert lines <= 600, f"{path.relative_to(PACKAGE)} has {lines} lines"
