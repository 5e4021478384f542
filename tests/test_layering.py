"""The package's shape: imports only go downwards, and public names are pinned and sorted."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "ai_agent"

# Modules that sit lower or higher than the rest of their package, so they are parts of their
# own: the retries and the breaker (the tools import them, and must not load the chat backend
# with them), and model resolution (the one module of models that may import the fakes and
# the local server, lazily, for ``scripted:PATH`` and the ``local`` backend).
SUB_PARTS = ("models.resilience", "models.resolve")

# What each part may import from inside the package (besides itself). Imports under
# ``if TYPE_CHECKING:`` are annotations only and do not count.
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "issues": {"errors"},
    "_lazy": set(),
    "datafiles": {"errors"},
    "state": {"issues"},
    "visible": set(),
    "config": {"errors", "datafiles"},
    "context": {"state"},
    "observability": {"errors", "state", "context", "config", "visible"},
    "models.resilience": {"errors", "state", "observability"},
    "resilience": {"models.resilience"},  # the old import path of models/resilience.py
    "tokens": {"errors", "config"},
    "compaction": {"errors", "state", "context", "tokens"},
    "accounting": {"issues", "state", "context", "tokens", "compaction"},
    "usage": {"state"},
    "tools": {
        "errors",
        "issues",
        "state",
        "context",
        "config",
        "models.resilience",
        "observability",
    },
    "nodes": {"errors", "issues", "state", "context", "config", "tools", "observability"},
    "models": {"_lazy", "errors", "state", "context", "observability", "models.resilience"},
    "local": {"errors"},
    "testing": {"errors", "state", "models"},
    "models.resolve": {
        *("errors", "config", "context", "observability", "models", "models.resilience"),
        *("testing", "local"),
    },
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
                found.add(_sub_part(parts[1:]))
    return found


def _sub_part(parts: list[str] | tuple[str, ...]) -> str:
    """``models.resilience`` for a module of a sub-part, else the top-level part."""
    dotted = ".".join(parts)
    return next((sub for sub in SUB_PARTS if f"{dotted}.".startswith(f"{sub}.")), parts[0])


def _part(path: Path) -> str:
    rel = path.relative_to(PACKAGE).with_suffix("")
    return _sub_part(rel.parts)


@pytest.mark.parametrize("part", sorted(ALLOWED))
def test_imports_only_go_downwards(part: str) -> None:
    files = [p for p in PACKAGE.rglob("*.py") if _part(p) == part]
    assert files, part
    for path in files:
        extra = _runtime_imports(path) - ALLOWED[part] - {part}
        assert not extra, f"{path.relative_to(PACKAGE)} imports {sorted(extra)}"


def test_only_model_resolution_imports_the_fakes_and_the_local_server() -> None:
    # graph/core.py once chose between them itself; now it asks models/resolve.py.
    for path in PACKAGE.rglob("*.py"):
        if _part(path) not in {"testing", "local", "models.resolve"}:
            imported = _runtime_imports(path)
            assert not imported & {"testing", "local"}, path.relative_to(PACKAGE)


def test_the_retries_load_no_chat_backend() -> None:
    # The tools import the retry helpers; importing them must not load LangChain or a client.
    code = (
        "import sys, ai_agent.tools, ai_agent.models.resilience, ai_agent.resilience\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'langchain_core', 'langchain_openai', 'openai', 'tenacity'}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"


def test_nodes_never_import_graph_or_checkpoints() -> None:
    for path in (PACKAGE / "nodes").rglob("*.py"):
        imported = _runtime_imports(path)
        assert not imported & {"graph", "checkpoints", "cli"}, path.name


# Circles between modules of one package that are still there, each to be removed by the work
# that splits the checkpoint store (then its entry goes too: the test fails while a listed
# circle no longer exists, so the list only shrinks). tools/builtin's is a type-only one.
KNOWN_CIRCLES: set[frozenset[str]] = {
    frozenset({"tools.builtin.protected", "tools.builtin.sandbox"}),
}


def _module(path: Path) -> str:
    """The module's dotted name under the package (a package: its folder's name)."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _folder(module: str, modules: dict[str, Path]) -> str:
    return module if modules[module].name == "__init__.py" else module.rpartition(".")[0]


def _imported_modules(path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules ``path`` imports anywhere, annotations under TYPE_CHECKING too.

    An import moved into a function, or under ``if TYPE_CHECKING:``, still ties the two
    modules together, so it counts here (unlike the layering check above).
    """
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            base = node.module.removeprefix("ai_agent.")
            found.update(
                f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names
            )
        elif isinstance(node, ast.Import):
            found.update(a.name.removeprefix("ai_agent.") for a in node.names)
    return found & modules.keys()


def _circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = {stack.pop()}
            while node not in component:
                component.add(stack.pop())
            if len(component) > 1:
                found.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _package_graph() -> dict[str, set[str]]:
    """Each module's imports of modules in its own folder (its package's ``__init__`` included)."""
    modules = {_module(p): p for p in PACKAGE.rglob("*.py") if p != PACKAGE / "__init__.py"}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        folder = _folder(name, modules)
        graph[name] = {
            m
            for m in _imported_modules(path, modules)
            if m != name and (_folder(m, modules) == folder or m == folder)
        }
    return graph


def test_no_import_circles_inside_a_package() -> None:
    circles = set(_circles(_package_graph()))
    new = [sorted(c) for c in circles - KNOWN_CIRCLES]
    assert not new, (
        f"modules that import each other: {new}; move what they share into a module below both"
    )
    gone = [sorted(c) for c in KNOWN_CIRCLES - circles]
    assert not gone, f"circles no longer there: {gone}; remove them from KNOWN_CIRCLES"


def test_the_circle_finder_sees_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _circles(graph) == [frozenset({"a", "b", "c"})]


@pytest.mark.parametrize(
    "module",
    [
        "ai_agent",
        "ai_agent.config",
        "ai_agent.errors",
        "ai_agent.issues",
        "ai_agent.state",
        "ai_agent.context",
        "ai_agent.tools",
        "ai_agent.checkpoints",
        "ai_agent.graph",
        "ai_agent.testing",
        "ai_agent.models",
        "ai_agent.models.resilience",
        "ai_agent.models.resolve",
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


MAX_MODULE_LINES = 600
# Modules over the limit today, each to be split by its own piece of work; an entry goes when its
# file is split (the test fails while a listed file is under the limit, so the list only shrinks).
OVER_THE_LIMIT = {
    "graph/core.py",  # the runner and facade work
    "graph/inspection.py",  # the run archive
    "observability/scopes.py",  # the runner work (the observability scope's context variable)
    "tools/maker/confine.py",  # the toolsmaker's circles
    "tools/maker/registry.py",  # the toolsmaker's circles
    "tools/maker/validator.py",  # the toolsmaker's circles
    "tools/mcp/connection.py",  # the MCP circles and toolsets
}


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_module_is_over_the_size_limit() -> None:
    over = {
        path.relative_to(PACKAGE).as_posix(): _lines(path)
        for path in PACKAGE.rglob("*.py")
        if _lines(path) > MAX_MODULE_LINES
    }
    assert {name: n for name, n in over.items() if name not in OVER_THE_LIMIT} == {}
    # A listed module that was split leaves the list with it.
    assert sorted(OVER_THE_LIMIT - set(over)) == []
